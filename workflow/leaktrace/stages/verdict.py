"""verdict: ``results/<run>/verdict.md``, the page a run opens on: per model
x benchmark the answer with the test that carries it, from the tables the
run already wrote (``report.verdict``)."""

from __future__ import annotations

import logging
from pathlib import Path

from leaktrace.report.verdict import load_tables, render_verdict

log = logging.getLogger(__name__)


def verdict(tables: tuple[Path, ...], results: Path, settings: dict, output: Path) -> None:
    """``tables``: the run's final outputs (files the verdict does not read
    are ignored); ``settings``: ``run`` (the results folder's name),
    ``alpha`` (calibration.alpha) and ``contamination_alpha``."""
    text = render_verdict(
        load_tables(tables, results), settings["run"], settings["alpha"], settings["contamination_alpha"]
    )
    output.write_text(text)
    log.info("verdict in %s (%d lines)", output, text.count("\n"))
