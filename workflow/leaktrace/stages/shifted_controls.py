"""shifted-controls: the shifted-control experiment
(:mod:`leaktrace.calibration.shifted_controls`) on the audit's scores of a
never-exposed target and a never-exposed reference on the pool benchmark
(every problem as released and without docstrings: scripts/shifted_pool.py)."""

from __future__ import annotations

import logging
from pathlib import Path

from leaktrace.artifacts import read_records, write_table
from leaktrace.calibration.shifted_controls import (
    DRAWS_SCHEMA,
    PAGE_SCHEMA,
    SUMMARY_SCHEMA,
    experiment_rows,
    page_rows,
    summary_rows,
)
from leaktrace.contamination.features import score_lookup
from leaktrace.data.samples import document
from leaktrace.report.shifted_controls import render
from leaktrace.report.verdict import answer, answer_kind, audit_verdict_tests
from leaktrace.settings.shifted_controls import ShiftedControlsSettings

log = logging.getLogger(__name__)


def shifted_controls(
    benchmark: str,
    benchmark_table: Path,
    target: Path,
    reference: Path,
    settings: ShiftedControlsSettings,
    seed: int,
    output: Path,
    summary: Path,
    report: Path,
    page: Path,
) -> None:
    """Run the shifted-control experiment on the pool benchmark and write its draws, summary, report and page.

    ``output``: the draws; ``page``: how often the verdict page answered
    what, per condition; ``target`` and ``reference``: the two models'
    scores.parquet."""
    texts = {r["sample_id"]: document(r) for r in read_records(benchmark_table)}
    found = read_records(target, ["sample_id", "method", "score", "decision"])
    exclude = set(settings.exclude_methods)
    lookup = score_lookup(found, exclude)
    decisions = {
        "srdetection_graybox": {
            r["sample_id"]: bool(r["decision"])
            for r in found
            if r["method"] == "srdetection_graybox" and r["decision"] is not None
        }
    }
    ref = score_lookup(read_records(reference, ["sample_id", "method", "score"]), exclude)

    def page_answer(rows: list[dict]) -> str:
        """The verdict page's answer for one draw's rows, by the page's own rule."""
        return answer_kind(answer(audit_verdict_tests(rows), settings.contamination_alpha, settings.max_detectable_auc))

    rows = experiment_rows(
        benchmark, texts, lookup, ref, {m: d for m, d in decisions.items() if d}, settings, seed, page_answer
    )
    table = summary_rows(rows, settings.contamination_alpha)
    answers = page_rows(rows)
    write_table(rows, DRAWS_SCHEMA, output)
    write_table(table, SUMMARY_SCHEMA, summary)
    write_table(answers, PAGE_SCHEMA, page)
    report.write_text(
        render(table, answers, settings.contamination_alpha, settings.draws, settings.n_suspect, settings.n_control)
    )
    for r in table:
        log.info(
            "%s %s: %d of %d rejected, %d counted",
            r["condition"],
            r["test"],
            r["n_rejected"],
            r["n_draws"],
            r["n_counted"],
        )
