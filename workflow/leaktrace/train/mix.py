"""The mixed continued-pretraining corpus of the SrDetection testbed: member
samples mixed with general text at a code:text ratio counted in tokens
(1:5 by default, as in the paper), so code is a minority of what the model sees.

Members enter the mix one sample per training sequence (``shuffled``, the
default), or packed in the benchmark's order into sequences of consecutive
members (``canonical``): the benchmark inserted as one contiguous document,
the contamination Oren et al.'s exchangeability test must detect.

``member_copies`` k > 1 inserts every member item k times into the same mix:
the general text is drawn for one copy's tokens, so the text is fixed and
only the dose of the members grows (the exposure-dose experiment, one pass
over a mix holding each member k times; config/experiments/exposure-dose.yaml)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from leaktrace.contamination.exchangeability import SEPARATOR

MEMBER_ORDERS = ("shuffled", "canonical")


@dataclass(frozen=True)
class MixItem:
    kind: str  # "member" or "text"
    source_id: str
    text: str
    n_tokens: int


def greedy_groups(sizes: Sequence[int], budget: int) -> list[list[int]]:
    """Consecutive indices grouped greedily into groups of at most ``budget``
    (a single larger piece is a group of its own)."""
    groups, current, used = [], [], 0
    for i, n in enumerate(sizes):
        if current and used + n > budget:
            groups.append(current)
            current, used = [], 0
        current.append(i)
        used += n
    if current:
        groups.append(current)
    return groups


def paragraph_chunks(text: str, count_tokens: Callable[[str], int], max_tokens: int) -> list[str]:
    """Split a document on blank lines and greedily regroup the paragraphs into
    chunks of at most ``max_tokens`` (a single longer paragraph stays whole and
    is truncated at training time)."""
    paras = [p for p in text.split("\n\n") if p.strip()]
    return ["\n\n".join(paras[i] for i in g) for g in greedy_groups([count_tokens(p) for p in paras], max_tokens)]


def canonical_chunks(
    members: Sequence[tuple[str, str]], count_tokens: Callable[[str], int], max_tokens: int
) -> list[MixItem]:
    """The members in their given (the benchmark's) order, joined as the
    exchangeability test joins examples, into chunks of at most ``max_tokens``
    (separators counted); a chunk's source_id lists its members' ids."""
    sizes = [count_tokens(code + SEPARATOR) for _, code in members]
    chunks = []
    for group in greedy_groups(sizes, max_tokens):
        text = SEPARATOR.join(members[i][1] for i in group)
        chunks.append(MixItem("member", " ".join(members[i][0] for i in group), text, count_tokens(text)))
    return chunks


def build_mix(
    members: Sequence[tuple[str, str]],
    text_docs: Sequence[tuple[str, str]],
    *,
    text_per_code: float,
    count_tokens: Callable[[str], int],
    chunk_tokens: int,
    rng: random.Random,
    member_order: str = "shuffled",
    member_chunk_tokens: int | None = None,
    member_copies: int = 1,
) -> list[MixItem]:
    """Members as whole samples (``canonical``: packed in their given order
    into chunks of ``member_chunk_tokens``, default ``chunk_tokens``); general-text chunks drawn without replacement
    (reshuffled and reused only if the text runs out) until the text tokens
    reach ``text_per_code`` times the code tokens of one copy; then every member
    item ``member_copies`` times. Returned in shuffled order."""
    if not members:
        raise ValueError("the training mix needs at least one member sample")
    if member_order not in MEMBER_ORDERS:
        raise ValueError(f"member_order must be one of {MEMBER_ORDERS}, got {member_order!r}")
    if not isinstance(member_copies, int) or member_copies < 1:
        raise ValueError(f"member_copies must be a whole number >= 1, got {member_copies!r}")
    if member_order == "canonical":
        items = canonical_chunks(members, count_tokens, member_chunk_tokens or chunk_tokens)
    else:
        items = [MixItem("member", sid, text, count_tokens(text)) for sid, text in members]
    code_tokens = sum(i.n_tokens for i in items)
    pool = [
        MixItem("text", f"{doc_id}#{k}", chunk, count_tokens(chunk))
        for doc_id, text in text_docs
        for k, chunk in enumerate(paragraph_chunks(text, count_tokens, chunk_tokens))
    ]
    if text_per_code > 0 and not pool:
        raise ValueError("the training mix asks for general text but the text corpus is empty")
    goal, drawn = text_per_code * code_tokens, 0
    while drawn < goal:
        order = rng.sample(pool, len(pool))
        for chunk in order:
            if drawn >= goal:
                break
            items.append(chunk)
            drawn += chunk.n_tokens
    n_member = sum(i.kind == "member" for i in items)
    items = items[:n_member] * member_copies + items[n_member:]  # k = 1: the list unchanged (and its shuffle)
    rng.shuffle(items)
    return items
