"""verdict: ``results/<run>/verdict.md``, the page a run opens on: per model
x benchmark the answer with the test that carries it, from the tables the
run already wrote (``report.verdict``), and ``verdict.json`` beside it, the
same answers for a program (``report.verdict_json``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from leaktrace.report.verdict import load_tables, render_verdict
from leaktrace.report.verdict_json import verdict_record
from leaktrace.settings.verdict import PageSettings

log = logging.getLogger(__name__)


def verdict(
    results: Path, settings: PageSettings, output: Path, json_output: Path, tables: tuple[Path, ...] = ()
) -> None:
    """Write the verdict page and its JSON. ``tables``: the run's final
    outputs (files the verdict does not read are ignored)."""
    loaded = load_tables(tables, results)
    text = render_verdict(loaded, settings)
    output.write_text(text)
    json_output.write_text(json.dumps(verdict_record(loaded, settings), indent=1, ensure_ascii=False) + "\n")
    log.info("verdict in %s (%d lines) and %s", output, text.count("\n"), json_output)
