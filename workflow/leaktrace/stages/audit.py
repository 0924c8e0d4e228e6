"""audit: SrDetection's leakage rate of each audited model on each benchmark
(SrDetection Fig. 2 and Table 9) — the share of samples whose original form
the model prefers over every semantics-preserving variant (gray-box) or
continues more faithfully than every variant (black-box) — beside its null
and a p-value, as a table and a heatmap.

The null, per model × benchmark × detector:

- with a control set (``contamination.held_out_ids``: problems known to be
  unseen, e.g. released after the model's cutoff), the share the detector
  flags among them (Clopper-Pearson 95%), the statistic taken over the other
  samples, and a one-sided Fisher exact test of the two shares; the
  conformal decisions at alpha against that control set count the samples
  flagged (at most about alpha of them if none was seen);
- without one, the exact chance rate: if a sample's n_i valid variants were
  exchangeable with its original under a model that never saw it, the
  original would be strictly the best of the n_i + 1 forms with chance at
  most 1 / (n_i + 1) (exactly, without ties), so the count of flags is at
  most Poisson-binomial with those chances, computed from each sample's own
  variant count, and the p-value is its upper tail. The table then says
  "uncalibrated": the testbed's null check measures how far renamed
  variants are from exchangeable, and a rate above chance is not evidence
  of exposure by itself.

A control set can differ from the suspects in ways unrelated to exposure;
where the audit's blind baseline (``audit/blind_baseline.parquet``, a
text-only classifier) tells them apart at alpha, a control-set row's verdict
reads "control set differs from the suspects (...): not calibrated"
(:mod:`leaktrace.calibration.audit_verdicts`); otherwise it states the
evidence or the flag rate the test would have detected with 80% power."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from scipy.stats import fisher_exact

from leaktrace.artifacts import read_records, write_table
from leaktrace.calibration.audit_verdicts import RATE, gate
from leaktrace.calibration.blind_baseline import BlindBaseline, from_row
from leaktrace.calibration.conformal import conformal_p_values
from leaktrace.calibration.power import detectable_fisher_rate, poisson_binomial_sf
from leaktrace.calibration.rates import clopper_pearson
from leaktrace.calibration.verdict import verdict
from leaktrace.config_slice import config_key, read_slice
from leaktrace.data.sample_ids import match_ids, read_id_list
from leaktrace.detect.registry import family_params
from leaktrace.report.plots import leakage_heatmap
from leaktrace.report.tables import markdown_table
from leaktrace.variants.kinds import detector_variant_counts

log = logging.getLogger(__name__)

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
    alpha: float,
    blind: BlindBaseline | None,
    inconclusive_rate: float,
    gate_alpha: float | None = None,
) -> list[dict]:
    """One row per SrDetection detector present in ``scores``: the share of
    samples it flags, beside its null. ``variant_counts``: detector -> sample
    -> the variants it compared the original with; ``control``: the known-unseen
    sample ids (empty: none); ``blind``: the benchmark's blind baseline,
    which gates at ``gate_alpha`` (the blind table's level; default ``alpha``);
    ``inconclusive_rate``: audit.inconclusive_rate."""
    gate_alpha = alpha if gate_alpha is None else gate_alpha
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


@dataclass(frozen=True)
class AuditSettings:
    """The audit rule's slice, each field the config key it carries (config/schema.yaml)."""

    alpha: float = config_key("calibration.alpha")
    gate_alpha: float = config_key("contamination.alpha")
    inconclusive_rate: float = config_key("audit.inconclusive_rate")
    methods: dict = config_key("score.methods")  # the SrDetection detectors' entries (their variant counts)


def compared_variants(variants: Path, settings: dict) -> dict[str, dict[str, int]]:
    """detector -> sample_id -> n_i: the sample's valid detector variants,
    capped by the detector's variant count (``settings``: score.methods)."""
    counts = detector_variant_counts(read_records(variants, ["sample_id", "kind", "valid"]))
    return {
        method: {sid: min(n, family_params(method, settings.get(method))["n_variants"]) for sid, n in counts.items()}
        for method in AUDIT_METHODS
        if method in settings
    }


def read_control(path: Path | None, variants: dict[str, Path]) -> set[str]:
    """The control samples the id list names, among the audited benchmarks'
    samples (``mbpp/11`` or ``11``: :func:`leaktrace.data.sample_ids.match_ids`)."""
    if path is None:
        return set()
    samples = {r["sample_id"] for table in variants.values() for r in read_records(table, ["sample_id"])}
    return match_ids(read_id_list(path), samples, str(path))


def audit(
    scores: dict[tuple[str, str], Path],
    variants: dict[str, Path],
    settings: dict,
    out_dir: Path,
    held_out_ids: Path | None = None,
    blind: Path | None = None,
) -> None:
    """``scores`` maps (audit model name, benchmark) to that model's
    scores.parquet; ``variants`` each benchmark to its variants table;
    ``settings``: the rule's slice (:class:`AuditSettings`); ``blind``: the
    audit's blind-baseline table."""
    settings = read_slice(AuditSettings, settings, "")
    control = read_control(held_out_ids, variants)
    baselines = {r["benchmark"]: from_row(r) for r in read_records(blind)} if blind else {}
    counts = {benchmark: compared_variants(path, settings.methods) for benchmark, path in variants.items()}
    rows = []
    for (model, benchmark), path in scores.items():
        found = leakage_rates(
            model,
            benchmark,
            read_records(path, ["sample_id", "method", "score", "decision"]),
            counts[benchmark],
            control,
            settings.alpha,
            baselines.get(benchmark),
            settings.inconclusive_rate,
            settings.gate_alpha,
        )
        if not found:
            raise ValueError(
                f"{path}: no SrDetection scores for {model} on {benchmark}; "
                "configure score.methods.srdetection_graybox and/or srdetection_blackbox"
            )
        rows += found
    out_dir.mkdir(parents=True, exist_ok=True)
    write_table(rows, RATES_SCHEMA, out_dir / "leakage_rates.parquet")
    table = markdown_table(
        [
            {
                **r,
                "leakage rate [95% CI]": f"{r['leakage_rate']:.3f} [{r['rate_low']:.3f}, {r['rate_high']:.3f}]",
                "null rate": f"{r['null_rate']:.3f}"
                + (
                    f" [{r['null_low']:.3f}, {r['null_high']:.3f}] of {r['null_n']}"
                    if r["null"] == CONTROL
                    else " (exact)"
                ),
                "p": f"{r['p_value']:.2g}",
                "flagged at α (conformal)": "–" if r.get("n_flagged_at_alpha") is None else r["n_flagged_at_alpha"],
            }
            for r in rows
        ],
        [
            "model",
            "benchmark",
            "detector",
            "n_samples",
            "n_flagged",
            "leakage rate [95% CI]",
            "null",
            "null rate",
            "p",
            "flagged at α (conformal)",
            "calibration",
            "verdict",
        ],
    )
    (out_dir / "leakage_rates.md").write_text(
        "# SrDetection audit: leakage rate per model and benchmark\n\n"
        "The share of samples flagged as leaked: gray-box, the original's perplexity is below every variant's; "
        "black-box, the model continues the original's prefix with more 7-gram overlap than every variant's "
        "(Clopper-Pearson 95% intervals). Beside it, its null: with a control set of known-unseen samples "
        "(`contamination.held_out_ids`) the share flagged among them, a one-sided Fisher exact p-value, and the "
        f"samples flagged by conformal p-values against the control set at α = calibration.alpha = {settings.alpha}; without one, the "
        "chance that the original is strictly the best of its n_i + 1 forms if they were exchangeable, 1/(n_i + 1) "
        "from each sample's own variant count, and the Poisson-binomial p-value of the count. A row without a "
        "control set is uncalibrated: renamed variants are not exchangeable with human-written originals even under "
        "a model that never saw them (the testbed's null check), so its rate and p-value are not evidence of "
        'exposure. A row with a control set has a verdict: "not calibrated" where the blind baseline (a '
        "text-only classifier, `verdicts.md`) tells the controls from the suspects, else the evidence or the flag "
        "rate the test would have detected with 80% power (the controls' own rate plugged in).\n\n" + table
    )
    leakage_heatmap(rows, out_dir / "heatmap.png")
    log.info("audit: %d rates for %d model-benchmark pairs", len(rows), len(scores))
