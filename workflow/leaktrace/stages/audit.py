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
from collections.abc import Mapping
from pathlib import Path

from leaktrace.artifacts import read_records, write_table
from leaktrace.calibration.blind_baseline import from_row
from leaktrace.calibration.leakage_rates import CONTROL, RATES_SCHEMA, compared_variants, leakage_rates
from leaktrace.data.sample_ids import match_ids, read_id_list
from leaktrace.report.plots import leakage_heatmap
from leaktrace.report.tables import markdown_table
from leaktrace.settings.audit import AuditSettings

log = logging.getLogger(__name__)


def read_control(path: Path | None, variants: Mapping[str, Path]) -> set[str]:
    """The control samples the id list names, among the audited benchmarks'
    samples (``mbpp/11`` or ``11``: :func:`leaktrace.data.sample_ids.match_ids`)."""
    if path is None:
        return set()
    samples = {r["sample_id"] for table in variants.values() for r in read_records(table, ["sample_id"])}
    return match_ids(read_id_list(path), samples, str(path))


def audit(
    scores: Mapping[tuple[str, str], Path],
    variants: Mapping[str, Path],
    settings: AuditSettings,
    output_dir: Path,
    held_out_ids: Path | None = None,
    blind: Path | None = None,
) -> None:
    """Write the audit's SrDetection leakage rates beside their nulls:
    leakage_rates.parquet, leakage_rates.md and heatmap.png.

    ``scores`` maps (audit model name, benchmark) to that
    model's scores.parquet; ``variants`` each benchmark to its variants
    table; ``held_out_ids``: the control ids; ``blind``: the audit's
    blind-baseline table."""
    control = read_control(held_out_ids, variants)
    baselines = {r["benchmark"]: from_row(r) for r in read_records(blind)} if blind else {}
    n_variants = {
        method: entry.n_variants
        for method, entry in (
            ("srdetection_graybox", settings.methods.srdetection_graybox),
            ("srdetection_blackbox", settings.methods.srdetection_blackbox),
        )
        if entry is not None
    }
    counts = {
        benchmark: compared_variants(read_records(path, ["sample_id", "kind", "valid"]), n_variants)
        for benchmark, path in variants.items()
    }
    rows = []
    for (model, benchmark), path in scores.items():
        found = leakage_rates(
            model,
            benchmark,
            read_records(path, ["sample_id", "method", "score", "decision"]),
            counts[benchmark],
            control,
            settings.calibration_alpha,
            baselines.get(benchmark),
            settings.inconclusive_rate,
            settings.contamination_alpha,
        )
        if not found:
            raise ValueError(
                f"{path}: no SrDetection scores for {model} on {benchmark}; "
                "configure score.methods.srdetection_graybox and/or srdetection_blackbox"
            )
        rows += found
    output_dir.mkdir(parents=True, exist_ok=True)
    write_table(rows, RATES_SCHEMA, output_dir / "leakage_rates.parquet")
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
    (output_dir / "leakage_rates.md").write_text(
        "# SrDetection audit: leakage rate per model and benchmark\n\n"
        "The share of samples flagged as leaked: gray-box, the original's perplexity is below every variant's; "
        "black-box, the model continues the original's prefix with more 7-gram overlap than every variant's "
        "(Clopper-Pearson 95% intervals). Beside it, its null: with a control set of known-unseen samples "
        "(`contamination.held_out_ids`) the share flagged among them, a one-sided Fisher exact p-value, and the "
        f"samples flagged by conformal p-values against the control set at α = calibration.alpha = {settings.calibration_alpha}; without one, the "
        "chance that the original is strictly the best of its n_i + 1 forms if they were exchangeable, 1/(n_i + 1) "
        "from each sample's own variant count, and the Poisson-binomial p-value of the count. A row without a "
        "control set is uncalibrated: renamed variants are not exchangeable with human-written originals even under "
        "a model that never saw them (the testbed's null check), so its rate and p-value are not evidence of "
        'exposure. A row with a control set has a verdict: "not calibrated" where the blind baseline (a '
        "text-only classifier, `verdicts.md`) tells the controls from the suspects, else the evidence or the flag "
        "rate the test would have detected with 80% power (the controls' own rate plugged in).\n\n" + table
    )
    leakage_heatmap(rows, output_dir / "heatmap.png")
    log.info("audit: %d rates for %d model-benchmark pairs", len(rows), len(scores))
