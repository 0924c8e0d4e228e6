"""SrDetection's null check: under a model that never saw the benchmark, an
original has no reason to beat its semantics-preserving variants, so if the
n_i variants of sample i are exchangeable with the original, the chance that
the original beats all of them is 1 / (n_i + 1). The observed share of
samples flagged, with its Wilson interval, should then cover the mean of
1 / (n_i + 1); a share above it means the variants are less natural than
the originals (renaming bias), which the detector would read as leakage."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from leaktrace.detect.registry import family_params, generator_instance_name, sensitivity_instance_name
from leaktrace.evaluate.proportions import wilson_interval
from leaktrace.models.naming import BASE_MODEL
from leaktrace.settings.aggregate import GrayboxInstances

log = logging.getLogger(__name__)

NULL_CHECK_FAMILY = "srdetection_graybox"
NULL_CHECK_MODEL = BASE_MODEL  # never trained on the benchmark

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


def graybox_params(graybox: GrayboxInstances | None) -> dict[str, Any]:
    """SrDetection gray-box's parameters (``score.methods.srdetection_graybox``, null: not run) over its defaults."""
    return family_params(NULL_CHECK_FAMILY, None if graybox is None else dataclasses.asdict(graybox))


def null_check_rows(
    scores: list[dict],
    samples: list[dict],
    variant_counts: dict[str, int],
    graybox: GrayboxInstances | None,
    generator_counts: dict[str, dict[str, int]] | None = None,
) -> list[dict]:
    """The null check of every SrDetection gray-box instance (the main one,
    the variant-count sensitivity ones and one per other variant generator)
    under the base model, on all kept samples and those the pre-exposure
    filter removed (``pre_exposure: remove``), so the check sees every
    eligible sample whatever the filter did: instance ``_n{k}`` compares
    each sample with its first min(k, valid variants) variants; a generator's
    instance with its first n of that generator's (``generator_counts``)."""
    params = graybox_params(graybox)
    instance_n = {
        NULL_CHECK_FAMILY: params["n_variants"],
        **{sensitivity_instance_name(NULL_CHECK_FAMILY, k): k for k in params["sensitivity"]},
    }
    counts_of = dict.fromkeys(instance_n, variant_counts)
    for generator in params["generators"]:
        name = generator_instance_name(NULL_CHECK_FAMILY, generator)
        instance_n[name], counts_of[name] = params["n_variants"], (generator_counts or {}).get(generator, {})
    kept = {s["sample_id"] for s in samples if s["kept"] or s.get("pre_exposed") is True}
    rows = []
    for method, n in instance_n.items():
        decisions = {s["sample_id"]: s["decision"] for s in scores if s["method"] == method and s["sample_id"] in kept}
        if not decisions:
            log.warning("null check: no %s scores of kept samples under %s", method, NULL_CHECK_MODEL)
            continue
        compared = {sid: min(n, counts_of[method].get(sid, 0)) for sid in decisions}
        rows.append({"model": NULL_CHECK_MODEL, "method": method, "n_variants": n, **null_check(decisions, compared)})
    return rows
