"""Programs run against a benchmark sample's tests, whatever form the tests
take (`leaktrace.data.samples.sample_tests`): HumanEval-style ``check`` code
with its entry point (`runner.run_test`), unittest.TestCase classes
(ClassEval: `runner.run_unittest`) or a whole program's standard
input/output cases (APPS: `stdio.run_io_tests`). One place that knows every
form, so that a path running model output against tests (RQ3's
completions) takes every benchmark the ingest reads, not only the first
form it was written for (ClassEval's unittest classes reached
`run_tests` as a check and crashed it)."""

from __future__ import annotations

from collections.abc import Sequence

from leaktrace.data.io_tests import IoTests
from leaktrace.data.samples import UnittestTests
from leaktrace.sandbox.runner import (
    SandboxLimits,
    SandboxResult,
    run_tests,
    run_unittests,
    run_whole_tests,
    run_whole_unittests,
)
from leaktrace.sandbox.stdio import run_io_tests_many

SampleTests = str | IoTests | UnittestTests


def run_sample_tests(
    items: Sequence[tuple[str, SampleTests, str | None]],
    limits: SandboxLimits = SandboxLimits(),
    *,
    workers: int,
    whole: bool = False,
) -> list[SandboxResult]:
    """Each (code, tests, entry point) run in the sandbox, ``workers`` runs at
    a time, one program per run; results keep input order. The entry point
    is the function a ``check`` calls (None for standard-input cases; a
    unittest run ignores it: its tests name what they use). With ``whole``,
    a ``check`` or unittest classes run in the program's own process
    (`runner.run_whole_test`), for the benchmark's own solutions, whose return
    values and effects on their arguments only the test there can see; model
    output is judged without it, its calls answered across the sandbox's
    boundary."""
    kinds = {"check": [], "unittest": [], "io": []}
    for i, (_, tests, _) in enumerate(items):
        if isinstance(tests, IoTests):
            kinds["io"].append(i)
        elif isinstance(tests, UnittestTests):
            kinds["unittest"].append(i)
        elif isinstance(tests, str):
            kinds["check"].append(i)
        else:
            raise TypeError(
                f"item {i}: tests must be check code (str), IoTests or UnittestTests, not {type(tests).__name__}"
            )
    results: list[SandboxResult | None] = [None] * len(items)
    ran = (
        (run_whole_tests if whole else run_tests)([items[i] for i in kinds["check"]], limits, workers=workers)
        if kinds["check"]
        else [],
        (run_whole_unittests if whole else run_unittests)(
            [(items[i][0], items[i][1].code) for i in kinds["unittest"]], limits, workers=workers
        )
        if kinds["unittest"]
        else [],
        run_io_tests_many([(items[i][0], items[i][1]) for i in kinds["io"]], limits, workers=workers)
        if kinds["io"]
        else [],
    )
    for indices, outcomes in zip(kinds.values(), ran, strict=True):
        for i, result in zip(indices, outcomes, strict=True):
            results[i] = result
    return results  # type: ignore[return-value]


def solution_failures(
    rows: Sequence[dict],
    source: str,
    limits: SandboxLimits = SandboxLimits(),
    *,
    workers: int = 1,
    max_io_cases: int | None = None,
) -> tuple[int, list[tuple[str, str]]]:
    """Each sample's own solution (its ``code``) run against its own tests
    (a ``check`` in the solution's own process, as the benchmark runs it):
    (how many were run, [(sample id, why it failed)] in input order). Only
    samples the sandbox can run are run (``not_runnable`` is None: code and
    Python tests of a kind a sandbox path runs; DS-1000's ``exec`` tests are
    not); the reason is the run's status with its error. A sample whose tests
    cannot be read (malformed input/output JSON) fails with that reason; the
    filter stops on it later, naming the record."""
    from leaktrace.data.samples import not_runnable, sample_tests, test_format_of
    from leaktrace.errors import InputError

    runnable, unreadable = [], []
    for row in rows:
        if not (row.get("code") and (row.get("test") or "").strip() and test_format_of(row) != "exec"):
            continue
        try:
            if not_runnable(row, source) is None:
                runnable.append(row)
        except InputError as error:
            unreadable.append((row["sample_id"], f"unreadable tests: {error.message}"))
    items = [(row["code"], *sample_tests(row, source, max_io_cases)) for row in runnable]
    results = run_sample_tests(items, limits, workers=workers, whole=True)
    failures = [
        (row["sample_id"], f"{result.status}: {(result.error or result.stderr or '').strip()[:300]}")
        for row, result in zip(runnable, results, strict=True)
        if result.status != "ok"
    ]
    position = {row["sample_id"]: i for i, row in enumerate(rows)}
    return len(runnable) + len(unreadable), sorted(unreadable + failures, key=lambda f: position[f[0]])
