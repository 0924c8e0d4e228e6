"""verdict: ``results/<run>/verdict.md``, the page a run opens on: per model
x benchmark the answer with the test that carries it, from the tables its
rule names (``report.verdict``), and ``verdict.json`` beside it, the same
answers for a program (``report.verdict_json``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path

from leaktrace.report.verdict import TableFiles, load_tables, render_verdict
from leaktrace.report.verdict_json import verdict_record
from leaktrace.settings.verdict import PageSettings

log = logging.getLogger(__name__)


def verdict(
    settings: PageSettings,
    output: Path,
    json_output: Path,
    detection: Mapping[str, Path] | None = None,
    seeds: Mapping[str, Path] | None = None,
    calibration: Mapping[str, Path] | None = None,
    null_check: Mapping[str, Path] | None = None,
    twin: Mapping[str, Path] | None = None,
    p_values: Mapping[str, Path] | None = None,
    contamination_calibration: Mapping[str, Path] | None = None,
    watermark: Mapping[str, Path] | None = None,
    testbed_blind: Mapping[str, Path] | None = None,
    scans: Mapping[str, Path] | None = None,
    audit_rates: Path | None = None,
    audit_inference: Path | None = None,
    audit_verdicts: Path | None = None,
    audit_exchangeability: Path | None = None,
    audit_watermark: Path | None = None,
    blind: Path | None = None,
) -> None:
    """Write the verdict page and its JSON from the tables named: per
    benchmark (BENCHMARK=PATH), per scan (SCAN=its summary.parquet) and the
    audit's; a table the run did not make is left out."""
    by_name = {k: v for k, v in locals().items() if k not in ("settings", "output", "json_output") and v is not None}
    loaded = load_tables(TableFiles(**by_name), output)
    text = render_verdict(loaded, settings)
    output.write_text(text)
    json_output.write_text(json.dumps(verdict_record(loaded, settings), indent=1, ensure_ascii=False) + "\n")
    log.info("verdict in %s (%d lines) and %s", output, text.count("\n"), json_output)
