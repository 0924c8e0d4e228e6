"""Training-conditional (PAC) conformal flags: a false-positive rate at most
alpha with probability at least 1 - delta over the draw of the controls.

A conformal flag at alpha is valid on average over the control set: with m
controls a sample is flagged when fewer than k = floor(alpha (m + 1))
controls score at least as high, i.e. above the k-th largest control score.
Given the controls, a non-member exchangeable with them (continuous scores)
is flagged with probability FPR = 1 - F(k-th largest), and over the draw
of the controls FPR ~ Beta(k, m + 1 - k) (Vovk 2012, "Conditional validity
of inductive conformal predictors"; Bates et al. 2023, "Testing for
outliers with conformal p-values", Ann. Statist.), whose mean k / (m + 1)
is at most alpha but whose upper tail is not small: with 19 controls at
alpha = 0.05 (k = 1), P(FPR > 0.10) = 0.9^19 = 0.135. Since
P(Beta(k, m + 1 - k) > alpha) = P(Bin(m, alpha) <= k - 1), the (alpha,
delta) guarantee flags above the k_pac-th largest control with k_pac the
largest k whose binomial tail is at most delta; k_pac = 0 (fewer than
log(delta) / log(1 - alpha) controls) flags nothing."""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom

from leaktrace.calibration.power import conformal_rank


def fpr_exceed_probability(k: int, m: int, alpha: float) -> float:
    """P(FPR > alpha) over the control draw for the rule "above the k-th
    largest of m controls": P(Beta(k, m + 1 - k) > alpha) = P(Bin(m, alpha) <= k - 1)."""
    if not 1 <= k <= m:
        raise ValueError(f"the rank k must be in 1..m, got k={k}, m={m}")
    return float(binom.cdf(k - 1, m, alpha))


def pac_rank(m: int, alpha: float, delta: float) -> int:
    """The largest k in 1..floor(alpha (m + 1)) with P(FPR > alpha) <= delta; 0 if none."""
    for k in range(conformal_rank(m, alpha), 0, -1):
        if fpr_exceed_probability(k, m, alpha) <= delta:
            return k
    return 0


def min_controls(alpha: float, delta: float) -> int:
    """The fewest controls for which the PAC rule can flag anything (k_pac = 1):
    (1 - alpha)^m <= delta."""
    return math.ceil(math.log(delta) / math.log(1 - alpha) - 1e-9)


def flags_at_rank(control: np.ndarray, test: np.ndarray, k: int) -> np.ndarray:
    """Flag each tested score above the k-th largest control: fewer than k
    controls score at least as high (ties count against the tested sample).
    k = 0 flags nothing."""
    control, test = np.asarray(control, dtype=float), np.asarray(test, dtype=float)
    if k == 0:
        return np.zeros(test.shape, dtype=bool)
    return (control[:, None] >= test[None, :]).sum(axis=0) < k
