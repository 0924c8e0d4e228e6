"""Validation of Java and C++ mutations: each program built with its test and run in
the sandbox (`leaktrace.sandbox.toolchains`), where the language's compiler is installed.

HumanEval-X's test is a ``main`` placed after the solution in the same file
(Java: ``public class Main``), so a program here is the code followed by its
test. A mutation is valid when its original builds and passes (every command
exits with status 0), and it builds, passes and writes the same standard
output as its original: the differential check the Python mutations get from
`leaktrace.variants.validate`, at the level of a whole run. Standard error
is not compared (C++'s logging rewrite writes there). Where the compiler is
missing the verdict is (None, "unvalidated: ..."), never a guess.
"""

from __future__ import annotations

import dataclasses
import functools
import re

from leaktrace.sandbox import SandboxLimits, toolchains
from leaktrace.sandbox.runner import SandboxResult, in_parallel

# A build runs the compiler, which needs more than a Python test's time: at least these, per command.
MIN_BUILD_TIMEOUT_S, MIN_BUILD_CPU_S = 60.0, 60
_MAIN_CLASS = re.compile(r"public\s+(?:final\s+)?class\s+(\w+)")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def test_names(test: str) -> frozenset[str]:
    """The identifiers of a Java or C++ test: names a mutation keeps and never introduces."""
    return frozenset(_IDENTIFIER.findall(test))


def build_limits(limits: SandboxLimits) -> SandboxLimits:
    return dataclasses.replace(
        limits, timeout_s=max(limits.timeout_s, MIN_BUILD_TIMEOUT_S), cpu_s=max(limits.cpu_s, MIN_BUILD_CPU_S)
    )


def program_source(code: str, test: str) -> str:
    return code.rstrip("\n") + "\n\n" + test.strip("\n") + "\n"


def _run(language: str, source: str, limits: SandboxLimits) -> SandboxResult:
    main_class = next(iter(_MAIN_CLASS.findall(source)), "Main") if toolchains.normalise(language) == "java" else "Main"
    return toolchains.run_program(language, source, limits, main_class=main_class)


def _outcome(result: SandboxResult) -> tuple[bool, str]:
    """(passed, standard output or why not) of a build-and-run result."""
    if result.status != "ok":
        return False, f"sandbox {result.status}: {result.error}"
    steps = result.return_value
    names = ("compile", "test")
    for name, step in zip(names, steps, strict=False):
        if step[0] == "timeout":
            return False, f"{name}: timed out"
        if step[:2] != ("code", 0):
            how = f"exit status {step[1]}" if step[0] == "code" else f"signal {step[1]}"
            return False, f"{name}: {how}: {step[3].decode('utf-8', 'replace')[-300:].strip()}"
    if len(steps) < len(names):
        return False, "the build stopped early"
    return True, steps[-1][2].decode("utf-8", "replace")


def validate_compiled(
    programs: list[tuple[str, str, str]], originals: list[int], limits: SandboxLimits, *, workers: int = 1
) -> list[tuple[bool | None, str | None]]:
    """(valid, why not) for each (language, code, test); `originals[i]` is the index of
    program i's original (itself for an original)."""
    missing = {language: toolchains.missing(language) for language in {p[0] for p in programs}}
    runnable = [i for i, program in enumerate(programs) if missing[program[0]] is None]
    limits = build_limits(limits)
    results = in_parallel(
        [functools.partial(_run, programs[i][0], program_source(*programs[i][1:]), limits) for i in runnable], workers
    )
    outcomes = {i: _outcome(result) for i, result in zip(runnable, results, strict=True)}
    verdicts = []
    for i, (language, _, _) in enumerate(programs):
        if missing[language] is not None:
            verdicts.append((None, f"unvalidated: {missing[language]}"))
            continue
        passed, output = outcomes[originals[i]]
        if not passed:
            verdicts.append((False, f"original fails its test: {output}"))
        elif originals[i] == i:
            verdicts.append((True, None))
        elif not outcomes[i][0]:
            verdicts.append((False, outcomes[i][1]))
        elif outcomes[i][1] != output:
            verdicts.append((False, "test: its standard output differs from the original's"))
        else:
            verdicts.append((True, None))
    return verdicts
