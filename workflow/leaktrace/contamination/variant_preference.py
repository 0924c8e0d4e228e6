"""Audit mode, where no known non-members exist: each sample's validated
variants (semantics-preserving renamings) serve as its own controls.

A model trained on a sample prefers its original form over the variants
more than a model that was not: per sample, the target's preference
(a detector that compares the original with its variants, e.g. ``neighbor``,
LL(original) − mean LL(variants)) minus the reference model's on the same
texts. Renaming bias that both models share cancels in the difference. The
one-sided paired permutation test (scipy's ``permutation_test``, swapping
target and reference within pairs) asks whether the mean difference is
above what random swaps give; exchangeable pairs make it exact."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import permutation_test

MIN_SAMPLES = 2


@dataclass(frozen=True)
class Result:
    p_value: float
    n_samples: int
    mean_difference: float  # target minus reference preference


def _mean_difference(target: np.ndarray, reference: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(target - reference, axis=axis)


def preference_test(
    target: Mapping[str, float],
    reference: Mapping[str, float],
    sample_ids: Sequence[str],
    *,
    n_resamples: int,
    seed: int,
) -> Result:
    """``target``, ``reference``: sample_id -> preference score; the test uses
    ``sample_ids`` (each must be in both)."""
    missing = [sid for sid in sample_ids if sid not in target or sid not in reference]
    if missing:
        raise ValueError(
            f"{len(missing)} samples lack a preference score under the target or the reference, e.g. {missing[:3]}"
        )
    if len(sample_ids) < MIN_SAMPLES:
        raise ValueError(f"the variant-preference test needs at least {MIN_SAMPLES} samples, got {len(sample_ids)}")
    t = np.array([target[sid] for sid in sample_ids], dtype=float)
    r = np.array([reference[sid] for sid in sample_ids], dtype=float)
    result = permutation_test(
        (t, r),
        _mean_difference,
        permutation_type="samples",
        alternative="greater",
        n_resamples=n_resamples,
        vectorized=True,
        random_state=np.random.default_rng(seed),
    )
    return Result(float(result.pvalue), len(sample_ids), float(np.mean(t - r)))
