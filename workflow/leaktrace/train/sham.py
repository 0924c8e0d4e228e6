"""The sham control's training mix: the target's mix with every member
sequence replaced by a function of non-benchmark code of about its length.

A target differs from the base model by having seen the benchmark and by
having been fine-tuned at all. A sham trained exactly as the target (same
LoRA settings, epochs and seed) on this mix differs from the target only in
what its code sequences are: the same general-text chunks in the same
places, as many code sequences of nearly the same token counts, so the same
number of optimizer steps over nearly the same number of tokens. A test that
compares a model with the base model and rejects on the sham measures
fine-tuning, not exposure.

Stand-ins are HumanEval-like functions (``humaneval_like``: a public
module-level function with a docstring, header, docstring and body in at
most ``MAX_LINES`` lines), drawn from a code corpus in a seeded order; each
member takes the unused candidate nearest its token count. The corpus should
be code the base model was not pretrained on (config/experiments/sham.yaml:
the networkx package), or the sham would be fine-tuned on text it knows."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence

from leaktrace.data.functions import FunctionAnatomy, all_function_anatomies
from leaktrace.train.mix import MixItem

CODE = "code"  # the kind of a stand-in in the sham mix (the target's members are "member")
CANDIDATES_PER_MEMBER = 20  # the pool each member's stand-in is chosen from, so lengths can match
MAX_LINES = 60  # HumanEval's longest sample (prompt and solution) has 57 lines


def humaneval_like(anatomy: FunctionAnatomy) -> bool:
    """A function shaped as a HumanEval sample: public, at module level (not
    a method, not nested), with a docstring, at most ``MAX_LINES`` lines."""
    return (
        bool(anatomy.docstring)
        and not anatomy.is_method
        and not anatomy.name.startswith("_")
        and not anatomy.signature[:1].isspace()
        and len(anatomy.function.splitlines()) <= MAX_LINES
    )


def candidate_functions(documents: Iterable[tuple[str, str]]) -> Iterable[tuple[str, str]]:
    """(``doc_id::name@line``, source) of every HumanEval-like function,
    documents that do not parse skipped."""
    for doc_id, text in documents:
        try:
            anatomies = all_function_anatomies(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        for a in anatomies:
            if humaneval_like(a):
                yield f"{doc_id}::{a.name}@{a.start_line}", a.function


def candidate_pool(documents: Sequence[tuple[str, str]], n: int, rng: random.Random) -> list[tuple[str, str]]:
    """At least ``n`` candidates (all there are, if fewer), from the
    documents in a seeded order, the pool shuffled: the order breaks ties
    between candidates of one length."""
    order = sorted(documents)
    rng.shuffle(order)
    pool = []
    for candidate in candidate_functions(order):
        pool.append(candidate)
        if len(pool) >= n:
            break
    rng.shuffle(pool)
    return pool


def length_matched(lengths: Sequence[int], candidates: Sequence[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """For each length in turn, the unused candidate (id, text, tokens) of the
    nearest token count, the earliest on ties."""
    if len(candidates) < len(lengths):
        raise ValueError(f"{len(candidates)} stand-in candidates for {len(lengths)} member sequences")
    unused = list(candidates)
    chosen = []
    for n in lengths:
        best = min(range(len(unused)), key=lambda i: abs(unused[i][2] - n))
        chosen.append(unused.pop(best))
    return chosen


def sham_mix(
    mix: Sequence[MixItem], documents: Sequence[tuple[str, str]], count_tokens: Callable[[str], int], rng: random.Random
) -> list[MixItem]:
    """``mix`` with each member item replaced, in place, by a stand-in of the
    code ``documents``; every other item kept as it is."""
    members = [i for i in mix if i.kind == "member"]
    pool = candidate_pool(documents, CANDIDATES_PER_MEMBER * len(members), rng)
    scored = [(sid, text, count_tokens(text)) for sid, text in pool]
    stand_ins = iter(length_matched([m.n_tokens for m in members], scored))
    return [MixItem(CODE, *next(stand_ins)) if i.kind == "member" else i for i in mix]
