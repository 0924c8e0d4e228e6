"""verdict: ``results/<run>/verdict.md``, the page a run opens on: per model
x benchmark the answer with the test that carries it, from the tables the
run already wrote (``report.verdict``)."""

from __future__ import annotations

import logging
from pathlib import Path

from leaktrace.config_slice import read_slice
from leaktrace.report.verdict import PageSettings, load_tables, render_verdict

log = logging.getLogger(__name__)


def verdict(tables: tuple[Path, ...], results: Path, settings: dict, output: Path) -> None:
    """``tables``: the run's final outputs (files the verdict does not read
    are ignored); ``settings``: the rule's slice (:class:`PageSettings`)."""
    text = render_verdict(load_tables(tables, results), read_slice(PageSettings, settings, ""))
    output.write_text(text)
    log.info("verdict in %s (%d lines)", output, text.count("\n"))
