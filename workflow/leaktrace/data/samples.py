"""What a benchmark sample holds: :class:`BenchmarkSample`, what every
benchmark reader returns (``data.benchmarks``, ``data.humaneval``), and the
functions that read a row of the ingested table.

A sample has code, problem text, or both (its ``kind``): HumanEval-style
problems are both (the prompt is code with the problem in its docstring),
CodeSearchNet functions with a docstring are both, an issue or bug report is
text only. The ingested table of a ``humaneval``-format benchmark predates
kinds and has no ``kind``, ``text`` or ``language`` column: its rows are read
as Python code with tests (what they are). Everything below
:class:`BenchmarkSample` takes a row of that table as a dict."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from leaktrace.data.io_tests import CallTests, IoTests, call_test, parse_io_tests
from leaktrace.data.script_tests import SCRIPT_FORMAT, check_code, script_problem
from leaktrace.errors import InputError

KINDS = ("code", "text", "both")
TEXT = "text"  # the lexing language of a text-only sample: words and punctuation, nothing renamed


@dataclass(frozen=True)
class BenchmarkSample:
    """One problem of a benchmark as its reader returns it: the code is
    ``prompt + solution``, ``test`` its tests (written as ``test_format`` says),
    ``text`` the problem statement, ``kind`` which of code and text it has."""

    sample_id: str  # "<benchmark>/<task_id>"
    benchmark: str
    task_id: str
    prompt: str
    solution: str
    test: str
    entry_point: str | None
    text: str
    kind: str  # one of KINDS
    language: str | None
    test_format: str | None  # how `test` is written (data/io_tests.py TEST_FORMATS); None without tests

    @property
    def code(self) -> str:
        return self.prompt + self.solution


def kind_of(row: dict) -> str:
    return row.get("kind") or "both"


def language_of_sample(row: dict, default: str | None) -> str | None:
    """The language a sample is lexed in: ``text`` for a text-only sample,
    else its own language, else the scan's."""
    if kind_of(row) == "text":
        return TEXT
    return row.get("language") or default


def document(row: dict) -> str:
    """What the leakage scan indexes and verifies for a sample: its code, its
    text, or both (the text first, as a problem statement precedes its
    solution), the text left out when the code already holds it (a prompt
    that is the code's prefix)."""
    kind = kind_of(row)
    code, text = row.get("code") or "", row.get("text") or ""
    if kind == "text":
        return text
    if kind == "code" or not text or text in code:
        return code
    return f"{text}\n\n{code}"


def clone_text(row: dict) -> str:
    """What a sample's clone type is judged on: its code, or its text when it
    has no code (problem text lexed as code would read as names)."""
    return (row.get("text") or "") if kind_of(row) == "text" else (row.get("code") or "")


def test_format_of(row: dict) -> str:
    """How a sample's ``test`` is written (:data:`leaktrace.data.io_tests.TEST_FORMATS`):
    HumanEval's ``check`` code unless the ingested table says otherwise."""
    return row.get("test_format") or "check"


@dataclass(frozen=True)
class UnittestTests:
    """Tests written as unittest.TestCase classes (ClassEval), run by
    :func:`leaktrace.sandbox.run_unittest` with the program's objects held by
    reference, or, to validate the benchmark's own solution and its variants,
    in the program's own process (:func:`leaktrace.sandbox.run_whole_unittest`)."""

    code: str


def sample_tests(
    row: dict, source: str, max_io_cases: int | None = None
) -> tuple[str | IoTests | UnittestTests, str | None]:
    """What the sandbox runs for a runnable sample, and its entry point:
    HumanEval-style ``check`` code and the function it calls (a test script
    that calls the solution by name is made into one:
    :mod:`leaktrace.data.script_tests`), or for APPS-style tests either the
    stdin/stdout cases of a whole program (no entry point) or a ``check``
    built from the calls of a call-based problem
    (:mod:`leaktrace.data.io_tests`), at most ``max_io_cases`` cases."""
    if test_format_of(row) == "check":
        return row["test"], row["entry_point"]
    if test_format_of(row) == SCRIPT_FORMAT:
        return check_code(row["test"], row["entry_point"]), row["entry_point"]
    if test_format_of(row) == "unittest":
        return UnittestTests(row["test"]), row["entry_point"]
    tests = parse_io_tests(row["test"], source, row["sample_id"], max_io_cases)
    if isinstance(tests, CallTests):
        return call_test(tests), tests.fn_name
    return tests, None


def check_test(row: dict, source: str = "the benchmark") -> tuple[str | None, str | None]:
    """The HumanEval-style ``check`` code and entry point of a sample whose
    tests are, or become, one (check, script, call-based input/output
    tests); (None, None) for a whole program's stdin/stdout cases, a sample
    without tests, or one :func:`not_runnable` refuses."""
    if not row.get("test") or not_runnable(row, source):
        return None, None
    tests, entry_point = sample_tests(row, source)
    return (tests, entry_point) if isinstance(tests, str) else (None, None)


def not_runnable(row: dict, source: str = "the benchmark") -> str | None:
    """Why a sample cannot go through the testbed or the audit (variants run
    in the sandbox against its tests: HumanEval-style, a ``check(candidate)``
    function called with the entry point; a script that calls the solution
    by name; or APPS-style input/output cases), or None when it can.
    Malformed input/output tests are an InputError."""
    kind = kind_of(row)
    if kind == "text":
        return "it is problem text only, with no code"
    language = row.get("language") or "python"
    if language != "python" and test_format_of(row) == "main":
        return (
            f"its code is {language}, not Python, and its tests are a main() program built with the solution: "
            "the audit and the testbed run Python only (`leaktrace mutate` builds and runs C++ and Java with "
            "their main() where g++ and javac are installed, and says so where they are not)"
        )
    if language != "python":
        return f"its code is {language}, not Python"
    if test_format_of(row) == "io":
        return _io_not_runnable(row, source)
    if test_format_of(row) == SCRIPT_FORMAT:
        return script_problem(row.get("test") or "", row.get("entry_point"))
    if test_format_of(row) == "exec":
        return (
            "its tests exec the solution's source inside the test (DS-1000's test_execution(code)), so the "
            "solution would run outside the sandbox's program process; no sandbox path runs such tests"
        )
    if test_format_of(row) == "unittest":
        return _unittest_not_runnable(row)
    if not row.get("entry_point"):
        return "it has no entry point"
    try:
        tree = ast.parse(row.get("test") or "")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return "its tests are not Python"
    if not any(isinstance(n, ast.FunctionDef) and n.name == "check" for n in tree.body):
        return "its tests define no HumanEval-style check(candidate) function"
    return None


def _unittest_not_runnable(row: dict) -> str | None:
    """A unittest sample runs when its tests define a TestCase class and its
    code defines the entry point (ClassEval's class_name) at module level."""
    try:
        tests, code = ast.parse(row.get("test") or ""), ast.parse(row.get("code") or "")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return "its tests or its code are not Python"
    bases = [b for n in tests.body if isinstance(n, ast.ClassDef) for b in n.bases]
    if not any(
        isinstance(b, ast.Attribute) and b.attr == "TestCase" or isinstance(b, ast.Name) and b.id == "TestCase"
        for b in bases
    ):
        return "its tests define no unittest.TestCase class"
    entry_point = row.get("entry_point")
    if not entry_point or not any(
        isinstance(n, ast.ClassDef | ast.FunctionDef) and n.name == entry_point for n in code.body
    ):
        return f"its code does not define its entry point {entry_point!r} at module level"
    return None


def _io_not_runnable(row: dict, source: str) -> str | None:
    if not (row.get("test") or "").strip():
        return "it has no input/output tests"
    _, entry_point = sample_tests(row, source)  # malformed tests: an error, whatever the code
    try:
        tree = ast.parse(row.get("code") or "")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as err:
        where = f" (line {err.lineno})" if isinstance(err, SyntaxError) and err.lineno else ""
        return f"its code does not parse as Python 3{where}"
    if entry_point is not None and not any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == entry_point for n in tree.body
    ):
        return (
            f"its call-based tests call {entry_point}, which its code does not define at module level "
            "(a method of LeetCode's class Solution, which the function-test path cannot call)"
        )
    return None


def require_runnable(rows: list[dict], benchmark: str, stage: str) -> None:
    """Refuse, with one line naming the benchmark file, the first sample and
    the reason, a benchmark whose samples the testbed cannot run."""
    for row in rows:
        reason = not_runnable(row, benchmark)
        if reason:
            raise InputError(
                benchmark,
                row["sample_id"],
                f"the {stage} stage needs runnable Python with HumanEval-style, script or input/output tests, "
                f"and {reason}; scan such a benchmark for leakage only (benchmarks.<name>.testbed: false)",
            )
