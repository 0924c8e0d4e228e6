"""Confidence intervals of a proportion (a share of samples flagged)."""

from __future__ import annotations

from scipy.stats import binomtest


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of ``successes / n``: unlike the normal
    approximation it stays inside [0, 1] and keeps its coverage near 0 and 1,
    where the leakage rates of an unexposed model sit."""
    if n < 1:
        raise ValueError(f"a proportion needs at least one trial, got n={n}")
    interval = binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(interval.low), float(interval.high)
