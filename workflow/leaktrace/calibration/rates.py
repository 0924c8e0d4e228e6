"""Calibration of a test: over seeds, each drawing a fresh configuration,
the share of p-values below alpha. Under a null the testbed knows to be true
that share is the false-positive rate, which should not exceed alpha beyond
binomial noise; under exposure it is the power. The verdict on a null is a
one-sided exact binomial test (scipy's ``binomtest``) of the rejections
against alpha at level ``margin_level``: "within margin" unless the count is
improbably high for a calibrated test. The interval is Clopper-Pearson.

Where the seeds re-split one finite set of samples, their p-values are
dependent: each is still uniform under the null, so the expected rate is
alpha, but the spread is wider than binomial and the margin is a guide,
not an exact bound."""

from __future__ import annotations

from collections.abc import Sequence

from scipy.stats import binomtest

WITHIN, ABOVE = "within binomial margin", "above binomial margin"


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact binomial interval of a rate k / n (0 of 20: [0, 0.168])."""
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"a rate needs 0 <= k <= n and n >= 1, got k={k}, n={n}")
    interval = binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    return float(interval.low), float(interval.high)


def rejection_rate(p_values: Sequence[float], alpha: float) -> dict:
    """The share of ``p_values`` below ``alpha``, with its Clopper-Pearson 95% interval."""
    if not p_values:
        raise ValueError("no p-values")
    rejected = sum(p < alpha for p in p_values)
    n = len(p_values)
    low, high = clopper_pearson(rejected, n)
    return {"n_seeds": n, "n_rejected": rejected, "rate": rejected / n, "rate_low": low, "rate_high": high}


def false_positive_rate(p_values: Sequence[float], alpha: float, margin_level: float = 0.05) -> dict:
    """``rejection_rate`` of null p-values, with the binomial verdict."""
    rate = rejection_rate(p_values, alpha)
    test = binomtest(rate["n_rejected"], rate["n_seeds"], alpha, alternative="greater")
    return rate | {"binomial_p": float(test.pvalue), "verdict": WITHIN if test.pvalue >= margin_level else ABOVE}
