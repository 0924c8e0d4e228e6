"""ReCaLL, relative conditional log-likelihood (Xie et al., EMNLP 2024,
"ReCaLL: Membership Inference via Relative Conditional Log-Likelihoods";
CodeSnitch Sec. 2.2 and 4.2.5): the log-likelihood of a text conditioned on a
prefix P of k non-member texts (k = 12 in CodeSnitch), relative to its
unconditioned log-likelihood,

    score = LL(x | P) / LL(x),   LL = mean token log-probability of x's tokens.

Orientation. Both LLs are negative. The paper's finding is that a
non-member prefix lowers the log-likelihood of a member more than that of a
non-member (it disrupts the memorised continuation, while a non-member, from
the prefix's distribution, gains from it). A lower LL(x | P) makes the
ratio of two negatives larger, so a higher ratio = member, and the score is
used as is (the ReCaLL authors' code also feeds LL(x|P)/LL(x) to the ROC with
members as positives). CodeSnitch writes the difference LL(x) - LL(x | P)
instead; it has the same orientation.

The prefix tokens are never scored and no second BOS separates prefix and
text (``LanguageModel.score_conditioned``), and the texts the prefix is made
of must be held out of the evaluation (``select_prefix_samples``). When the
prefixed text had to be truncated to fit the context, both LLs are taken
over the tokens the prefixed pass scored."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from leaktrace.detect.evidence import SampleEvidence
from leaktrace.seeding import rng_for

SEPARATOR = "\n\n\n"  # two blank lines, as between top-level definitions


def recall_score(evidence: SampleEvidence) -> float:
    prefixed, original = evidence.prefixed, evidence.original
    if prefixed is None:
        raise ValueError(f"{evidence.sample_id}: the recall method needs the text scored after the non-member prefix")
    n = prefixed.n_tokens
    if n == 0:
        raise ValueError(f"{evidence.sample_id}: cannot score an empty text")
    if n > original.n_tokens or not np.array_equal(prefixed.token_ids, original.token_ids[:n]):
        raise ValueError(f"{evidence.sample_id}: the prefixed pass scored other tokens than the unconditioned pass")
    conditioned = float(np.mean(prefixed.logprobs, dtype=np.float64))
    unconditioned = float(np.mean(original.logprobs[:n], dtype=np.float64))
    if unconditioned == 0.0:
        raise ValueError(f"{evidence.sample_id}: log-likelihood 0, the ReCaLL ratio is undefined")
    return conditioned / unconditioned


def select_prefix_samples(candidates: Sequence[str], k: int, seed: int) -> list[str]:
    """``k`` sample ids drawn without replacement from ``candidates`` (the
    held-out non-members), the same for the same candidates and seed whatever
    their order. The caller must exclude them from evaluation."""
    pool = sorted(set(candidates))
    if k < 1:
        raise ValueError(f"ReCaLL needs at least one prefix text, got k={k}")
    if len(pool) < k:
        raise ValueError(f"ReCaLL needs {k} held-out non-members for its prefix, only {len(pool)} are available")
    return rng_for(seed, "recall", "prefix").sample(pool, k)


def build_prefix(texts: Sequence[str], *, encode: Callable[[str], list[int]] | None = None, max_tokens: int | None = None) -> str:
    """The prefix: the texts in order, each followed by two blank lines so the
    target starts a new top-level block. With ``max_tokens`` (and ``encode``),
    texts are dropped from the front until the prefix fits, as the ReCaLL
    code does to leave room for the target."""
    parts = [t.rstrip("\n") + SEPARATOR for t in texts]
    if max_tokens is not None:
        if encode is None:
            raise ValueError("a token budget for the prefix needs the model's encode")
        while parts and len(encode("".join(parts))) > max_tokens:
            parts = parts[1:]
        if not parts:
            raise ValueError(f"not even one prefix text fits in {max_tokens} tokens")
    return "".join(parts)
