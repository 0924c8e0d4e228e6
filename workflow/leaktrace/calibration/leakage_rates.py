"""SrDetection's leakage rate of an audited model on a benchmark beside its
null (the audit's table, ``audit/leakage_rates.parquet``): with a control set
of known-unseen samples, the share flagged among them, a one-sided Fisher
exact test and conformal decisions against it; without one, the exact chance
rate 1/(n_i + 1) from each sample's own variant count and the
Poisson-binomial tail of the count of flags (stage ``audit-tables``,
:mod:`leaktrace.stages.audit`, reads the scores and writes the rows)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pyarrow as pa
from scipy.stats import fisher_exact

from leaktrace.calibration.audit_verdicts import RATE, gate
from leaktrace.calibration.blind_baseline import BlindBaseline
from leaktrace.calibration.conformal import conformal_p_values
from leaktrace.calibration.power import detectable_fisher_rate, poisson_binomial_sf
from leaktrace.calibration.rates import clopper_pearson
from leaktrace.calibration.verdict import verdict
from leaktrace.variants.kinds import detector_variant_counts

AUDIT_METHODS = {"srdetection_graybox": "gray-box", "srdetection_blackbox": "black-box"}
CONTROL, CHANCE = "control set", "chance 1/(n_i + 1)"
UNCALIBRATED = (
    "uncalibrated: no control set (contamination.held_out_ids); the chance rate holds only for variants "
    "exchangeable with the original, which the testbed's null check tests"
)

RATES_SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("benchmark", pa.string()),
        ("detector", pa.string()),  # "gray-box" | "black-box"
        ("n_samples", pa.int32()),  # the samples the statistic is over (the control set's left out)
        ("n_flagged", pa.int32()),
        ("leakage_rate", pa.float64()),
        ("rate_low", pa.float64()),  # Clopper-Pearson 95%
        ("rate_high", pa.float64()),
        ("null", pa.string()),  # control set | chance 1/(n_i + 1)
        ("null_n", pa.int32()),  # the control set's samples
        ("null_rate", pa.float64()),  # the control set's share flagged, or the mean chance of a flag
        ("null_low", pa.float64()),  # the control set's Clopper-Pearson 95%; null for the chance rate (exact)
        ("null_high", pa.float64()),
        (
            "p_value",
            pa.float64(),
        ),  # one-sided: Fisher exact against the control set, Poisson-binomial tail against chance
        ("alpha", pa.float64()),
        ("n_flagged_at_alpha", pa.int32()),  # conformal p-value against the control set <= alpha; null without one
        ("calibration", pa.string()),  # the control set used, or "uncalibrated: ..."
        (
            "blind_rejected",
            pa.bool_(),
        ),  # the blind baseline rejected (false: not refuted); null: no control set or not run
        ("detectable_effect", pa.float64()),  # the suspect flag rate Fisher's test detects with 80% power; null: none
        (
            "verdict",
            pa.string(),
        ),  # with a control set: evidence, no evidence (its power), inconclusive or not calibrated
    ]
)


def leakage_rates(
    model: str,
    benchmark: str,
    scores: list[dict],
    variant_counts: dict[str, dict[str, int]],
    control: set[str],
    calibration_alpha: float,
    blind: BlindBaseline | None,
    inconclusive_rate: float,
    contamination_alpha: float | None = None,
) -> list[dict]:
    """One row per SrDetection detector present in ``scores``: the share of
    samples it flags, beside its null. ``variant_counts``: detector -> sample
    -> the variants it compared the original with; ``control``: the known-unseen
    sample ids (empty: none); the flags' and Fisher test's level is
    ``calibration_alpha``; ``blind``: the benchmark's blind baseline, which
    gates at ``contamination_alpha`` (the blind table's level; default
    ``calibration_alpha``); ``inconclusive_rate``: audit.inconclusive_rate."""
    alpha = calibration_alpha
    gate_alpha = calibration_alpha if contamination_alpha is None else contamination_alpha
    rows = []
    for method, detector in AUDIT_METHODS.items():
        scored = {s["sample_id"]: s for s in scores if s["method"] == method}
        if not scored:
            continue
        suspect = sorted(set(scored) - control)
        held = sorted(set(scored) & control)
        flags = np.array([bool(scored[s]["decision"]) for s in suspect])
        flagged = int(flags.sum())
        low, high = clopper_pearson(flagged, len(suspect))
        row = {
            "model": model,
            "benchmark": benchmark,
            "detector": detector,
            "n_samples": len(suspect),
            "n_flagged": flagged,
            "leakage_rate": flagged / len(suspect),
            "rate_low": low,
            "rate_high": high,
            "alpha": alpha,
        }
        if held:
            held_flags = sum(bool(scored[s]["decision"]) for s in held)
            null_low, null_high = clopper_pearson(held_flags, len(held))
            p = conformal_p_values(
                np.array([scored[s]["score"] for s in held]), np.array([scored[s]["score"] for s in suspect])
            )
            test = fisher_exact(
                [[flagged, len(suspect) - flagged], [held_flags, len(held) - held_flags]], alternative="greater"
            )
            detectable = detectable_fisher_rate(len(suspect), len(held), held_flags / len(held), alpha)
            row |= {
                "blind_rejected": None if blind is None else blind.p_value <= gate_alpha,
                "detectable_effect": detectable,
                "verdict": verdict(
                    float(test.pvalue), alpha, RATE, detectable, inconclusive_rate, gate(blind, gate_alpha)
                ),
            }
            row |= {
                "null": CONTROL,
                "null_n": len(held),
                "null_rate": held_flags / len(held),
                "null_low": null_low,
                "null_high": null_high,
                "p_value": float(test.pvalue),
                "n_flagged_at_alpha": int((p <= alpha).sum()),
                "calibration": f"control set: {len(held)} known-unseen samples (contamination.held_out_ids)",
            }
        else:
            counts = variant_counts[method]
            missing = [s for s in suspect if counts.get(s, 0) < 1]
            if missing:
                raise ValueError(
                    f"{model} on {benchmark}: {method} flags samples without a valid variant, e.g. {missing[:3]}"
                )
            chances = np.array([1.0 / (counts[s] + 1.0) for s in suspect])
            row |= {
                "null": CHANCE,
                "null_rate": float(chances.mean()),
                "p_value": poisson_binomial_sf(chances, flagged),
                "calibration": UNCALIBRATED,
            }
        rows.append(row)
    return rows


def compared_variants(records: Iterable[dict], n_variants: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """detector -> sample_id -> n_i: the sample's valid detector variants
    (``records``: a variants table's sample_id, kind and valid), capped by
    the detector's variant count (``n_variants``: detector -> its
    score.methods n_variants, the configured SrDetection detectors only)."""
    counts = detector_variant_counts(list(records))
    return {
        method: {sid: min(n, n_variants[method]) for sid, n in counts.items()}
        for method in AUDIT_METHODS
        if method in n_variants
    }
