"""Execution similarity (HyClone Stage 2 without an LLM): scores, causes, inputs.

One sandboxed run of all the functions below (module fixture) serves the
scoring tests; they need namespaces and a writable cgroup and skip, saying
what is missing, elsewhere.
"""

import math
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from leaktrace.artifacts import write_table
from leaktrace.data.functions import FUNCTIONS_SCHEMA
from leaktrace.errors import InputError
from leaktrace.sandbox import SandboxUnavailable, isolation_level, values
from leaktrace.similarity.execution import (
    Executed,
    ExecutionSample,
    ExecutionSettings,
    Function,
    _limits,
    default_execution_settings,
    execute,
    execution_scores,
    pair_metrics,
    plan_sample,
    same_output,
)
from leaktrace.similarity.generations import GENERATIONS_SCHEMA
from leaktrace.similarity.hyclone_screen import read_screen
from leaktrace.similarity.inputs import calls_in_test, locate
from leaktrace.similarity.table import SIMILARITY_FAMILY_SCHEMA
from leaktrace.stages.counterfactual_execution import counterfactual_execution

SETTINGS = default_execution_settings(candidates=10)
CONTEXT = "from typing import List\n\n\n"
SIGNATURE = "def shift(xs: List[int], k: int) -> List[int]:\n"
TRUTH = '    """Add k to every item.\n    >>> shift([1, 2], 3)\n    [4, 5]\n    """\n    return [x + k for x in xs]\n'
TEST = "def check(candidate):\n    assert candidate([1, 2], 3) == [4, 5]\n    assert candidate([], 7) == []\n"
GENERATIONS = {
    "same": "    out = []\n    for x in xs:\n        out.append(k + x)\n    return out\n",
    "different": "    return [x * k for x in xs]\n",
    "hangs": "    while True:\n        pass\n",
    "forks": "    import os\n    os.fork()\n    return [x + k for x in xs]\n",
    "exits": "    import sys\n    sys.exit(0)\n",
    "missing": "    import numpy\n    return list(numpy.add(xs, k))\n",
    "unparsed": None,
}
CLASS_CONTEXT = "class Scale:\n    def __init__(self, factor: int):\n        self.factor = factor\n\n"
METHOD = "    def apply(self, x: int) -> int:\n"
BROKEN_CLASS = "class Broken:\n    def __init__(self):\n        raise RuntimeError('no')\n\n"
SAMPLES = [
    ExecutionSample("function", CONTEXT, SIGNATURE, TRUTH, GENERATIONS, TEST),
    ExecutionSample(
        "method",
        CLASS_CONTEXT,
        METHOD,
        "        return self.factor * x\n",
        {"same": "        return x * self.factor\n", "different": "        return self.factor + x\n"},
    ),
    ExecutionSample("no-instance", BROKEN_CLASS, METHOD, "        return x\n", {"same": "        return x\n"}),
    ExecutionSample("broken-truth", CONTEXT, SIGNATURE, "    return [x +\n", {"same": "    return xs\n"}),
    ExecutionSample(
        "async",
        "",
        "async def twice(x: int) -> int:\n",
        "    return 2 * x\n",
        {"same": "    return x + x\n", "different": "    return x\n"},
    ),
    ExecutionSample(
        "needs-globals",
        "",
        "def look_up(key: str) -> int:\n",
        "    return TABLE[key]\n",
        {"same": "    return TABLE[key]\n"},
    ),
]


@pytest.fixture(scope="module")
def isolated():
    try:
        isolation_level(_limits(SETTINGS, 1))
    except SandboxUnavailable as error:
        pytest.skip(str(error))


@pytest.fixture(scope="module")
def scores(isolated):
    return execution_scores(SAMPLES, SETTINGS, 7, workers=2).scores


def test_the_same_function_scores_one_and_is_a_clone(scores):
    for sample in ("function", "method", "async"):
        score = scores[(sample, "same")]
        assert (score.outcome, score.s_a, score.s_b) == ("ok", 1.0, 1.0)
        assert pair_metrics(score, 0.8)["execution_clone"] == 1.0


# Spins in C code, where no step is counted: only the CPU safety net stops it.
C_SPIN = "    import itertools\n    sum(itertools.repeat(0, 10**14))\n"


@pytest.mark.usefixtures("isolated")
def test_a_call_past_the_safety_net_once_is_run_again_at_twice_its_limit_and_counted():
    # the first call spins; the second try, in a fresh child, finds the file it left in the scratch directory
    slow_once = (
        "    import os\n    if not os.path.exists('ran-once'):\n        open('ran-once', 'w').close()\n"
        + C_SPIN.replace("    ", "        ")
        + "    return [x + k for x in xs]\n"
    )
    sample = ExecutionSample("slow-once", CONTEXT, SIGNATURE, TRUTH, {"slow-once": slow_once}, TEST)
    settings = default_execution_settings(candidates=3, call_cpu_s=0.2)
    report = execution_scores([sample], settings, 7, workers=1)
    score = report.scores[("slow-once", "slow-once")]
    assert (score.outcome, score.s_a, score.s_b) == ("ok", 1.0, 1.0)
    assert report.safety_net_retries == 1


@pytest.mark.usefixtures("isolated")
def test_a_safety_net_that_decides_is_recorded_as_the_outcome():
    sample = ExecutionSample("spins", CONTEXT, SIGNATURE, TRUTH, {"spins": C_SPIN + "    return xs\n"}, TEST)
    truth_spins = ExecutionSample("truth-spins", CONTEXT, SIGNATURE, C_SPIN, {"same": TRUTH}, TEST)
    settings = default_execution_settings(candidates=3, call_cpu_s=0.2)
    report = execution_scores([sample, truth_spins], settings, 7, workers=1)
    assert report.scores[("spins", "spins")].outcome == "timeout:cpu-safety-net"
    assert report.scores[("truth-spins", "same")].outcome == "ground_truth:timeout:cpu-safety-net"
    assert report.safety_net_retries == 0  # each fired twice: the outcome, not a retry


COUNT = "def count(n: int) -> int:\n    total = 0\n    for i in range(n):\n        total += i\n    return total\n"


def _counted_calls(settings: ExecutionSettings, ns: list[int]) -> Executed:
    function = Function(COUNT, locate(COUNT, 1), (), tuple(((n,), {}) for n in ns))
    return execute([function], settings, workers=1).results[0]


@pytest.fixture()
def busy_machine():
    """Two processes spinning at the same priority as the test, one per core here."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    yield
    for spinner in spinners:
        spinner.kill()
        spinner.wait()


@pytest.mark.usefixtures("isolated")
def test_steps_decide_a_call_the_same_on_an_idle_and_a_busy_machine(request):
    # a call takes one step for itself and one per iteration: past 1000 steps is the budget's timeout
    settings = default_execution_settings(call_steps=1000, function_steps=10_000)
    ns = [10, 998, 999, 3000]
    idle = _counted_calls(settings, ns)
    request.getfixturevalue("busy_machine")
    busy = _counted_calls(settings, ns)
    for result in (idle, busy):
        assert result.status == "ok"
        assert result.outputs[:3] == tuple(("return", n * (n - 1) // 2, "", None) for n in ns[:3])
        assert result.outputs[3] == ("timeout",)
        assert result.steps == (11, 999, 1000, 1001)
        assert result.retries == 0


@pytest.mark.usefixtures("isolated", "busy_machine")
def test_a_call_within_its_steps_completes_on_a_busy_machine():
    # about 0.1 s of CPU time a call, the old CPU limit, here, with the machine's cores taken
    n = default_execution_settings().call_steps - 2
    result = _counted_calls(default_execution_settings(), [n, n])
    assert result.status == "ok"
    assert result.outputs == (("return", n * (n - 1) // 2, "", None),) * 2
    assert result.steps == (n + 1, n + 1)


@pytest.mark.usefixtures("isolated")
def test_the_calls_together_past_the_functions_steps_time_the_function_out():
    settings = default_execution_settings(call_steps=1000, function_steps=2500)
    assert _counted_calls(settings, [900, 900]).status == "ok"
    assert _counted_calls(settings, [900, 900, 900]).status == "timeout"
    assert _counted_calls(settings, [10, 5000, 5000]).status == "ok"  # 11 + 1001 + 1001 steps
    assert _counted_calls(settings, [10, 5000, 5000, 5000]).status == "timeout"


@pytest.mark.usefixtures("isolated")
def test_more_calls_past_their_steps_than_allowed_time_the_function_out():
    settings = default_execution_settings(call_steps=100, max_timeouts=2)
    assert _counted_calls(settings, [500, 5, 500]).outputs[::2] == (("timeout",),) * 2
    assert _counted_calls(settings, [500, 5, 500, 500]).status == "timeout"


def test_different_behaviour_scores_low(scores):
    for sample in ("function", "method", "async"):
        score = scores[(sample, "different")]
        assert score.outcome == "ok"
        assert score.similarity < 0.5
        assert pair_metrics(score, 0.8)["execution_clone"] == 0.0


def test_hostile_generations_are_counted_by_cause(scores):
    causes = {
        model: scores[("function", model)].outcome for model in ("hangs", "forks", "exits", "missing", "unparsed")
    }
    assert causes == {
        "hangs": "timeout",
        "forks": "forked",
        "exits": "exited",
        "missing": "missing_import:numpy",
        "unparsed": "parse_error:generation",
    }
    assert all(scores[("function", model)].similarity is None for model in causes)


@pytest.mark.usefixtures("isolated")
def test_a_function_that_kills_the_driver_spoils_no_other_result():
    killer = ExecutionSample(
        "killer",
        CONTEXT,
        SIGNATURE,
        TRUTH,
        {"kills": "    import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)\n", "same": TRUTH},
    )
    settings = default_execution_settings(candidates=3, batch_size=3)  # one batch: the truth, the killer, the clone
    report = execution_scores([killer], settings, 7, workers=1)
    assert report.scores[("killer", "kills")].outcome == "sandbox:killed"
    assert report.scores[("killer", "same")].similarity == 1.0
    assert report.sandbox_runs == 4  # the batch, then each function alone


def test_unbuildable_classes_unparseable_and_never_returning_ground_truths_are_counted(scores):
    assert scores[("no-instance", "same")].outcome == "class_method_failed"
    assert scores[("broken-truth", "same")].outcome == "parse_error:ground_truth"
    assert scores[("needs-globals", "same")].outcome == "ground_truth:no_return"  # not 1.0 for equal NameErrors


def test_inputs_are_the_benchmark_tests_then_seeded_draws_the_same_in_another_process():
    plan = plan_sample(SAMPLES[0], SETTINGS, 7)
    calls = plan.truth.inputs
    assert [calls[i] for i in plan.set_a] == [(([1, 2], 3), {}), (([], 7), {})]
    assert len(plan.drawn_a) >= 5 and len(plan.drawn_b["same"]) >= 5
    assert all(type(x) is int for (xs, k), _ in calls for x in xs + [k])
    script = (
        "from leaktrace.sandbox import values\n"
        "from leaktrace.similarity.execution import ExecutionSample, default_execution_settings, plan_sample\n"
        f"sample = ExecutionSample('function', {CONTEXT!r}, {SIGNATURE!r}, {TRUTH!r}, {GENERATIONS!r}, {TEST!r})\n"
        "plan = plan_sample(sample, default_execution_settings(candidates=10), 7)\n"
        "print(values.encode(plan.truth.inputs).hex())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(Path(__file__).parents[1] / "workflow")}
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    assert other.stdout.strip() == values.encode(calls).hex()


def test_draws_do_not_depend_on_the_modules_the_process_imported(tmp_path):
    """Hypothesis mixes into its draws constants from every "local" module
    the process has imported (outside site-packages and the standard
    library): a fresh interpreter and a fork of the fork server drew other
    inputs (the default run's SLURM proof, 2026-11-27). Draws of one seed
    before and after importing a module full of other constants are equal."""
    (tmp_path / "constant_pool.py").write_text(
        "VALUES = [" + ", ".join(str(7919 * k + 13) for k in range(200)) + "]\n"
        "WORDS = [" + ", ".join(repr(f"zq{k}x") for k in range(200)) + "]\n"
    )
    script = (
        "import sys\n"
        "from hypothesis import strategies as st\n"
        "from leaktrace.sandbox import values\n"
        "from leaktrace.similarity.inputs import draw\n"
        "strategy = st.tuples(st.integers(-10**7, 10**7), st.text(max_size=8), st.lists(st.integers(0, 10**7), max_size=4))\n"
        "before = draw(strategy, 300, 11)\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import constant_pool\n"
        "after = draw(strategy, 300, 11)\n"
        "print(len(before), values.encode(before) == values.encode(after))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "workflow")}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    ).stdout.split()
    assert int(out[0]) > 250 and out[1] == "True"


def test_outputs_are_the_same_within_tolerance_and_by_exception_type():
    def returned(value):
        return ("return", value, "", None)

    assert same_output(returned(0.1 + 0.2), returned(0.3), 1e-6, 1e-9)
    assert same_output(returned([1, {"a": 2.0}]), returned([1.0, {"a": 2}]), 1e-6, 1e-9)
    assert same_output(returned(math.nan), returned(math.nan), 1e-6, 1e-9)
    assert not same_output(returned(1.0), returned(1.001), 1e-6, 1e-9)
    assert not same_output(returned(True), returned(1), 1e-6, 1e-9)
    assert not same_output(returned((1, 2)), returned([1, 2]), 1e-6, 1e-9)
    assert same_output(("raise", "ValueError"), ("raise", "ValueError"), 1e-6, 1e-9)
    assert not same_output(("raise", "ValueError"), ("raise", "TypeError"), 1e-6, 1e-9)
    assert not same_output(("raise", "ValueError"), returned(None), 1e-6, 1e-9)


def test_benchmark_inputs_are_the_literal_calls_of_the_function_or_candidate():
    test = (
        "def check(candidate):\n    assert candidate(1, b=[2]) == 3\n    assert shift(x, 1)\n    assert shift('a', 2)\n"
    )
    assert calls_in_test(test, ["shift", "candidate"]) == [((1,), {"b": [2]}), (("a", 2), {})]


def test_the_stage_writes_the_long_format_with_outcomes(tmp_path):
    generations = [
        {"sample_id": "s", "model": model, "prompt_tokens": 3, "generated": "x", "function": "x", "parsed": False}
        for model in ("target", "reference")
    ]
    write_table(generations, GENERATIONS_SCHEMA, tmp_path / "generations.parquet")
    write_table(
        [
            {
                "sample_id": "s",
                "kept": True,
                "reason": None,
                "body_lines": 1,
                "n_chars": 10,
                "context": CONTEXT,
                "signature": SIGNATURE,
                "continuation": TRUTH,
            }
        ],
        FUNCTIONS_SCHEMA,
        tmp_path / "functions.parquet",
    )
    out = tmp_path / "similarity_execution.parquet"
    counterfactual_execution(
        tmp_path / "generations.parquet", tmp_path / "functions.parquet", default_execution_settings(), 7, out
    )
    table = pq.read_table(out)
    assert table.column_names == [
        "sample_id",
        "metric",
        "target",
        "reference",
        "delta",
        "target_outcome",
        "reference_outcome",
    ]
    rows = table.to_pylist()
    assert [r["metric"] for r in rows] == ["execution", "execution_clone", "execution_s_a", "execution_s_b"]
    assert all(r["target"] is None and r["target_outcome"] == "parse_error:generation" for r in rows)


def _screen_table(path, rows):
    write_table(
        [
            {
                "sample_id": sid,
                "metric": "hyclone_screen",
                "target": t,
                "reference": r,
                "delta": None if t is None or r is None else t - r,
                "target_outcome": "ok" if t is not None else "unparseable_answer",
                "reference_outcome": "ok" if r is not None else "unparseable_answer",
            }
            for sid, t, r in rows
        ],
        SIMILARITY_FAMILY_SCHEMA,
        path,
    )
    return path


def test_hyclone_screen_gates_stage_2_model_by_model(tmp_path, isolated):
    """The paper runs Stage 2 on Stage 1's candidates only: here the screen passes s1's target (run: a clone),
    not s1's reference (0.0) and has no answer for s2's target; s2's reference passes and runs."""
    generations = [
        {"sample_id": sid, "model": model, "prompt_tokens": 3, "generated": body, "function": body, "parsed": True}
        for sid in ("s1", "s2")
        for model, body in (("target", GENERATIONS["same"]), ("reference", GENERATIONS["same"]))
    ]
    write_table(generations, GENERATIONS_SCHEMA, tmp_path / "generations.parquet")
    write_table(
        [
            {
                "sample_id": sid,
                "kept": True,
                "reason": None,
                "body_lines": 1,
                "n_chars": 10,
                "context": CONTEXT,
                "signature": SIGNATURE,
                "continuation": TRUTH,
            }
            for sid in ("s1", "s2")
        ],
        FUNCTIONS_SCHEMA,
        tmp_path / "functions.parquet",
    )
    screen = _screen_table(tmp_path / "similarity_judges.parquet", [("s1", 1.0, 0.0), ("s2", None, 1.0)])
    out = tmp_path / "similarity_execution.parquet"
    counterfactual_execution(
        tmp_path / "generations.parquet",
        tmp_path / "functions.parquet",
        default_execution_settings(),
        7,
        out,
        screen=screen,
    )
    rows = {(r["sample_id"], r["metric"]): r for r in pq.read_table(out).to_pylist()}
    s1, s2 = rows[("s1", "execution")], rows[("s2", "execution")]
    assert (s1["target"], s1["target_outcome"]) == (1.0, "ok")
    assert (s1["reference"], s1["reference_outcome"]) == (None, "screen:no_clone")
    assert (s2["target"], s2["target_outcome"]) == (None, "screen:unparseable_answer")
    assert (s2["reference"], s2["reference_outcome"]) == (1.0, "ok")


def test_a_screen_table_without_the_screen_is_bad_input(tmp_path):
    write_table([], SIMILARITY_FAMILY_SCHEMA, tmp_path / "similarity_judges.parquet")
    with pytest.raises(InputError, match="no 'hyclone_screen' rows"):
        read_screen(tmp_path / "similarity_judges.parquet")
