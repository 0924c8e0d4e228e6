"""Calibration of a test under the null: over seeds, each drawing a fresh
null configuration, the share of p-values below alpha (the false-positive
rate) should not exceed alpha beyond binomial noise. The verdict is a
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


def false_positive_rate(p_values: Sequence[float], alpha: float, margin_level: float = 0.05) -> dict:
    if not p_values:
        raise ValueError("no null p-values")
    rejected = sum(p < alpha for p in p_values)
    n = len(p_values)
    test = binomtest(rejected, n, alpha, alternative="greater")
    interval = binomtest(rejected, n, alpha).proportion_ci(confidence_level=0.95, method="exact")
    return {
        "n_seeds": n,
        "n_rejected": rejected,
        "fpr": rejected / n,
        "fpr_low": float(interval.low),
        "fpr_high": float(interval.high),
        "binomial_p": float(test.pvalue),
        "verdict": WITHIN if test.pvalue >= margin_level else ABOVE,
    }
