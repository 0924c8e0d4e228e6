"""The rules that decide whether a calibration-table row ``holds``, each a
test of "this decision is calibrated" whose false-alarm rate under exact
exchangeability is at most ``LEVEL``. A row's figures come from draws that
are not always independent (non-members sharing one control set,
re-partitions of one pool, models scoring one order), so each kind of row
gets the null distribution of its own figure:

- ``independent_draws``: rejections among n draws independent given the
  data (re-randomised memberships, re-drawn publications). Null: each draw
  rejects with probability at most alpha, so the count is at most
  Binomial(n, alpha); p = P(Binomial(n, alpha) >= rejections). This is the
  Clopper-Pearson rule of before: holds iff the 95% interval reaches down
  to alpha.
- ``shared_controls``: the conformal decisions of n tested non-members
  against one control set of m (the calibration fold). The n flags share
  the controls, so they are not independent: given the controls, the
  false-positive rate is the mass above the k-th largest control score,
  k = ``flag_rank(alpha, m)`` = floor(alpha (m + 1)), which under
  exchangeability (no ties) is Beta(k, m + 1 - k) (Vovk 2012, "Conditional
  validity of inductive conformal predictors"); the count among the n
  tested is then BetaBinomial(n, k, m + 1 - k), exactly, whatever the score
  distribution; p = P(BetaBinomial >= count). Ties counted against x only
  lower the count. With k = 0 no p-value reaches alpha and any flag fails.
- ``repartition_mean``: the mean false-positive rate over R independent
  random re-partitions of one pool of non-members. Null: its expectation is
  at most ``expected`` (for a fixed score per non-member the exact figure
  ``repartition_expected_rate``; otherwise the promised alpha). The mean's
  Monte Carlo error is its standard error s / sqrt(R);
  p = P(T_{R-1} >= (mean - expected) / (s / sqrt(R))), a one-sided t test.
- ``pooled_models``: one p-value per model scoring the same data (the
  benchmark's real order under K unexposed models): dependent in any way,
  so Bonferroni, p = min(1, K min_m p_m), valid under any dependence. A
  single model's row (n = 1) is ``unjudgeable``: a rate from one draw
  cannot be told from alpha.

A KS test of pooled conformal p-values is no such rule: p-values that share
a control set or a pool are dependent, and under exact exchangeability a KS
test of them rejects far more often than its level; the conformal rows
leave ``ks_d`` and ``ks_p`` empty.

Every rule takes arrays (broadcast), so ``tests/test_validity_rules.py``
can simulate thousands of exchangeable data sets at once; ``judge`` makes a
row's columns of one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import betabinom, binom, hypergeom
from scipy.stats import t as student_t

LEVEL = 0.025  # every rule's false-alarm rate: one-sided, the upper tail of a two-sided 95% interval

INDEPENDENT = "binomial"
SHARED_CONTROLS = "beta-binomial"
REPARTITION_MEAN = "mean vs expectation"
POOLED_MODELS = "Bonferroni over models"
UNJUDGEABLE = "unjudgeable"


@dataclass(frozen=True)
class Judgement:
    """A row's verdict: ``rule`` (one of the names above), ``expected_rate``
    (the rate a calibrated decision does not exceed, on average), ``p_value``
    (how probable a figure this high is for a calibrated decision; None where
    the row cannot be judged). ``holds`` iff p >= ``LEVEL``."""

    rule: str
    expected_rate: float | None
    p_value: float | None

    @property
    def holds(self) -> bool | None:
        return None if self.p_value is None else bool(self.p_value >= LEVEL)

    def columns(self) -> dict:
        return {"holds": self.holds, "rule": self.rule, "expected_rate": self.expected_rate, "holds_p": self.p_value}


def flag_rank(alpha: float, n_controls: int) -> int:
    """k: a conformal p-value (1 + j) / (m + 1) is at most alpha iff j < k,
    i.e. k = floor(alpha (m + 1)), counted with the p-value's own division
    so that floating point agrees with the decision (0.05 * 20 is 1)."""
    if n_controls < 1:
        raise ValueError(f"a conformal decision needs at least one control, got {n_controls}")
    return int(np.sum(np.arange(1, n_controls + 2) / (n_controls + 1.0) <= alpha))


def conformal_expected_rate(alpha: float, n_controls: int) -> float:
    """k / (m + 1): the exact expected false-positive rate of a conformal
    decision at alpha with m controls (no ties), at most alpha."""
    return flag_rank(alpha, n_controls) / (n_controls + 1.0)


def repartition_expected_rate(scores: np.ndarray, n_controls: int, alpha: float) -> float:
    """The exact expectation, over uniformly random partitions of the pool
    ``scores`` into m controls and the rest tested, of the share of tested
    flagged at alpha (ties counted against the tested sample). A tested x is
    flagged iff fewer than k controls score >= s(x); its m controls are a
    uniform draw from the other N - 1, G_x of which score >= s(x), so
    P(flag | x tested) = P(Hypergeometric(N - 1, G_x, m) <= k - 1), and the
    expectation is their mean over x. k / (m + 1) without ties, below with."""
    scores = np.asarray(scores, dtype=float)
    if not 0 < n_controls < scores.size:
        raise ValueError(f"{n_controls} controls out of {scores.size} scores leave no part to test")
    k = flag_rank(alpha, n_controls)
    if k == 0:
        return 0.0
    at_or_above = (
        scores.size - np.searchsorted(np.sort(scores), scores, side="left") - 1
    )  # G_x: the others scoring >= s(x)
    return float(np.mean(hypergeom.cdf(k - 1, scores.size - 1, at_or_above, n_controls)))


def independent_draws_p(rejections, n, alpha):
    """P(Binomial(n, alpha) >= rejections)."""
    return binom.sf(np.asarray(rejections) - 1, n, alpha)


def shared_controls_p(flagged, n_tested: int, n_controls: int, alpha: float):
    """P(BetaBinomial(n, k, m + 1 - k) >= flagged), k = ``flag_rank``; with
    k = 0 a calibrated decision never flags: 1 for no flag, else 0."""
    flagged = np.asarray(flagged)
    k = flag_rank(alpha, n_controls)
    if k == 0:
        return np.where(flagged > 0, 0.0, 1.0)
    return betabinom.sf(flagged - 1, n_tested, k, n_controls + 1 - k)


def repartition_mean_p(rates, expected):
    """One-sided t test of the mean of ``rates`` (last axis: the R
    re-partitions) against ``expected``. Zero spread: 1 if the mean is at
    most ``expected``, else 0."""
    rates = np.asarray(rates, dtype=float)
    r = rates.shape[-1]
    if r < 2:
        raise ValueError(f"a mean's Monte Carlo error needs two re-partitions, got {r}")
    excess = rates.mean(axis=-1) - np.asarray(expected, dtype=float)
    se = rates.std(axis=-1, ddof=1) / np.sqrt(r)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = student_t.sf(excess / se, r - 1)
    return np.where(se > 0, p, np.where(excess <= 1e-12, 1.0, 0.0))


def pooled_models_p(p_values):
    """Bonferroni over the last axis (the K models): min(1, K min p)."""
    p_values = np.asarray(p_values, dtype=float)
    return np.minimum(1.0, p_values.shape[-1] * p_values.min(axis=-1))


def independent_draws(rejections: int, n: int, alpha: float) -> Judgement:
    return Judgement(INDEPENDENT, float(alpha), float(independent_draws_p(rejections, n, alpha)))


def shared_controls(flagged: int, n_tested: int, n_controls: int, alpha: float) -> Judgement:
    return Judgement(
        SHARED_CONTROLS,
        conformal_expected_rate(alpha, n_controls),
        float(shared_controls_p(flagged, n_tested, n_controls, alpha)),
    )


def repartition_mean(rates, expected: float) -> Judgement:
    rates = np.asarray(rates, dtype=float)
    if rates.size < 2:
        return Judgement(UNJUDGEABLE, float(expected), None)
    return Judgement(REPARTITION_MEAN, float(expected), float(repartition_mean_p(rates, expected)))


def pooled_models(p_values, alpha: float) -> Judgement:
    """The models' p-values on one shared data set; ``alpha`` is the row's
    level (its expected rate), the judgement itself is alpha-free."""
    if len(p_values) == 0:
        raise ValueError("no model's p-value to pool")
    return Judgement(POOLED_MODELS, float(alpha), float(pooled_models_p(p_values)))


def unjudgeable(alpha: float) -> Judgement:
    return Judgement(UNJUDGEABLE, float(alpha), None)
