"""Power: the smallest effect a test detects with 80% power, for the n
suspects, m controls and alpha of the run, so that a verdict without
evidence says what it could have seen.

- **Rank tests on the AUC scale** (the blind baseline, the reference-model
  contrast, dataset inference): the Mann-Whitney normal approximation with
  the null variance for both hypotheses,
  AUC_min = 1/2 + (z_{1-alpha} + z_{power}) sqrt((n + m + 1) / (12 n m)).
  Dataset inference tests only its held-out halves (floor(n/2) against
  floor(m/2)) and combines its splits as twice the median p-value, so its
  figure is this one at those sizes and alpha / 2 (an approximation: its
  statistic is a Welch t on a fitted score, not a rank sum).
- **Conformal flag counts** (every per-sample detector against the
  controls): a suspect is flagged when its score exceeds the k-th largest
  control, k = floor(alpha (m + 1)). Under exchangeability the number of
  flagged suspects X is negative hypergeometric: the suspects drawn before
  the k-th control in a random order of all n + m, whatever the scores
  (``scipy.stats.nhypergeom(n + m, n, k)``); the test rejects at the
  smallest c with P(X >= c) <= alpha. Its power against a flag rate q (each
  suspect flagged independently with chance q) is P(Bin(n, q) >= c) =
  I_q(c, n - c + 1), so q_min = Beta(c, n - c + 1).ppf(power): closed form.
  With k = 0 (m < 1 / alpha - 1) no suspect can be flagged at all.
- **The leakage-rate test** (Fisher's exact, one-sided, suspects' flag
  share against the controls'): its exact power, summing both binomials
  over Fisher's rejection region, with the control rate fixed at its
  observed value (plug-in); q_min by bisection.

A figure above the scale's maximum (AUC or rate 1) is returned as None:
no effect is detectable with that power."""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import beta, binom, fisher_exact, nhypergeom, norm

POWER = 0.8


def detectable_auc(n: int, m: int, alpha: float, power: float = POWER) -> float | None:
    """The smallest AUC a one-sided Mann-Whitney test of n against m samples
    detects with ``power`` (normal approximation); None above 1."""
    if n < 1 or m < 1:
        return None
    auc = 0.5 + (norm.ppf(1 - alpha) + norm.ppf(power)) * math.sqrt((n + m + 1) / (12.0 * n * m))
    return float(auc) if auc <= 1 else None


def dataset_inference_detectable_auc(n: int, m: int, alpha: float, power: float = POWER) -> float | None:
    """``detectable_auc`` of dataset inference's held-out halves at alpha / 2."""
    return detectable_auc(n // 2, m // 2, alpha / 2, power)


def conformal_rank(m: int, alpha: float) -> int:
    """k = floor(alpha (m + 1)): a suspect is flagged at alpha when fewer than
    k controls score at least as high (its conformal p-value <= alpha)."""
    return math.floor(alpha * (m + 1) + 1e-9)


def flag_count_null(n: int, m: int, k: int) -> nhypergeom | None:
    """The null distribution of the flagged suspects among n, flagged above the
    k-th largest of m controls (None when k = 0: none can be flagged)."""
    return nhypergeom(n + m, n, k) if k >= 1 else None


def flag_count_p(flagged: int, n: int, m: int, k: int) -> float | None:
    """P(X >= flagged) under exchangeable suspects and controls (ties counted
    against the suspect, so conservative); None when k = 0."""
    null = flag_count_null(n, m, k)
    return None if null is None else float(null.sf(flagged - 1))


def flag_count_critical(n: int, m: int, k: int, alpha: float) -> int | None:
    """The smallest count c with P(X >= c) <= alpha; None if even n is not."""
    null = flag_count_null(n, m, k)
    if null is None:
        return None
    tails = null.sf(np.arange(n + 1) - 1)  # P(X >= c), c = 0..n
    below = np.flatnonzero(tails <= alpha)
    return int(below[0]) if below.size else None


def detectable_flag_rate(n: int, m: int, alpha: float, power: float = POWER, k: int | None = None) -> float | None:
    """The smallest suspect flag rate the conformal flag-count test detects
    with ``power``; None when no rate can (too few controls or suspects)."""
    k = conformal_rank(m, alpha) if k is None else k
    c = flag_count_critical(n, m, k, alpha)
    if c is None:
        return None
    if c == 0:
        return 0.0
    return float(beta.ppf(power, c, n - c + 1))


def _fisher_rejects(n: int, m: int, alpha: float) -> np.ndarray:
    """R[x, y]: Fisher's one-sided test rejects x of n flagged suspects against y of m flagged controls."""
    return np.array(
        [
            [fisher_exact([[x, n - x], [y, m - y]], alternative="greater").pvalue <= alpha for y in range(m + 1)]
            for x in range(n + 1)
        ]
    )


def fisher_power(
    rate: float, control_rate: float, n: int, m: int, alpha: float, rejects: np.ndarray | None = None
) -> float:
    """The exact power of the one-sided Fisher test at suspect rate ``rate``."""
    rejects = _fisher_rejects(n, m, alpha) if rejects is None else rejects
    px = binom.pmf(np.arange(n + 1), n, rate)
    py = binom.pmf(np.arange(m + 1), m, control_rate)
    return float(px @ rejects @ py)


def detectable_fisher_rate(n: int, m: int, control_rate: float, alpha: float, power: float = POWER) -> float | None:
    """The smallest suspect flag rate Fisher's test detects with ``power``
    against controls flagged at ``control_rate``; None when none can."""
    if n < 1 or m < 1:
        return None
    rejects = _fisher_rejects(n, m, alpha)
    if fisher_power(1.0, control_rate, n, m, alpha, rejects) < power:
        return None
    low, high = control_rate, 1.0
    for _ in range(50):
        mid = (low + high) / 2
        low, high = (mid, high) if fisher_power(mid, control_rate, n, m, alpha, rejects) < power else (low, mid)
    return float(high)


def poisson_binomial_sf(chances: np.ndarray, k: int) -> float:
    """P(X >= k) for X a sum of independent Bernoulli(chances), summed over
    the exact distribution's upper tail (built by convolution, one trial at a
    time): its terms are computed directly, so a tail of 1e-27 is 1e-27, not
    the 0 that 1 - cdf (scipy's ``poisson_binom.sf``) underflows to."""
    if k <= 0:
        return 1.0
    pmf = np.zeros(len(chances) + 1)
    pmf[0] = 1.0
    for i, q in enumerate(np.asarray(chances, dtype=float), start=1):
        pmf[1 : i + 1] = pmf[1 : i + 1] * (1 - q) + pmf[:i] * q
        pmf[0] *= 1 - q
    return float(min(1.0, pmf[k:].sum()))
