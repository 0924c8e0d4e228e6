"""What a gray-box detector may look at for one sample under one model: the
token statistics of the original text, of its lowercased form, and of its
validated variants — all from the same cached forward passes — and, for the
detectors that need one more pass, the original under a reference model (Ref,
and Ref's oracle: the target's own base model) and the original conditioned
on a non-member prefix (ReCaLL)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from leaktrace.models.backend import TokenStats


@dataclass(frozen=True)
class SampleEvidence:
    sample_id: str
    text: str
    original: TokenStats
    lowercase: TokenStats | None = None
    variants: tuple[TokenStats, ...] = field(default_factory=tuple)  # validated variants, by variant_id
    # another generator's validated variants (e.g. "ast+tt"), by variant_id: SrDetection's per-generator instances
    alternatives: Mapping[str, tuple[TokenStats, ...]] = field(default_factory=dict)
    reference: TokenStats | None = None  # the original under the reference model (Ref)
    oracle_reference: TokenStats | None = None  # the original under the target's own base model (Ref's oracle)
    prefixed: TokenStats | None = None  # the original conditioned on the non-member prefix (ReCaLL)


def log_likelihood(stats: TokenStats) -> float:
    """LL = mean_t log p(x_t | x_<t); the loss is -LL and PPL = exp(-LL)."""
    if stats.n_tokens == 0:
        raise ValueError("cannot score an empty text")
    return float(np.mean(stats.logprobs, dtype=np.float64))


def lowest_k_mean(values: np.ndarray, ratio: float) -> float:
    """Mean of the lowest floor(ratio * n) values, at least one (Min-K% guard)."""
    if not 0 < ratio <= 1:
        raise ValueError(f"K must be in (0, 1], got {ratio}")
    k = max(1, int(ratio * len(values)))
    return float(np.mean(np.sort(values.astype(np.float64))[:k]))
