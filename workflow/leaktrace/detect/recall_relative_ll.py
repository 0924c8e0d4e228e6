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
of must be held out of the evaluation (``select_prefix_samples``). Every
sequence fits the model's trained context: the target is cut only as the
unconditioned pass cuts it, and the prefix keeps what fits beside it (fewer
shots, the first kept one cut from its front), recorded per text; a text
that fills the context alone gets no prefix and no ReCaLL score. When the
text was truncated, both LLs are taken over the tokens the prefixed pass
scored."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from leaktrace.detect.evidence import SampleEvidence
from leaktrace.seeding import rng_for

SEPARATOR = "\n\n\n"  # two blank lines, as between top-level definitions


def recall_score(evidence: SampleEvidence) -> float:
    prefixed, original = evidence.prefixed, evidence.original
    if prefixed is None:
        raise ValueError(f"{evidence.sample_id}: the recall method needs the text scored after the non-member prefix")
    if prefixed.prefix_tokens == 0:
        raise ValueError(f"{evidence.sample_id}: no prefix token fit beside the text, the ReCaLL ratio is undefined")
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


def prefix_shots(texts: Sequence[str]) -> list[str]:
    """The prefix's shots in order, each followed by two blank lines so the
    next shot, and the target after the last, starts a new top-level block.
    The scoring pass keeps, per target, the shots nearest it that fit the
    context, as the ReCaLL code drops texts from the front."""
    return [t.rstrip("\n") + SEPARATOR for t in texts]
