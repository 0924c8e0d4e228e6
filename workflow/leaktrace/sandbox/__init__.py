"""Sandboxed execution of code the pipeline did not write."""

from leaktrace.sandbox.runner import SandboxLimits, SandboxResult, run_many, run_python

__all__ = ["SandboxLimits", "SandboxResult", "run_many", "run_python"]
