"""Execution similarity, HyClone's Stage 2 without an LLM (``leaktrace counterfactual-execution``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from leaktrace.config_slice import settings_of


@dataclass(frozen=True)
class ExecutionSandbox:
    """The sandbox run of a batch but its time limits, which follow from the CPU limits."""

    file_size_mb: int
    isolation: Literal["full", "weak"]
    max_processes: int
    memory_mb: int
    scratch_mb: int


@settings_of("counterfactual-execution", block="similarity.execution")
@dataclass(frozen=True)
class ExecutionSettings:
    """Inputs drawn, equality of outputs, and the limits of each execution
    (steps counted, CPU seconds as a safety net, memory, functions per run)."""

    n_inputs: int = 10  # N, per input set
    candidates: int = 20  # hypothesis draws per set, before keeping the valid ones
    clone_threshold: float = 0.8
    float_rel_tol: float = 1e-6
    float_abs_tol: float = 1e-9
    call_steps: int = 2_000_000  # steps (function calls, loop iterations) per call, else its output is timeout
    function_steps: int = 50_000_000  # steps of its module-level code and all its calls, else outcome timeout
    max_timeouts: int = 4  # calls past their steps a function may have; one more, and its outcome is timeout
    call_cpu_s: float = 2.0  # the safety net: CPU seconds per call (twice that on the second try)
    function_cpu_s: float = 10.0  # the safety net of its module-level code
    function_memory_mb: int = 512  # address space of a function's process
    batch_size: int = 48  # functions per sandbox run
    sandbox: ExecutionSandbox | None = None  # SandboxLimits fields but the time limits, which follow from the above
