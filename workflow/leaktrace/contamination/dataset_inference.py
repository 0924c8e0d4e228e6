"""Dataset inference (Maini, Jia, Papernot, Dziedzic, "LLM Dataset Inference:
Did you train on my dataset?", NeurIPS 2024).

Each sample is a vector of membership-detector scores. The suspect set and
a validation set of known non-members from the same distribution are each
cut at random into halves A and B; a linear model learns on the A halves to
tell suspect from validation samples; on the B halves, which it never saw, a
one-sided Welch t-test asks whether its outputs for suspect samples are
higher. Under the null (the suspect samples were not trained on, so both
sets are exchangeable) the model has learnt nothing that transfers and the
test is exact up to the t approximation; fitting and testing on disjoint
halves is what keeps it so. The split is repeated with derived seeds and the
p-values combined by ``combine.twice_median``.

The linear model is scikit-learn's L2-regularised logistic regression on
standardised features (the paper fits a linear model too; regularisation
keeps it stable with more features than a small half has samples to spare).
Its decision function is the statistic the t-test compares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import ttest_ind
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from leaktrace.contamination.combine import twice_median

MIN_PER_SET = 4  # two samples per set in each half: the fit and Welch's variance need them


@dataclass(frozen=True)
class Result:
    p_value: float  # the splits combined
    split_p_values: tuple[float, ...]


def _halves(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    order = rng.permutation(n)
    return order[: n // 2], order[n // 2 :]


def split_p_value(suspect: np.ndarray, validation: np.ndarray, rng: np.random.Generator) -> float:
    """One A/B split: fit on A, Welch's one-sided t-test on B (1.0 where the
    outputs on B do not vary, e.g. with no features)."""
    a_s, b_s = _halves(len(suspect), rng)
    a_v, b_v = _halves(len(validation), rng)
    if suspect.shape[1] == 0:
        return 1.0
    model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
    model.fit(np.vstack([suspect[a_s], validation[a_v]]), np.r_[np.ones(len(a_s)), np.zeros(len(a_v))])
    out = model.decision_function(np.vstack([suspect[b_s], validation[b_v]]))
    out_s, out_v = out[: len(b_s)], out[len(b_s) :]
    p = ttest_ind(out_s, out_v, equal_var=False, alternative="greater").pvalue
    return 1.0 if np.isnan(p) else float(p)


def dataset_inference(suspect: np.ndarray, validation: np.ndarray, *, n_splits: int, seed: int) -> Result:
    """``suspect`` and ``validation``: samples × features (the same columns)."""
    if suspect.shape[1] != validation.shape[1]:
        raise ValueError(f"suspect has {suspect.shape[1]} features, validation {validation.shape[1]}")
    if min(len(suspect), len(validation)) < MIN_PER_SET:
        raise ValueError(
            f"dataset inference needs at least {MIN_PER_SET} suspect and {MIN_PER_SET} validation samples, "
            f"got {len(suspect)} and {len(validation)}"
        )
    if n_splits < 1:
        raise ValueError(f"n_splits must be positive, got {n_splits}")
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n_splits)]
    with threadpool_limits(limits=1):  # matrices this small lose time to BLAS threads, badly on a shared machine
        p_values = tuple(split_p_value(suspect, validation, rng) for rng in rngs)
    return Result(twice_median(p_values), p_values)


def p_value_curve(
    suspect: np.ndarray, validation: np.ndarray, sizes: Sequence[int], *, n_draws: int, n_splits: int, seed: int
) -> list[tuple[int, float]]:
    """(n, p): the median combined p-value over ``n_draws`` random subsets of
    n suspect and n validation samples (fewer validation samples where the
    set has fewer), for every size in ``sizes`` the sets allow and the full
    suspect set last. How many samples the test needs to reach a level."""
    full = len(suspect)
    grid = sorted({n for n in sizes if MIN_PER_SET <= n < full} | {full})
    seeds = np.random.SeedSequence(seed).spawn(len(grid))
    curve = []
    for n, seq in zip(grid, seeds, strict=True):
        rng = np.random.default_rng(seq)
        draws = 1 if n == full else n_draws
        ps = []
        for _ in range(draws):
            s = suspect[rng.choice(full, n, replace=False)] if n < full else suspect
            v = validation[rng.choice(len(validation), min(n, len(validation)), replace=False)]
            ps.append(dataset_inference(s, v, n_splits=n_splits, seed=int(rng.integers(2**63))).p_value)
        curve.append((n, float(np.median(ps))))
    return curve


def smallest_n(curve: Sequence[tuple[int, float]], alpha: float) -> int | None:
    """The smallest n whose p-value is below ``alpha`` and stays below it at
    every larger n of the curve (None if the full set does not reach it)."""
    best = None
    for n, p in sorted(curve, reverse=True):
        if p >= alpha:
            break
        best = n
    return best
