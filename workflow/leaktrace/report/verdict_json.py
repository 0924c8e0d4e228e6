"""``results/<run>/verdict.json``: the verdict page's answers for a program
(a CI gate, a notebook), written beside ``verdict.md`` from the same
sections, so the two never disagree. Its schema is
``docs/verdict.schema.json`` (documented in docs/artifact-schemas.md)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from leaktrace.report.verdict import (
    COPY_KINDS,
    PageSettings,
    RunTables,
    Section,
    Test,
    answer,
    answer_kind,
    page_sections,
)

SCHEMA_VERSION = 1
# answer_kind's four answers -> the tier a program reads
TIERS = {
    "Evidence of exposure": "design evidence",
    "observational finding": "observational finding",
    "No evidence of exposure": "no evidence",
    "Inconclusive": "inconclusive",
}
# Tiers a pipeline gate (`leaktrace audit --fail-on-evidence`) stops on: a rejection, of either kind.
FINDINGS = ("design evidence", "observational finding")
SCAN_FIELDS = {"Type-1": "type1", "Type-2": "type2", "Type-3": "type3", "input leaks": "input_leaks"}


def plain(markdown: str) -> str:
    """The answer's text without Markdown emphasis."""
    return re.sub(r"\*\*(.*?)\*\*", r"\1", markdown).replace("`", "")


def _number(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def carrying_test(text: str, tests: Sequence[Test]) -> str | None:
    """The test the answer names first (the one it rests on), or None where it names none."""
    named = [(text.find(t.name), t.name) for t in tests if t.name in text]
    return min(named)[1] if named else None


def record_of_test(t: Test) -> dict:
    return {
        "name": t.name,
        "tier": t.tier,
        "p_value": _number(t.p_value),
        "result": t.result,
        "null": t.null,
        "validity": {"state": t.state.strip("*"), "condition": t.validity},
        "power": t.power,
        "detectable_auc": _number(t.detectable),
        "counted_by_its_table": t.counted,
        "in_answer": t.p_value is not None and t.tier is not None,
        "valid": t.valid,
    }


def scan_record(name: str, corpus: str | None, samples: int | None, kinds: dict) -> dict:
    counts = {field: int(kinds.get(field) or 0) for field in SCAN_FIELDS.values()}
    return {"scan": name, "corpus": corpus, "samples": samples, "copies": counts, "total": sum(counts.values())}


def section_record(section: Section, settings: PageSettings) -> dict:
    text = answer(section.tests, settings.contamination_alpha, settings.max_detectable_auc, section.context)
    return {
        "model": section.model,
        "benchmark": section.benchmark,
        "tier": TIERS[answer_kind(text)],
        "answer": plain(text),
        "carried_by": carrying_test(text, section.tests),
        "tests": [record_of_test(t) for t in section.tests],
        "scans": [
            scan_record(r["name"], r["corpus"], r["samples"], {SCAN_FIELDS[k]: r.get(k) for k in COPY_KINDS})
            for r in section.scans
        ],
    }


def verdict_record(tables: RunTables, settings: PageSettings) -> dict:
    """The whole file: the run's settings, one answer per model x benchmark,
    and every scan of the run (a scan-only run has scans and no answers)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "run": settings.run,
        "alpha": settings.contamination_alpha,
        "max_detectable_auc": settings.max_detectable_auc,
        "answers": [section_record(s, settings) for s in page_sections(tables, settings)],
        "scans": [
            scan_record(name, row.get("corpus"), row.get("size"), row)
            | {"benchmark": row.get("benchmark"), "report": f"{tables.scan_folders[name]}/report.md"}
            for name, row in tables.scans
        ],
    }
