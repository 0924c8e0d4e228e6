"""Sandboxed execution of code the pipeline did not write."""

from leaktrace.sandbox.runner import (
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    isolation_level,
    run_build,
    run_calls,
    run_many,
    run_python,
    run_stdio,
    run_test,
    run_tests,
    run_unittest,
    run_unittests,
    run_whole_test,
    run_whole_tests,
)

__all__ = [
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "isolation_level",
    "run_build",
    "run_calls",
    "run_many",
    "run_python",
    "run_stdio",
    "run_test",
    "run_tests",
    "run_unittest",
    "run_unittests",
    "run_whole_test",
    "run_whole_tests",
]
