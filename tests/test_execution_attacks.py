"""Generations that try to forge an execution clone: a
wrong function that inspects the process it runs in, to find the ground
truth's program or its outputs on the current input, still scores as wrong;
an equivalent function beside them still scores 1.0.

Each attack returns what it found when it finds it, else ``[]`` (wrong for
every non-empty list). When the driver held its whole batch (ground truth
included) in the process each function forked from, every one of them
scored an exact clone. Needs namespaces and a writable cgroup; skips,
saying what is missing, elsewhere.
"""

import pytest

from leaktrace.sandbox import SandboxLimits, SandboxUnavailable, isolation_level, run_calls
from leaktrace.similarity.execution import ExecutionSample, ExecutionSettings, _limits, execution_scores, pair_metrics

SETTINGS = ExecutionSettings(candidates=10, function_cpu_s=1.0)
CONTEXT = "from typing import List\n\n\n"
SIGNATURE = "def shift(xs: List[int], k: int) -> List[int]:\n"
TRUTH = "    return [x + k for x in xs]\n"
TEST = "def check(candidate):\n    assert candidate([1, 2], 3) == [4, 5]\n    assert candidate([5], -1) == [4]\n"


def _body(source: str) -> str:
    return "".join(f"    {line}\n" if line else "\n" for line in source.splitlines())


# Every string reachable (a few levels deep) from a value; each attack's own program says FORGER, so it
# can tell the other programs (the ground truth's) from its own.
_STRINGS = """\
def strings(value, depth=0, seen=None):
    seen = set() if seen is None else seen
    if isinstance(value, str):
        yield value
        return
    if depth > 6 or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, dict):
        items = list(value.keys()) + list(value.values())
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        return
    for item in items:
        yield from strings(item, depth + 1, seen)

def run_other(text):
    if "def shift" not in text or "FORGER" in text:
        return None
    namespace = {}
    try:
        exec(text, namespace)
        return namespace["shift"](xs, k)
    except Exception:
        return None
"""

ATTACKS = {
    # the driver's frames: its locals and globals, up the stack, for another program's source to exec
    "frames": _body(
        _STRINGS
        + """\
import sys
frame = sys._getframe(1)
while frame is not None:
    for scope in (frame.f_locals, frame.f_globals):
        for text in list(strings(scope)):
            found = run_other(text)
            if found is not None:
                return found
    frame = frame.f_back
return []
"""
    ),
    # every object gc tracks, for another program's source to exec
    "gc_source": _body(
        _STRINGS
        + """\
import gc
for holder in gc.get_objects():
    if isinstance(holder, (dict, list, tuple)):
        for text in list(strings(holder, 5)):
            found = run_other(text)
            if found is not None:
                return found
return []
"""
    ),
    # every object gc tracks, for the ground truth's job and its outputs: its output on these arguments
    "gc_outputs": _body("""\
import gc, sys
codec = sys.modules["leaktrace.sandbox.values"]
jobs, replies = [], []
for held in gc.get_objects():
    if type(held) is dict and isinstance(held.get("program"), str) and "FORGER" not in held["program"]:
        jobs.append(held)
    elif type(held) is tuple and len(held) == 3 and held[0] == "ok" and type(held[2]) is list:
        replies.append(held[2])
    elif type(held) is list and held and all(type(frame) is bytes for frame in held):
        replies.append(held)
for job in jobs:
    inputs = job.get("inputs") or []
    for position, encoded in enumerate(inputs):
        try:
            call = codec.decode(encoded)
        except Exception:
            continue
        if list(call[0]) == [xs, k] and not call[1]:
            for outputs in replies:
                if len(outputs) == len(inputs):
                    try:
                        output = codec.decode(outputs[position])
                    except Exception:
                        continue
                    if output[0] == "return":
                        return output[1]
return []
"""),
    # the driver's script, as written to the sandbox's scratch directory, for the batch it carried
    "script": _body(
        _STRINGS
        + """\
import sys
codec = sys.modules["leaktrace.sandbox.values"]
try:
    text = open(sys.modules["__main__"].__file__).read()
except Exception:
    return []
for line in text.splitlines():
    if line.startswith("_JOBS = "):
        for source in list(strings(codec.decode(eval(line[len("_JOBS = "):])))):
            found = run_other(source)
            if found is not None:
                return found
return []
"""
    ),
}
EQUIVALENT = "    # FORGER's honest twin\n    return [k + x for x in xs]\n"


@pytest.fixture(scope="module")
def isolated():
    try:
        isolation_level(_limits(SETTINGS, 1))
    except SandboxUnavailable as error:
        pytest.skip(str(error))


@pytest.fixture(scope="module")
def scores(isolated):
    generations = {name: f"    # FORGER\n{body}" for name, body in ATTACKS.items()} | {"equivalent": EQUIVALENT}
    sample = ExecutionSample("shift", CONTEXT, SIGNATURE, TRUTH, generations, TEST)
    return execution_scores([sample], SETTINGS, 7, workers=1).scores


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_wrong_function_that_looks_for_the_ground_truth_scores_as_wrong(scores, attack):
    score = scores[("shift", attack)]
    assert score.outcome == "ok"
    assert score.s_a < 0.8 and score.similarity < 1.0
    assert pair_metrics(score, SETTINGS.clone_threshold)["execution_clone"] == 0.0


def test_an_equivalent_function_in_the_same_run_still_scores_one(scores):
    score = scores[("shift", "equivalent")]
    assert (score.outcome, score.s_a, score.s_b) == ("ok", 1.0, 1.0)
    assert pair_metrics(score, SETTINGS.clone_threshold)["execution_clone"] == 1.0


# Each call forks a child, as the execution driver does for a function, and the child returns every
# string starting with "job-" it can find on its stack or through gc; the previous call's reply held
# the previous job's name.
LOOK = """
import gc, os, sys

def scan():
    found = set()
    for held in gc.get_objects():
        members = list(held.keys()) + list(held.values()) if type(held) is dict else held if type(held) in (list, tuple) else ()
        found.update(m for m in members if type(m) is str and m.startswith("job-") and m != "job-")
    frame = sys._getframe()
    while frame is not None:
        found.update(v for v in frame.f_locals.values() if type(v) is str and v.startswith("job-") and v != "job-")
        frame = frame.f_back
    return sorted(found)

def look(job):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write_end, " ".join(scan()).encode())
        os._exit(0)
    os.close(write_end)
    data = b""
    while True:
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        data += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    return job, data.decode().split()
"""


@pytest.mark.usefixtures("isolated")
def test_a_run_of_calls_holds_one_call_at_a_time():
    jobs = [f"job-{i}" for i in range(4)]
    result = run_calls(LOOK, [("look", (job,)) for job in jobs], SandboxLimits(timeout_s=30, cpu_s=10))
    assert result.status == "ok", result.error
    assert result.return_value == tuple((job, [job]) for job in jobs)


@pytest.mark.usefixtures("isolated")
def test_a_call_that_raises_ends_a_run_of_calls_with_its_reason():
    result = run_calls("def fail():\n    raise ValueError('no')\n", [("fail", ())], SandboxLimits(timeout_s=30))
    assert (result.status, result.error) == ("error", "fail: ValueError: no")
