"""audit-exchangeability-table: the audit's order-test rows of every model x
benchmark gathered into one table and its Markdown. No model is loaded here
(the rows are the model jobs' outputs), so it runs in the CPU environment."""

from __future__ import annotations

from pathlib import Path

from leaktrace.artifacts import read_records, write_table
from leaktrace.contamination.exchangeability import AUDIT_SCHEMA
from leaktrace.report.exchangeability import exchangeability_markdown


def audit_exchangeability_table(rows: tuple[Path, ...], output: Path, report: Path) -> None:
    """Gather the audit's order-test rows of every model × benchmark into one table and its Markdown."""
    records = [r for path in rows for r in read_records(path)]
    write_table(records, AUDIT_SCHEMA, output)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(exchangeability_markdown(records))
