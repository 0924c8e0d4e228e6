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

    n_inputs: int  # N, per input set
    candidates: int  # hypothesis draws per set, before keeping the valid ones
    clone_threshold: float
    float_rel_tol: float
    float_abs_tol: float
    call_steps: int  # steps (function calls, loop iterations) per call, else its output is timeout
    function_steps: int  # steps of its module-level code and all its calls, else outcome timeout
    max_timeouts: int  # calls past their steps a function may have; one more, and its outcome is timeout
    call_cpu_s: float  # the safety net: CPU seconds per call (twice that on the second try)
    function_cpu_s: float  # the safety net of its module-level code
    function_memory_mb: int  # address space of a function's process
    batch_size: int  # functions per sandbox run
    sandbox: ExecutionSandbox | None  # SandboxLimits fields but the time limits, which follow from the above
