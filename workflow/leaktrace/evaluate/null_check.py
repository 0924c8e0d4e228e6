"""SrDetection's null check: under a model that never saw the benchmark, an
original has no reason to beat its semantics-preserving variants, so if the
n_i variants of sample i are exchangeable with the original, the chance that
the original beats all of them is 1 / (n_i + 1). The observed share of
samples flagged, with its Wilson interval, should then cover the mean of
1 / (n_i + 1); a share above it means the variants are less natural than
the originals (renaming bias), which the detector would read as leakage."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from leaktrace.evaluate.proportions import wilson_interval

PASS, FAIL = "within CI of 1/(n+1)", "outside CI of 1/(n+1)"


def null_check(decisions: Mapping[str, bool], n_variants: Mapping[str, int], confidence: float = 0.95) -> dict:
    """``decisions``: sample_id -> the detector flagged the sample (its original
    beat all its variants); ``n_variants``: sample_id -> how many variants it
    was compared with. Every flagged sample needs its variant count."""
    missing = sorted(set(decisions) - set(n_variants))
    if missing:
        raise ValueError(f"no variant count for {len(missing)} scored samples, e.g. {missing[:3]}")
    if not decisions:
        raise ValueError("the null check needs at least one scored sample")
    counts = np.array([n_variants[sid] for sid in decisions], dtype=float)
    if (counts < 1).any():
        raise ValueError("a scored sample has no variant to compare with")
    flagged = sum(bool(d) for d in decisions.values())
    low, high = wilson_interval(flagged, len(decisions), confidence)
    expected = float(np.mean(1.0 / (counts + 1.0)))
    return {
        "n_samples": len(decisions),
        "mean_variants": float(counts.mean()),
        "n_flagged": flagged,
        "rate": flagged / len(decisions),
        "rate_low": low,
        "rate_high": high,
        "expected_rate": expected,
        "verdict": PASS if low <= expected <= high else FAIL,
    }
