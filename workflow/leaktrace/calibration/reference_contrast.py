"""The reference-model contrast: a test that survives a shift the target
and a reference share.

Per sample d = s_target - s_reference, the same detector's score under the
audited model and under a reference the user declares unexposed to both
suspects and controls (an earlier checkpoint, a model whose cutoff precedes
the benchmark). What a sample's difficulty, length or style does to both
models' scores cancels in d; a one-sided permutation test asks whether the
suspects' mean d exceeds the controls' (scipy's ``permutation_test``,
independent samples: exact over every relabelling when there are at most
``resamples`` of them, else ``resamples`` seeded random ones with
p = (1 + #>=) / (R + 1)). Its assumption, written in its row: the shift
between suspects and controls moves both models' scores alike. If the
target reacts to the shift more than the reference does (a larger model
more sensitive to topic, say), d differs without exposure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import comb

import numpy as np
from scipy.stats import permutation_test

RESAMPLES = 9999
ASSUMPTION = (
    "assumes the reference saw neither suspects nor controls and that any shift between them moves the "
    "target's and the reference's scores alike"
)


@dataclass(frozen=True)
class Contrast:
    n_suspect: int
    n_control: int
    mean_difference: float  # mean d of the suspects minus mean d of the controls
    p_value: float  # one-sided: the suspects' d is larger
    exact: bool


def _mean_gap(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(a, axis=axis) - np.mean(b, axis=axis)


def contrasts(target: dict[str, float], reference: dict[str, float], sample_ids: Sequence[str]) -> np.ndarray:
    """d = target - reference for each of ``sample_ids`` (each must be in both)."""
    missing = [s for s in sample_ids if s not in target or s not in reference]
    if missing:
        raise ValueError(f"{len(missing)} samples lack a score under the target or the reference, e.g. {missing[:3]}")
    return np.array([target[s] - reference[s] for s in sample_ids], dtype=float)


def reference_contrast(
    suspect_d: Sequence[float], control_d: Sequence[float], *, seed: int, resamples: int = RESAMPLES
) -> Contrast:
    """The one-sided permutation test of mean d, suspects against controls."""
    a, b = np.asarray(suspect_d, dtype=float), np.asarray(control_d, dtype=float)
    if a.size < 1 or b.size < 1:
        raise ValueError(f"the contrast needs suspects and controls, got {a.size} and {b.size}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("a contrast d = s_target - s_reference is not finite")
    result = permutation_test(
        (a, b),
        _mean_gap,
        permutation_type="independent",
        alternative="greater",
        vectorized=True,
        n_resamples=resamples,
        random_state=np.random.default_rng(seed),
    )
    return Contrast(
        n_suspect=int(a.size),
        n_control=int(b.size),
        mean_difference=float(_mean_gap(a, b)),
        p_value=float(result.pvalue),
        exact=comb(a.size + b.size, a.size) <= resamples,
    )
