"""Execution-based similarity without an LLM: HyClone's Stage 2
(functional-memorization paper, App. C.2) with inputs drawn without an LLM,
so not HyClone itself; its tables and reports call it "execution similarity".

For a ground-truth function a and a generated function b with the same
signature, inputs I_a come from a (the benchmark's own test inputs where
its test calls the function, topped up with hypothesis draws guided by a's
signature, observed argument values and literals) and I_b from b (hypothesis
draws guided by the same signature and observed values and by b's
literals); see `leaktrace.similarity.inputs`. At most N test inputs are
used (a seeded sample, in source order, where there are more). Drawn inputs are kept only
where their own function returns (valid inputs, as HyClone asks its LLM
for), the first N of them in draw order; when a function returns on none,
its first N draws are used as they are. Test inputs are always kept.
Both functions run on both sets in the sandbox (`execution_driver`), each
in a process that holds only its own program and inputs: ground truths and
generations run in separate sandbox runs, and within a run the harness hands
the driver one function at a time, so a generation that walks the stack,
searches gc or looks for the ground truth's source finds nothing of the
ground truth's; outputs are compared here, after. Then

    S_a = share of I_a on which a and b give the same output, S_b likewise,
    clone iff S_a >= 0.8 and S_b >= 0.8, similarity = (S_a + S_b) / 2.

Same output: both raised an exception of the same type, or both took more
than the call's steps (``timeout``; a step is a function call or a loop
iteration of the program's own code, counted, never timed: see
`execution_driver`), or both returned
values equal member by member, numbers (not booleans) within
``float_rel_tol`` / ``float_abs_tol`` of each other (1 and 1.0 are equal,
nan equals nan), printed the same text, and left their arguments alike
(both unchanged, or changed to the same values).

A pair that cannot be scored gets a null value and its cause as outcome:
``parse_error:generation`` / ``parse_error:ground_truth``, ``no_inputs``,
``nested_function``, ``ground_truth:no_return`` (the ground truth raised or
ran out of time on every input: its behaviour was never seen, e.g. it needs
state or globals its file sets up elsewhere; identical exceptions would
score such a pair 1.0), or the function's execution outcome (``timeout``,
``timeout:cpu-safety-net`` and ``timeout:wall-safety-net``, the only
outcomes that depend on the machine's speed, ``forked``, ``exited``, ``killed``, ``missing_import:<module>``,
``load_error:<exception>``, ``class_method_failed``, ``not_found``,
``protocol`` or ``driver_error`` when the function's process broke the
driver's side, and ``sandbox:<status>`` when a sandbox run of that function
alone failed),
prefixed with ``ground_truth:`` when the ground truth is the one that failed
(it fails alike for both models), except a missing import (a property of
the environment) and a class that cannot be built (its ``__init__`` is the
shared context), which are no property of either function.

Methods (and properties, read) run on an instance built for every call by
the class's ``__init__`` as the program defines it: with no arguments when
it needs none, else with
argument lists drawn like inputs from ``__init__``'s signature (the first that
builds an instance is used, the same for both functions);
``class_method_failed`` when none does.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import logging
import math
import multiprocessing
import random
import resource
import sys
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaktrace import threadsafe_ast
from leaktrace.config_slice import read_slice
from leaktrace.configuration import schema_defaults
from leaktrace.sandbox import SandboxLimits, isolation_level, run_calls, steps, values
from leaktrace.seeding import derive_seed
from leaktrace.settings.counterfactual_execution import ExecutionSettings
from leaktrace.similarity import inputs as inputs_module
from leaktrace.similarity.inputs import Call, Callee, NotCallable, locate

log = logging.getLogger(__name__)

OK = "ok"
METRICS = ("execution", "execution_clone", "execution_s_a", "execution_s_b")
CONSTRUCTOR_CANDIDATES = 5
_DRIVER = Path(__file__).with_name("execution_driver.py")
# The driver's wall-clock safety net per function: at least this, 5 times its CPU safety net, twice that on
# a second try; the sandbox run's own limit lies past all of its functions' (execution_driver).
_FUNCTION_WALL_S = 10.0
_WALL_FACTOR = 5
_BATCH_OVERHEAD_S = 30.0  # the sandbox run's start and the driver's own work, beyond the functions' limits
_ACTIVE_MODULES = {
    "this",
    "antigravity",
    "__hello__",
    "__phello__",
    "idlelib",
    "tkinter",
    "turtle",
    "turtledemo",
    "webbrowser",
    "pdb",
    "code",
    "pydoc",
}


def default_execution_settings(**changes: Any) -> ExecutionSettings:
    """``similarity.execution`` at the schema's defaults (config/schema.yaml holds them), with ``changes``:
    for library callers outside the pipeline (benchmarks, tests)."""
    values = schema_defaults("similarity", "execution")
    return dataclasses.replace(read_slice(ExecutionSettings, values, "similarity.execution"), **changes)


@dataclass(frozen=True)
class Function:
    """One function to execute: its program and how to call it."""

    program: str
    callee: Callee
    constructors: tuple[Call, ...]
    inputs: tuple[Call, ...]


@dataclass(frozen=True)
class Executed:
    status: str  # "ok" or the cause
    outputs: tuple  # one per input, in order, when ok
    steps: tuple = ()  # the steps each call took, when ok
    cpu_s: tuple = ()  # and its CPU seconds (varies from run to run: for the log only)
    retries: int = 0  # calls past a safety net once that passed on the second try


@dataclass(frozen=True)
class PairScore:
    outcome: str
    s_a: float | None = None
    s_b: float | None = None

    @property
    def similarity(self) -> float | None:
        return None if self.s_a is None else (self.s_a + self.s_b) / 2


# -- running --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Execution:
    results: list[Executed]
    sandbox_runs: int
    sandbox_cpu_s: float  # the drivers' and their children's CPU time, as they report it


def execute(
    functions: Sequence[Function], settings: ExecutionSettings, *, workers: int, groups: Sequence[int] | None = None
) -> Execution:
    """Every function on its inputs, ``batch_size`` per sandbox run, ``workers`` runs
    at a time; functions of different ``groups`` (a number per function) never
    share a run. A batch whose run fails (a function killed the driver) is run
    again one function per run, so one hostile function costs only its own result."""
    if functions:  # refuse early, with the reason, where full isolation is asked for and missing
        isolation_level(_limits(settings, settings.batch_size))
    groups = [0] * len(functions) if groups is None else list(groups)
    if len(groups) != len(functions):
        raise ValueError(f"{len(functions)} functions but {len(groups)} groups")
    batches = []
    for group in sorted(set(groups)):
        members = [i for i, g in enumerate(groups) if g == group]
        batches += [
            members[start : start + settings.batch_size] for start in range(0, len(members), settings.batch_size)
        ]
    results: list[Executed | None] = [None] * len(functions)

    def run(batch: list[int]) -> tuple[int, float]:
        outcome, cpu = _run_batch([functions[i] for i in batch], settings)
        runs = 1
        if outcome is None:
            alone = [_run_batch([functions[i]], settings) for i in batch]
            outcome, cpu, runs = [o[0] for o, _ in alone], cpu + sum(c for _, c in alone), 1 + len(batch)
        for i, executed in zip(batch, outcome, strict=True):
            results[i] = executed
        return runs, cpu

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        counts = list(pool.map(run, batches))
    return Execution(results, sum(r for r, _ in counts), sum(c for _, c in counts))  # type: ignore[arg-type]


def _limits(settings: ExecutionSettings, n_functions: int) -> SandboxLimits:
    timeout = n_functions * 2 * max(_FUNCTION_WALL_S, _WALL_FACTOR * settings.function_cpu_s) + _BATCH_OVERHEAD_S
    sandbox = dataclasses.asdict(settings.sandbox) if settings.sandbox is not None else {}
    return SandboxLimits(**{**sandbox, "timeout_s": timeout, "cpu_s": math.ceil(timeout)})


def _run_batch(functions: Sequence[Function], settings: ExecutionSettings) -> tuple[list[Executed] | None, float]:
    """The batch's results (None when its run failed and it held more than one
    function; a single function's failed run is its outcome, ``sandbox:<status>``)
    and the CPU seconds the run reported."""
    limits = _limits(settings, len(functions))
    driver_settings = {
        "call_steps": settings.call_steps,
        "function_steps": settings.function_steps,
        "max_timeouts": settings.max_timeouts,
        "call_cpu_s": settings.call_cpu_s,
        "function_cpu_s": settings.function_cpu_s,
        "memory_mb": settings.function_memory_mb,
        "full_isolation": isolation_level(limits) == "full",
    }
    # One call per function: the harness holds the batch and hands the driver one job at a time.
    calls = [("_preload", (_stdlib_imports(functions),))]
    calls += [
        (
            "_run_item",
            (
                {
                    "program": f.program,
                    "name": f.callee.name,
                    "owner": list(f.callee.owner),
                    "binding": f.callee.binding,
                    "constructors": [values.encode(c) for c in f.constructors],
                    "inputs": [values.encode(c) for c in f.inputs],
                },
                driver_settings,
            ),
        )
        for f in functions
    ]
    calls.append(("_cpu", ()))
    program = (
        _DRIVER.read_text(encoding="utf-8")
        + "\n"
        + Path(steps.__file__).read_text(encoding="utf-8")
        + f"\n_VALUES_SOURCE = {Path(values.__file__).read_text()!r}\n"
    )
    result = run_calls(program, calls, limits)
    returned = (
        result.return_value if type(result.return_value) is tuple and len(result.return_value) == len(calls) else None
    )
    cpu = returned[-1] if returned is not None and type(returned[-1]) is float else 0.0
    replies = returned[1:-1] if returned is not None else None
    if result.status != "ok" or replies is None:
        return (None if len(functions) > 1 else [Executed(f"sandbox:{result.status}", ())]), cpu
    return [_executed(reply, len(f.inputs)) for reply, f in zip(replies, functions, strict=True)], cpu


def _stdlib_imports(functions: Sequence[Function]) -> list[str]:
    """The standard library modules the programs import at module level, but for
    those that act when imported (``this`` prints, ``antigravity`` opens a browser);
    and asyncio where a program defines a coroutine function (the driver runs it)."""
    names = set()
    for function in functions:
        tree = threadsafe_ast.parse(function.program)
        for node in tree.body:
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
        if any(isinstance(node, ast.AsyncFunctionDef) for node in ast.walk(tree)):
            names.add("asyncio")
    return sorted(
        name
        for name in names
        if name.partition(".")[0] in sys.stdlib_module_names and name.partition(".")[0] not in _ACTIVE_MODULES
    )


def _executed(reply: tuple, n_inputs: int) -> Executed:
    status, detail, outputs, steps, cpu, retries = reply
    if status == OK and not len(outputs) == len(steps) == len(cpu) == n_inputs:
        return Executed("protocol", ())
    if status in ("missing_import", "load_error"):
        status = f"{status}:{detail}"
    if status != OK:
        return Executed(status, (), retries=retries)
    return Executed(status, tuple(map(values.decode, outputs)), tuple(steps), tuple(cpu), retries)


# -- comparing -----------------------------------------------------------------------------------


def same_output(a: object, b: object, rel_tol: float, abs_tol: float) -> bool:
    """Whether two outputs (as the driver reports them) are the same; see the module's docstring."""
    if _is_number(a) and _is_number(b):
        if isinstance(a, complex) or isinstance(b, complex):
            a, b = complex(a), complex(b)
            return same_output(a.real, b.real, rel_tol, abs_tol) and same_output(a.imag, b.imag, rel_tol, abs_tol)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
    if type(a) is not type(b):
        return False
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same_output(x, y, rel_tol, abs_tol) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return a.keys() == b.keys() and all(same_output(a[k], b[k], rel_tol, abs_tol) for k in a)
    return values.encode(a) == values.encode(b)


def _is_number(value: object) -> bool:
    return type(value) in (int, float, complex)


def score_pair(
    truth: Sequence, generated: Sequence, set_a: Sequence[int], set_b: Sequence[int], settings: ExecutionSettings
) -> PairScore:
    """S_a and S_b from both functions' outputs on the same inputs (indices into them)."""
    if not set_a or not set_b:
        return PairScore("no_inputs")

    def share(indices: Sequence[int]) -> float:
        same = sum(same_output(truth[i], generated[i], settings.float_rel_tol, settings.float_abs_tol) for i in indices)
        return same / len(indices)

    return PairScore(OK, share(set_a), share(set_b))


def pair_metrics(score: PairScore, threshold: float) -> dict[str, float | None]:
    if score.s_a is None:
        return dict.fromkeys(METRICS)
    clone = float(score.s_a >= threshold and score.s_b >= threshold)
    return {
        "execution": score.similarity,
        "execution_clone": clone,
        "execution_s_a": score.s_a,
        "execution_s_b": score.s_b,
    }


def _valid(outputs: Sequence, indices: Sequence[int], n: int) -> list[int]:
    """The first ``n`` of ``indices`` on which the function returned; the first ``n`` when it returned on none."""
    returned = [i for i in indices if outputs[i][0] == "return"]
    return (returned or list(indices))[:n]


# -- a sample ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExecutionSample:
    """A ground truth and the generations to compare with it (None: not parsed)."""

    sample_id: str
    context: str
    signature: str
    continuation: str
    generations: dict[str, str | None]  # model -> function body
    test: str | None = None


@dataclass(frozen=True)
class _Plan:
    """What to run for one sample: the ground truth on every input, each parsed
    generation on I_a and its own draws; ``failed`` holds causes decided before running."""

    truth: Function | None
    generations: dict[str, Function]
    set_a: tuple[int, ...]  # indices into truth.inputs: the test inputs
    drawn_a: tuple[int, ...]  # the draws for I_a
    drawn_b: dict[str, tuple[int, ...]]  # per model, indices into truth.inputs
    failed: dict[str, str]  # model -> cause


def plan_sample(sample: ExecutionSample, settings: ExecutionSettings, seed: int) -> _Plan:
    line = sample.context.count("\n") + 1
    truth_program = sample.context + sample.signature + sample.continuation
    try:
        callee = locate(truth_program, line)
    except NotCallable:
        return _Plan(None, {}, (), (), {}, dict.fromkeys(sample.generations, "nested_function"))
    except (SyntaxError, ValueError):
        return _Plan(None, {}, (), (), {}, dict.fromkeys(sample.generations, "parse_error:ground_truth"))
    tests = inputs_module.distinct(
        inputs_module.calls_in_test(sample.test, [callee.name, "candidate"]) if sample.test else []
    )
    tests = _sampled(tests, settings.n_inputs, derive_seed(seed, "execution", sample.sample_id, "tests"))
    examples = tests + _docstring_calls(sample, callee)
    observed = inputs_module.observed_values(callee.parameters, examples)
    strategy = inputs_module.call_strategy(callee.parameters, observed, callee.constants)
    top_up = settings.candidates if len(tests) < settings.n_inputs else 0
    drawn = (
        inputs_module.draw(strategy, top_up, derive_seed(seed, "execution", sample.sample_id, "a")) if top_up else []
    )
    constructors = _constructors(callee, sample, seed)
    all_inputs: dict[bytes, int] = {}

    def index(calls: Sequence[Call]) -> tuple[int, ...]:
        out = []
        for call in calls:
            key = values.encode(call)
            out.append(all_inputs.setdefault(key, len(all_inputs)))
        return tuple(out)

    set_a, drawn_a = index(tests), index(drawn)
    generations, drawn_b, failed = {}, {}, {}
    for model, body in sample.generations.items():
        program = None if body is None else sample.context + sample.signature + body
        try:
            generated = locate(program, line) if program is not None else None
        except (SyntaxError, ValueError):
            generated = None
        if generated is None or generated.name != callee.name:
            failed[model] = "parse_error:generation"
            continue
        own = inputs_module.call_strategy(callee.parameters, observed, generated.constants)
        drawn_b[model] = index(
            inputs_module.draw(own, settings.candidates, derive_seed(seed, "execution", sample.sample_id, "b", model))
        )
        generations[model] = (program, generated)
    calls = tuple(values.decode(key) for key in all_inputs)
    truth = Function(truth_program, callee, constructors, calls)
    functions = {}
    for model, (program, generated) in generations.items():
        used = sorted(set(set_a) | set(drawn_a) | set(drawn_b[model]))
        functions[model] = Function(program, generated, constructors, tuple(calls[i] for i in used))
    return _Plan(truth, functions, set_a, drawn_a, drawn_b, failed)


def _sampled(calls: list[Call], n: int, sample_seed: int) -> list[Call]:
    """At most ``n`` of ``calls``, a seeded sample kept in source order."""
    if len(calls) <= n:
        return calls
    keep = sorted(random.Random(sample_seed).sample(range(len(calls)), n))
    return [calls[i] for i in keep]


def _docstring_calls(sample: ExecutionSample, callee: Callee) -> list[Call]:
    """The calls in the ground truth's docstring examples (``>>> name(...)``, ``name(...) == ...``)."""
    doctest_lines = [line.strip()[4:] for line in sample.continuation.splitlines() if line.strip().startswith(">>> ")]
    return inputs_module.distinct(inputs_module.calls_in_test("\n".join(_parseable(doctest_lines)), [callee.name]))


def _parseable(lines: Sequence[str]) -> list[str]:
    out = []
    for line in lines:
        try:
            compile(line, "<doctest>", "eval")
        except (SyntaxError, ValueError):
            continue
        out.append(line)
    return out


def _constructors(callee: Callee, sample: ExecutionSample, seed: int) -> tuple[Call, ...]:
    """Argument lists to build a method's instance with, tried in order."""
    if callee.binding not in ("method", "property"):
        return ()
    parameters = callee.constructor or ()
    if all(p.has_default for p in parameters):
        return (((), {}),)
    observed = inputs_module.observed_values(parameters, [])
    strategy = inputs_module.call_strategy(parameters, observed, ())
    return tuple(
        inputs_module.draw(
            strategy, CONSTRUCTOR_CANDIDATES, derive_seed(seed, "execution", sample.sample_id, "constructor")
        )
    )


@dataclass(frozen=True)
class ExecutionReport:
    scores: dict[tuple[str, str], PairScore]  # (sample id, model) -> its pair's score or cause
    draw_s: float  # wall-clock seconds drawing inputs
    draw_cpu_s: float  # their CPU seconds (this process and its pool's)
    execute_s: float  # wall-clock seconds executing
    sandbox_runs: int
    sandbox_cpu_s: float
    safety_net_retries: int = 0  # calls past a safety net once, decided by their second try

    def summary(self) -> str:
        functions = len({sample for sample, _ in self.scores})
        return (
            f"{len(self.scores)} pairs of {functions} ground truths: inputs drawn in {self.draw_s:.1f} s "
            f"({self.draw_cpu_s:.1f} s CPU), executed in {self.execute_s:.1f} s in {self.sandbox_runs} sandbox runs "
            f"({self.sandbox_cpu_s:.1f} s CPU in the sandbox); {self.safety_net_retries} calls past a CPU or "
            "wall-clock safety net once, decided by their second try at twice its limit"
        )


def execution_scores(
    samples: Sequence[ExecutionSample], settings: ExecutionSettings, seed: int, *, workers: int
) -> ExecutionReport:
    """Every (sample, model) pair's score or cause, with what it cost."""
    started, cpu_started = time.perf_counter(), _cpu_seconds()
    plans = _plan_all(samples, settings, seed, workers)
    drawn, draw_cpu = time.perf_counter() - started, _cpu_seconds() - cpu_started
    started = time.perf_counter()
    functions: list[Function] = []
    slots: list[tuple[int, str | None]] = []
    for i, plan in enumerate(plans):
        if plan.truth is None or not plan.generations:
            continue
        functions.append(plan.truth)
        slots.append((i, None))
        for model, function in plan.generations.items():
            functions.append(function)
            slots.append((i, model))
    # Ground truths (group 0) and generations (group 1) run in sandbox runs of their own: no
    # generation's process ever holds a ground truth's program or outputs, even as freed memory.
    execution = execute(functions, settings, workers=workers, groups=[int(model is not None) for _, model in slots])
    executed_s = time.perf_counter() - started
    by_slot = dict(zip(slots, execution.results, strict=True))
    scores = {}
    for i, (sample, plan) in enumerate(zip(samples, plans, strict=True)):
        for model in sample.generations:
            if model in plan.failed:
                scores[(sample.sample_id, model)] = PairScore(plan.failed[model])
                continue
            scores[(sample.sample_id, model)] = _pair(plan, by_slot[(i, None)], by_slot[(i, model)], model, settings)
    retries = sum(result.retries for result in execution.results)
    return ExecutionReport(
        scores, drawn, draw_cpu, executed_s, execution.sandbox_runs, execution.sandbox_cpu_s, retries
    )


def _cpu_seconds() -> float:
    """This process's CPU time and that of its reaped children (the planning pool's)."""
    return sum(
        u.ru_utime + u.ru_stime for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


def _plan_all(samples: Sequence[ExecutionSample], settings: ExecutionSettings, seed: int, workers: int) -> list[_Plan]:
    """Every sample's plan, in ``workers`` processes (drawing inputs is most of the host's work)."""
    if workers <= 1 or len(samples) < 2 * workers:
        return [plan_sample(s, settings, seed) for s in samples]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(
            pool.map(
                functools.partial(plan_sample, settings=settings, seed=seed),
                samples,
                chunksize=max(1, len(samples) // (4 * workers)),
            )
        )


def _pair(plan: _Plan, truth: Executed, generated: Executed, model: str, settings: ExecutionSettings) -> PairScore:
    if truth.status != OK:
        shared = truth.status.startswith("missing_import:") or truth.status == "class_method_failed"
        return PairScore(truth.status if shared else f"ground_truth:{truth.status}")
    if generated.status != OK:
        return PairScore(generated.status)
    used = sorted(set(plan.set_a) | set(plan.drawn_a) | set(plan.drawn_b[model]))
    position = {index: j for j, index in enumerate(used)}
    truth_outputs = [truth.outputs[i] for i in used]
    if not any(output[0] == "return" for output in truth_outputs):
        return PairScore("ground_truth:no_return")
    n = settings.n_inputs
    set_a = [position[i] for i in plan.set_a]
    set_a += _valid(truth_outputs, [position[i] for i in plan.drawn_a if i not in plan.set_a], n - len(set_a))
    set_b = _valid(generated.outputs, [position[i] for i in plan.drawn_b[model]], n)
    return score_pair(truth_outputs, generated.outputs, set_a, set_b, settings)


def coverage(outcomes: Sequence[str]) -> dict[str, int]:
    """Pairs per outcome, "ok" first, then by count."""
    counts = Counter(outcomes)
    return dict(sorted(counts.items(), key=lambda item: (item[0] != OK, -item[1], item[0])))
