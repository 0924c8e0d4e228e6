"""function filter: the benchmark's samples that the testbed can use — runnable,
and a function (or whole program) that passes the function-level filters
(``data.functions.FunctionFilter``). Every sample keeps a row; dropped ones say why."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.functions import FUNCTIONS_SCHEMA, FunctionFilter, function_anatomy, program_anatomy
from leaktrace.data.samples import not_runnable, require_runnable, sample_tests
from leaktrace.settings.function_filter import FunctionFilterSettings

log = logging.getLogger(__name__)


def filter_functions(benchmark: Path, settings: FunctionFilterSettings, output: Path) -> None:
    """The benchmark's samples the testbed can use: each sample's row says
    whether it is kept, and why not.

    A sample the testbed cannot run is dropped with the reason (the
    benchmark is refused when none can run: it is not a testbed benchmark);
    a whole program (APPS's stdin/stdout problems) is filtered as one body
    (``data.functions.program_anatomy``)."""
    rule = FunctionFilter(
        min_body_lines=settings.min_body_lines,
        max_body_lines=settings.max_body_lines,
        min_chars=settings.min_chars,
        exclude_init=settings.exclude_init,
    )
    samples = read_records(benchmark)
    unrunnable = {s["sample_id"]: not_runnable(s, str(benchmark)) for s in samples}
    if all(unrunnable.values()):
        require_runnable(samples, str(benchmark), "filter")
    rows = []
    for sample in samples:
        if unrunnable[sample["sample_id"]]:
            rows.append(
                {
                    "sample_id": sample["sample_id"],
                    "kept": False,
                    "reason": f"not runnable: {unrunnable[sample['sample_id']]}",
                    "body_lines": None,
                    "n_chars": None,
                    "context": None,
                    "signature": None,
                    "continuation": None,
                }
            )
            continue
        _, entry_point = sample_tests(sample, str(benchmark))
        anatomy = (
            program_anatomy(sample["code"]) if entry_point is None else function_anatomy(sample["code"], entry_point)
        )
        reason = rule.reason_to_drop(anatomy)
        rows.append(
            {
                "sample_id": sample["sample_id"],
                "kept": reason is None,
                "reason": reason,
                "body_lines": anatomy.body_lines,
                "n_chars": len(anatomy.function),
                "context": anatomy.context,
                "signature": anatomy.signature,
                "continuation": anatomy.continuation,
            }
        )
    write_table(rows, FUNCTIONS_SCHEMA, output)
    log.info("function filter kept %d of %d samples", sum(r["kept"] for r in rows), len(rows))
    if any(unrunnable.values()):
        log.info("not runnable, by reason: %s", dict(Counter(r for r in unrunnable.values() if r)))
