"""Execution equivalence of a pair: the corpus code run against the
benchmark's own tests, in the sandbox, and the benchmark's code beside it.

A pair is runnable when the benchmark sample is Python with tests and an
entry point and the corpus text parses as Python and defines a function to
call: the entry point itself, else its only top-level function (a solution
written under another name). Both sides passing the benchmark's tests is LessLeak's
"same functionality, different implementation" made checkable. ``execution``
in a verdict is ``pass`` (both pass), ``fail`` (the corpus side does not),
``reference_fails`` (the benchmark's own code fails its tests: nothing to
compare with) or None with the reason it was not run in ``execution_note``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from leaktrace.sandbox import SandboxLimits, run_tests


@dataclass(frozen=True)
class Program:
    code: str
    test: str
    entry_point: str


def callable_as(code: str, entry_point: str) -> tuple[str | None, str | None]:
    """(``code`` made callable as ``entry_point``, None) or (None, why not)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None, "corpus text is not Python"
    functions = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if any(f.name == entry_point for f in functions):
        return code, None
    if not functions:
        return None, "corpus text defines no function"
    if len(functions) > 1:
        return None, "corpus text defines several functions, none named as the entry point"
    return f"{code}\n\n{entry_point} = {functions[0].name}\n", None


def runnable(language: str | None, test: str | None, entry_point: str | None) -> str | None:
    """Why a benchmark side cannot be executed, or None when it can."""
    if language not in (None, "python"):
        return f"benchmark is {language}, not Python"
    if not test or not entry_point:
        return "benchmark has no tests or entry point"
    return None


class Executor:
    """Runs programs in the sandbox, ``workers`` at a time, caching each
    benchmark reference's result (one run per sample, however many pairs)."""

    def __init__(self, limits: SandboxLimits, workers: int = 1):
        self.limits = limits
        self.workers = workers
        self._reference: dict[Program, bool] = {}

    def equivalence(self, pairs: list[tuple[Program, Program]]) -> list[str]:
        """For each (benchmark program, corpus program): pass, fail or reference_fails."""
        todo = list(dict.fromkeys(b for b, _ in pairs if b not in self._reference))
        runs = run_tests(
            [(p.code, p.test, p.entry_point) for p in todo] + [(c.code, c.test, c.entry_point) for _, c in pairs],
            self.limits,
            workers=self.workers,
        )
        for program, result in zip(todo, runs[: len(todo)], strict=True):
            self._reference[program] = result.status == "ok"
        out = []
        for (bench, _), result in zip(pairs, runs[len(todo) :], strict=True):
            if not self._reference[bench]:
                out.append("reference_fails")
            else:
                out.append("pass" if result.status == "ok" else "fail")
        return out
