"""verdict: ``results/<run>/verdict.md``, the page a run opens on: per model
x benchmark the answer with the test that carries it, from the tables the
run already wrote (``report.verdict``), and ``verdict.json`` beside it, the
same answers for a program (``report.verdict_json``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from leaktrace.config_slice import read_slice
from leaktrace.report.verdict import PageSettings, load_tables, render_verdict
from leaktrace.report.verdict_json import verdict_record

log = logging.getLogger(__name__)


def verdict(tables: tuple[Path, ...], results: Path, settings: dict, output: Path, json_output: Path) -> None:
    """``tables``: the run's final outputs (files the verdict does not read
    are ignored); ``settings``: the rule's slice (:class:`PageSettings`)."""
    loaded, page = load_tables(tables, results), read_slice(PageSettings, settings, "")
    text = render_verdict(loaded, page)
    output.write_text(text)
    json_output.write_text(json.dumps(verdict_record(loaded, page), indent=1, ensure_ascii=False) + "\n")
    log.info("verdict in %s (%d lines) and %s", output, text.count("\n"), json_output)
