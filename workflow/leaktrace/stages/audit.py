"""audit: SrDetection's leakage rate of each audited model on each benchmark
(SrDetection Fig. 2 and Table 9) — the share of samples whose original form
the model prefers over every semantics-preserving variant (gray-box) or
continues more faithfully than every variant (black-box) — with Wilson 95%
intervals, as a table and a heatmap."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.evaluate.proportions import wilson_interval
from leaktrace.report.plots import leakage_heatmap
from leaktrace.report.tables import markdown_table

log = logging.getLogger(__name__)

AUDIT_METHODS = {"srdetection_graybox": "gray-box", "srdetection_blackbox": "black-box"}

RATES_SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("benchmark", pa.string()),
        ("detector", pa.string()),  # "gray-box" | "black-box"
        ("n_samples", pa.int32()),
        ("n_flagged", pa.int32()),
        ("leakage_rate", pa.float64()),
        ("rate_low", pa.float64()),
        ("rate_high", pa.float64()),
    ]
)


def leakage_rates(model: str, benchmark: str, scores: list[dict]) -> list[dict]:
    """One row per SrDetection detector present in ``scores``: the share of
    samples it flags as leaked."""
    rows = []
    for method, detector in AUDIT_METHODS.items():
        decisions = [bool(s["decision"]) for s in scores if s["method"] == method]
        if not decisions:
            continue
        flagged = sum(decisions)
        low, high = wilson_interval(flagged, len(decisions))
        rows.append({"model": model, "benchmark": benchmark, "detector": detector, "n_samples": len(decisions),
                     "n_flagged": flagged, "leakage_rate": flagged / len(decisions),
                     "rate_low": low, "rate_high": high})
    return rows


def audit(scores: dict[tuple[str, str], Path], out_dir: Path) -> None:
    """``scores`` maps (audit model name, benchmark) to that model's scores.parquet."""
    rows = []
    for (model, benchmark), path in scores.items():
        found = leakage_rates(model, benchmark, read_records(path, ["method", "decision"]))
        if not found:
            raise ValueError(f"{path}: no SrDetection scores for {model} on {benchmark}; "
                             "configure score.methods.srdetection_graybox and/or srdetection_blackbox")
        rows += found
    out_dir.mkdir(parents=True, exist_ok=True)
    write_table(rows, RATES_SCHEMA, out_dir / "leakage_rates.parquet")
    table = markdown_table(
        [{**r, "leakage rate [95% CI]": f"{r['leakage_rate']:.3f} [{r['rate_low']:.3f}, {r['rate_high']:.3f}]"} for r in rows],
        ["model", "benchmark", "detector", "n_samples", "n_flagged", "leakage rate [95% CI]"],
    )
    (out_dir / "leakage_rates.md").write_text(
        "# SrDetection audit: leakage rate per model and benchmark\n\n"
        "The share of samples flagged as leaked: gray-box, the original's perplexity is below every variant's; "
        "black-box, the model continues the original's prefix with more 7-gram overlap than every variant's. "
        "Wilson 95% intervals.\n\n" + table
    )
    leakage_heatmap(rows, out_dir / "heatmap.png")
    log.info("audit: %d rates for %d model-benchmark pairs", len(rows), len(scores))
