"""Whole programs judged on standard input and output (APPS's stdin/stdout problems).

A program passes when, for every case, it runs to its end (or calls
``sys.exit`` with status 0) and what it wrote to standard output equals the
expected output at the strict level of APPS's evaluator
(``eval/testing_util.py``, ``custom_compare_``): the output split into lines,
joined again by line breaks, with or without each line stripped of the
whitespace around it, and then stripped as a whole, equals the expected
output stripped as a whole. Spaces around a line, blank lines at the end, a
missing final newline and the program's ``\\r\\n`` line ends are
therefore no difference; anything else is.

Left out are the evaluator's looser fallbacks, tried there when the strict
comparison fails: the expected output with its blank lines dropped, every
line read as a number and compared with ``numpy.allclose``, and the output
and expected output compared as *sets* of whitespace-separated tokens (also
rounded to 3 decimals). The set comparisons ignore order and repetition, so
a wrong program passes them (``2 1`` for ``1 2``); the numeric one accepts
any float within 1e-5 relative. Here a test is the ground truth a renamed
variant is checked against, so it stays strict: a solution that passes only
under a fallback fails its own tests and the filter drops its sample with
that reason, counted.

Each case runs in a process of its own, forked afresh (`runner.run_stdio`),
so no state in memory passes from one case to the next; the cases of one
program share the run's scratch directory (/tmp), as APPS's evaluator runs
them all in one process. The expected outputs never enter the sandbox. A program that exits early
(``sys.exit(0)`` at the start) wrote nothing and fails; one that prints the
expected output of one case fails the others. The result carries a
``record`` in the form of `run_test`'s (one "call" per case: its number and
the output it wrote), so variant validation compares a variant with its
original byte for byte, as it does for HumanEval's tests.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from leaktrace.data.io_tests import IoTests
from leaktrace.sandbox.runner import SandboxLimits, SandboxResult, in_parallel, run_stdio
from leaktrace.sandbox.values import encode

_SHOWN_CHARS = 80


def outputs_match(output: str, expected: str) -> bool:
    """APPS's strict comparison (``custom_compare_``): the lines of `output`,
    as they are or each stripped, joined and stripped, equal `expected` stripped."""
    lines = output.splitlines()
    wanted = expected.strip()
    return "\n".join(lines).strip() == wanted or "\n".join(line.strip() for line in lines).strip() == wanted


def run_io_tests(code: str, tests: IoTests, limits: SandboxLimits = SandboxLimits()) -> SandboxResult:
    """Run `code` on every case of `tests`; status ok only if every case's output matches."""
    run = run_stdio(code, tests.inputs, limits)
    if run.status != "ok":
        return run
    outcomes = run.return_value
    calls, verdict, error = [], "passed", None
    for number, (outcome, expected) in enumerate(zip(outcomes, tests.outputs, strict=True), start=1):
        if outcome[0] == "timeout":
            return _failed(run, "timeout", f"case {number}: exceeded the wall-clock limit of {limits.timeout_s:g} s")
        if outcome[0] == "output":
            return _failed(run, "error", f"case {number}: {outcome[1]}")
        kind, value, data = outcome
        if kind == "signal":
            return _failed(run, "killed", f"case {number}: the program was killed by signal {value}")
        if value != 0:
            last = run.stderr.strip().splitlines()[-1:] or ["no message"]
            return _failed(run, "error", f"case {number}: exited with status {value} ({last[0]})")
        output = data.decode("utf-8", errors="replace")
        calls.append(encode(("case", (number,), {}, ("return", output))))
        if verdict == "passed" and not outputs_match(output, expected):
            verdict, error = "wrong", f"case {number}: {_first_difference(output, expected)}"
    record = encode({"calls": calls, "test": verdict})
    return SandboxResult(
        status="ok" if verdict == "passed" else "wrong",
        stdout=run.stdout,
        stderr=run.stderr,
        error=error,
        return_value=None,
        duration_s=run.duration_s,
        record=record,
        isolation=run.isolation,
    )


def run_io_tests_many(
    items: Sequence[tuple[str, IoTests]], limits: SandboxLimits = SandboxLimits(), *, workers: int
) -> list[SandboxResult]:
    """`run_io_tests` on each (code, tests), `workers` at a time; results keep input order."""
    return in_parallel([functools.partial(run_io_tests, code, tests, limits) for code, tests in items], workers)


def _failed(run: SandboxResult, status: str, error: str) -> SandboxResult:
    return SandboxResult(
        status=status,
        stdout=run.stdout,
        stderr=run.stderr,
        error=error,
        return_value=None,
        duration_s=run.duration_s,
        isolation=run.isolation,
    )


def _first_difference(output: str, expected: str) -> str:
    got, wanted = output.strip().splitlines(), expected.strip().splitlines()
    for line, (a, b) in enumerate(zip(got, wanted, strict=False), start=1):
        if a.strip() != b.strip():
            return f"line {line} is {_shown(a)}, expected {_shown(b)}"
    return f"{len(got)} lines of output, expected {len(wanted)}"


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "...")
