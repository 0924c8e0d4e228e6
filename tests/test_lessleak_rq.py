"""LessLeak-Bench's RQ4 (leakage_rq4): a scan's verified labels as the
ground truth of the gray-box detectors, on tiny hand-made tables."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import roc_auc_score

from leaktrace.config_slice import SliceError, read_slice
from leaktrace.evaluate.leak_detection import balanced, leak_detection_rows, precision_at_k
from leaktrace.settings.leakage_rq3 import Rq3Runs, Rq3Settings
from leaktrace.settings.leakage_rq4 import Rq4RankingSettings, Rq4Settings
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.score import TokenBatch
from leaktrace.stages.leakage_rq4 import rq4


def test_precision_at_k_counts_leaked_among_the_highest_scores():
    labels = np.array([True, False, True, False])
    scores = np.array([[0.9, 0.8, 0.1, 0.0], [0.0, 0.1, 0.8, 0.9]])
    np.testing.assert_allclose(precision_at_k(labels, scores, [1, 2, 3]), [[1.0, 0.5, 2 / 3], [0.0, 0.5, 1 / 3]])
    assert precision_at_k(labels, scores[0], [4]).tolist() == [0.5]
    # ties at the cut count at their share of leaked samples, whatever their order
    tied = np.array([[0.9, 0.5, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5]])
    np.testing.assert_allclose(precision_at_k(labels, tied, [1, 2]), [[1.0, 0.5 + 0.5 / 3], [0.5, 0.5]])


def test_balanced_keeps_the_smaller_class_whole():
    labels = np.array([True] * 3 + [False] * 7)
    keep = balanced([str(i) for i in range(10)], labels, np.random.default_rng(0))
    assert labels[keep].sum() == 3 and (~labels[keep]).sum() == 3
    assert set(np.flatnonzero(labels)) <= set(keep)


def _scores(values: dict[str, dict[str, float]]) -> list[dict]:
    return [
        {"sample_id": sid, "method": m, "family": m, "score": s, "decision": None}
        for m, by_id in values.items()
        for sid, s in by_id.items()
    ]


def test_rows_against_sklearn_and_the_balanced_top_k():
    rng = np.random.default_rng(1)
    ids = [f"s{i:02d}" for i in range(30)]
    leaked = set(ids[:10])
    noisy = {i: float(rng.normal(1.0 if i in leaked else 0.0)) for i in ids}
    perfect = {i: float(i in leaked) + 0.01 * n for n, i in enumerate(ids)}
    rows = leak_detection_rows(
        _scores({"noisy": noisy, "perfect": perfect}), leaked, set(ids), top_k=[5, 10, 20, 25], n_resamples=200, seed=0
    )
    by = {(r["method"], r["metric"], r["k"]): r for r in rows}
    labels = [i in leaked for i in ids]
    assert by["noisy", "auc", None]["value"] == pytest.approx(roc_auc_score(labels, [noisy[i] for i in ids]))
    assert by["perfect", "auc", None]["value"] == 1.0
    assert by["perfect", "precision_at_k", 10]["value"] == 1.0
    assert by["perfect", "precision_at_k", 20]["value"] == 0.5  # the balanced set: 10 leaked, 10 not
    assert by["perfect", "precision_at_k", 20]["n_evaluated"] == 20
    assert ("perfect", "precision_at_k", 25) not in by  # k above the balanced set
    for r in rows:
        assert r["low"] <= r["value"] <= r["high"] and r["n"] == 30 and r["n_leaked"] == 10
    again = leak_detection_rows(
        _scores({"noisy": noisy, "perfect": perfect}), leaked, set(ids), top_k=[5, 10, 20, 25], n_resamples=200, seed=0
    )
    assert again == rows


def _write(path, columns: dict) -> None:
    pq.write_table(pa.table(columns), path)


def test_stage_uses_the_scan_labels_and_only_the_evaluated_samples(tmp_path):
    ids = [f"HumanEval/{i}" for i in range(12)]
    _write(
        tmp_path / "pairs.parquet",
        {"sample_id": ids[:4] + ids[:1] + ["HumanEval/11"], "duplicate": [True, True, True, True, True, False]},
    )
    # HumanEval/10 is ReCaLL's prefix and /11 was dropped by the filter: neither is evaluated
    _write(
        tmp_path / "samples.parquet",
        {
            "sample_id": ids,
            "kept": [True] * 11 + [False],
            "fold": ["evaluation"] * 10 + ["recall-prefix", "evaluation"],
        },
    )
    loss = {i: -float(n) for n, i in enumerate(ids)}  # the leaked ones (0..3) rank first
    scores = _scores({"loss": loss, "zlib": {i: -v for i, v in loss.items()}})
    for model in ("reference", "target-r5-s0-e1"):
        pq.write_table(pa.Table.from_pylist(scores), tmp_path / f"{model}.parquet")
    settings = Rq4Settings(top_k=(2, 4, 8, 10), bootstrap_resamples=50)
    out, md = tmp_path / "rq4.parquet", tmp_path / "rq4.md"
    rq4(
        "training-mix",
        "humaneval",
        tmp_path / "pairs.parquet",
        tmp_path / "samples.parquet",
        {m: tmp_path / f"{m}.parquet" for m in ("reference", "target-r5-s0-e1")},
        settings,
        0,
        out,
        md,
    )
    rows = pq.read_table(out).to_pylist()
    assert {r["model"] for r in rows} == {"reference", "target-r5-s0-e1"}
    assert all(r["n"] == 10 and r["n_leaked"] == 4 for r in rows)
    by = {(r["model"], r["method"], r["metric"], r["k"]): r["value"] for r in rows}
    assert by["reference", "loss", "auc", None] == 1.0 and by["reference", "zlib", "auc", None] == 0.0
    assert by["target-r5-s0-e1", "loss", "precision_at_k", 4] == 1.0
    assert ("reference", "loss", "precision_at_k", 10) not in by  # the balanced set has 8
    text = md.read_text()
    assert "4 of 10 scored samples" in text and "Model `target-r5-s0-e1`" in text and "| loss | 1.000 [" in text


def test_stage_with_one_class_writes_no_figures(tmp_path):
    ids = [f"HumanEval/{i}" for i in range(4)]
    _write(tmp_path / "pairs.parquet", {"sample_id": pa.array([], pa.string()), "duplicate": pa.array([], pa.bool_())})
    _write(tmp_path / "samples.parquet", {"sample_id": ids, "kept": [True] * 4, "fold": ["evaluation"] * 4})
    pq.write_table(
        pa.Table.from_pylist(_scores({"loss": {i: float(n) for n, i in enumerate(ids)}})), tmp_path / "s.parquet"
    )
    rq4(
        "stdlib",
        "humaneval",
        tmp_path / "pairs.parquet",
        tmp_path / "samples.parquet",
        {"reference": tmp_path / "s.parquet"},
        Rq4Settings(top_k=(2,), bootstrap_resamples=10),
        0,
        tmp_path / "o.parquet",
        tmp_path / "o.md",
    )
    rows = pq.read_table(tmp_path / "o.parquet").to_pylist()
    assert [(r["metric"], r["value"], r["n_leaked"]) for r in rows] == [("auc", None, 0)]
    assert "one class only" in (tmp_path / "o.md").read_text()


# --- RQ3: pass@k on the leaked and the non-leaked part

from math import comb  # noqa: E402

from leaktrace.evaluate.pass_at_k import leaked_pass_rows, pass_at_k  # noqa: E402
from leaktrace.stages.leakage_rq3 import rq3  # noqa: E402
from leaktrace.stages.leakage_rq3_runs import generate_and_run  # noqa: E402

RQ3_BATCH = TokenBatch(batch_size=4, token_budget=None)
NO_MODEL = ModelSettings(path="m", dtype="float32", device="cpu")


def rq3_runs(**settings) -> Rq3Runs:
    """The runs' settings as the rule passes them (``leakage.rq3``), checked as the command's entry checks them."""
    return read_slice(Rq3Runs, settings, "leakage.rq3")


def test_pass_at_k_is_the_unbiased_estimator():
    n, c = np.array([10, 10, 10, 3]), np.array([0, 3, 10, 1])
    for k in (1, 5, 10):
        expected = [1 - comb(ni - ci, k) / comb(ni, k) if ni >= k else np.nan for ni, ci in zip(n, c, strict=True)]
        np.testing.assert_allclose(pass_at_k(n, c, k), expected)
    assert pass_at_k(n, c, 1).tolist()[:3] == pytest.approx([0.0, 0.3, 1.0])


def test_leaked_and_non_leaked_pass_rates_and_their_ratio():
    n = np.full(6, 10)
    c = np.array([8, 6, 4, 1, 2, 0])
    leaked = np.array([True, True, True, False, False, False])
    rows = leaked_pass_rows(n, c, leaked, [1, 5], n_resamples=300, rng=np.random.default_rng(0))
    one = rows[0]
    assert (one["k"], one["n_leaked"], one["n_non_leaked"]) == (1, 3, 3)
    assert one["leaked"] == pytest.approx(0.6) and one["non_leaked"] == pytest.approx(0.1)
    assert one["ratio"] == pytest.approx(6.0)
    for key in ("leaked", "non_leaked", "ratio"):
        assert one[f"{key}_low"] <= one[key] <= one[f"{key}_high"]
    assert rows[1]["leaked"] > one["leaked"]
    zero = leaked_pass_rows(n, np.array([8, 6, 4, 0, 0, 0]), leaked, [1], n_resamples=50, rng=np.random.default_rng(0))[
        0
    ]
    assert zero["non_leaked"] == 0.0 and zero["ratio"] is None and zero["ratio_replicates"] == 0


def test_rq3_runs_the_tiny_model_in_the_sandbox_and_splits_by_the_scan(tmp_path):
    from leaktrace.artifacts import write_table
    from leaktrace.data.benchmarks import BENCHMARK_SCHEMA

    problems = [
        {
            "sample_id": "HumanEval/0",
            "benchmark": "humaneval",
            "task_id": "HumanEval/0",
            "prompt": "def add(a, b):\n",
            "solution": "    return a + b\n",
            "code": "def add(a, b):\n    return a + b\n",
            "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
            "entry_point": "add",
        },
        {
            "sample_id": "HumanEval/1",
            "benchmark": "humaneval",
            "task_id": "HumanEval/1",
            "prompt": "def one():\n",
            "solution": "    return 1\n",
            "code": "def one():\n    return 1\n",
            "test": "def check(candidate):\n    assert candidate() == 1\n",
            "entry_point": "one",
        },
    ]
    write_table(problems, BENCHMARK_SCHEMA, tmp_path / "bench.parquet")
    model = ModelSettings(path="resources/models/leaktrace-tiny", dtype="float32", device="cpu", max_length=256)
    settings = rq3_runs(
        prompt="completion", n=2, temperature=0.8, max_new_tokens=8, workers=1, sandbox={"isolation": "weak"}
    )
    generate_and_run(tmp_path / "bench.parquet", model, "reference", settings, RQ3_BATCH, 0, tmp_path / "runs.parquet")
    runs = pq.read_table(tmp_path / "runs.parquet").to_pylist()
    assert [(r["sample_id"], r["draw"]) for r in runs] == [
        ("HumanEval/0", 0),
        ("HumanEval/0", 1),
        ("HumanEval/1", 0),
        ("HumanEval/1", 1),
    ]
    assert {r["status"] for r in runs} <= {"ok", "wrong", "error", "timeout", "killed"}
    # the tables split by the scan's labels: a hand-made runs table where the leaked problem always passes
    pq.write_table(
        pa.Table.from_pylist([{**r, "status": "ok" if r["sample_id"] == "HumanEval/0" else "wrong"} for r in runs]),
        tmp_path / "fixed.parquet",
    )
    _write(tmp_path / "pairs.parquet", {"sample_id": ["HumanEval/0"], "duplicate": [True]})
    rq3(
        "training-mix",
        "humaneval",
        tmp_path / "pairs.parquet",
        {"reference": tmp_path / "fixed.parquet"},
        Rq3Settings(k=(1, 5), n=2, temperature=0.8, bootstrap_resamples=20),
        0,
        tmp_path / "rq3.parquet",
        tmp_path / "rq3.md",
    )
    rows = pq.read_table(tmp_path / "rq3.parquet").to_pylist()
    assert [(r["k"], r["leaked"], r["non_leaked"], r["ratio"]) for r in rows] == [
        (1, 1.0, 0.0, None),
        (5, None, None, None),
    ]
    assert "1 leaked and 1 non-leaked problems" in (tmp_path / "rq3.md").read_text()


def test_rq3_instruction_prompt_runs_whole_programs_against_apps_tests(tmp_path, monkeypatch):
    """LessLeak's RQ3 prompt on APPS-style problems: the problem text as the
    instruction, the response (cut at the next ###, its fenced block) run as
    a whole program against standard input/output cases, or called."""
    import json

    import leaktrace.stages.leakage_rq3_runs as runs_stage
    from leaktrace.artifacts import write_table
    from leaktrace.data.benchmarks import GENERIC_BENCHMARK_SCHEMA

    stdin = {"inputs": ["1 2\n", "5 7\n"], "outputs": ["3\n", "12\n"]}
    calls = {"fn_name": "twice", "inputs": [[2], [5]], "outputs": [4, 10]}
    problems = [
        {
            "sample_id": "apps/1",
            "benchmark": "apps",
            "text": "Read a and b, print a + b.",
            "code": "a, b = map(int, input().split())\nprint(a + b)\n",
            "test": json.dumps(stdin),
            "test_format": "io",
        },
        {
            "sample_id": "apps/2",
            "benchmark": "apps",
            "text": "Write twice(x).",
            "code": "def twice(x):\n    return 2 * x\n",
            "test": json.dumps(calls),
            "test_format": "io",
        },
        {
            "sample_id": "apps/3",
            "benchmark": "apps",
            "text": "No tests.",
            "code": "pass\n",
            "test": "",
            "test_format": "io",
        },
    ]
    write_table(problems, GENERIC_BENCHMARK_SCHEMA, tmp_path / "bench.parquet")
    answers = {  # per problem: draw 0 right, draw 1 wrong
        "Read a and b, print a + b.": [
            "```python\na, b = map(int, input().split())\nprint(a + b)\n```\n### Instruction: more",
            "print(3)\n### Instruction: more",
        ],
        "Write twice(x).": ["def twice(x):\n    return x + x\n", "def twice(x):\n    return x\n"],
    }
    texts, draws = [], []

    class Model:
        max_length = 4096

        def encode(self, text):
            texts.append(text)
            return [len(texts) - 1]

        def sample(self, prompts, *, max_new_tokens, temperature, seed, stops):
            assert not stops[0]("print(1)") and stops[0]("x\n### Instruction")
            draws.append(seed)
            instruction = [texts[p[0]].split("### Instruction: ", 1)[1].split(" ### Response:")[0] for p in prompts]
            return [answers[i][len(draws) - 1] for i in instruction]

    monkeypatch.setattr(runs_stage, "generation_model", lambda *args: Model())
    settings = {
        "prompt": "instruction",
        "n": 2,
        "temperature": 0.8,
        "max_new_tokens": 64,
        "workers": 1,
        "sandbox": {"isolation": "weak"},
    }
    generate_and_run(
        tmp_path / "bench.parquet", NO_MODEL, "m", rq3_runs(**settings), RQ3_BATCH, 0, tmp_path / "runs.parquet"
    )
    assert texts == [
        "### Instruction: Read a and b, print a + b. ### Response:",
        "### Instruction: Write twice(x). ### Response:",
    ]
    assert len(set(draws)) == 2  # each draw its own seed
    runs = pq.read_table(tmp_path / "runs.parquet").to_pylist()
    assert [(r["sample_id"], r["draw"], r["status"]) for r in runs] == [
        ("apps/1", 0, "ok"),
        ("apps/1", 1, "wrong"),
        ("apps/2", 0, "ok"),
        ("apps/2", 1, "wrong"),
    ]
    assert runs[0]["completion"] == "a, b = map(int, input().split())\nprint(a + b)\n"
    with pytest.raises(SliceError, match=r"config leakage\.rq3\.prompt: expected one of 'completion', 'instruction'"):
        rq3_runs(**{**settings, "prompt": "chat"})
    with pytest.raises(SliceError, match=r"config leakage\.rq3\.sandbox\.timeout_s: expected"):
        rq3_runs(**{**settings, "sandbox": {"timeout_s": "long"}})
    # the prompt, the workers and the sandbox have their defaults in config/schema.yaml only: the rule passes them
    with pytest.raises(SliceError, match=r"config leakage\.rq3\.workers: missing"):
        rq3_runs(**{k: v for k, v in settings.items() if k != "workers"})


def test_rq3_runs_each_distinct_program_once_and_every_draw_reads_its_status(tmp_path, monkeypatch):
    """A memorising model draws the same completion again: that program runs
    once in the sandbox, and every draw of it gets its status; the same text
    under another problem (other tests) is another program."""
    import leaktrace.stages.leakage_rq3_runs as runs_stage
    from leaktrace.artifacts import write_table
    from leaktrace.data.benchmarks import BENCHMARK_SCHEMA

    problems = [
        {
            "sample_id": f"HumanEval/{i}",
            "benchmark": "humaneval",
            "task_id": f"HumanEval/{i}",
            "prompt": f"def f{i}(a):\n",
            "solution": "    return a\n",
            "code": f"def f{i}(a):\n    return a\n",
            "test": f"def check(candidate):\n    assert candidate({i}) == {i}\n",
            "entry_point": f"f{i}",
        }
        for i in (0, 1)
    ]
    write_table(problems, BENCHMARK_SCHEMA, tmp_path / "bench.parquet")
    draws = iter(
        [
            ["    return a\n", "    return 0\n"],
            ["    return a\n", "    return a\n"],
            ["    return 1\n", "    return 0\n"],
        ]
    )

    class Model:
        max_length = 4096

        def encode(self, text):
            return [0]

        def sample(self, prompts, **kwargs):
            return next(draws)

    ran = []

    class Result:
        def __init__(self, status):
            self.status = status

    def run_tests(programs, limits, *, workers):
        ran.extend(code for code, _, _ in programs)
        return [Result("ok" if code.endswith("return a\n") else "wrong") for code, _, _ in programs]

    monkeypatch.setattr(runs_stage, "generation_model", lambda *args: Model())
    monkeypatch.setattr(runs_stage, "run_sample_tests", run_tests)
    settings = rq3_runs(
        prompt="completion", n=3, temperature=0.8, max_new_tokens=8, workers=1, sandbox={"isolation": "weak"}
    )
    generate_and_run(tmp_path / "bench.parquet", NO_MODEL, "m", settings, RQ3_BATCH, 0, tmp_path / "runs.parquet")
    assert sorted(ran) == sorted(
        [
            "def f0(a):\n    return a\n",
            "def f0(a):\n    return 1\n",
            "def f1(a):\n    return 0\n",
            "def f1(a):\n    return a\n",
        ]
    )
    runs = pq.read_table(tmp_path / "runs.parquet").to_pylist()
    assert [(r["sample_id"], r["draw"], r["status"]) for r in runs] == [
        ("HumanEval/0", 0, "ok"),
        ("HumanEval/0", 1, "ok"),
        ("HumanEval/0", 2, "wrong"),
        ("HumanEval/1", 0, "wrong"),
        ("HumanEval/1", 1, "ok"),
        ("HumanEval/1", 2, "wrong"),
    ]


# A ClassEval-format sample (the shape the classeval preset ingests): the skeleton is the problem text,
# the tests are unittest classes, there is no prompt; and a DS-1000-style sample whose tests exec the source.
SKELETON = (
    'class Counter:\n    """Counts events by name."""\n\n    def __init__(self):\n        """Start empty."""\n\n'
    '    def add(self, name):\n        """Count one event; return its count so far."""\n\n'
    '    def top(self):\n        """The most frequent name, or None."""\n'
)
UNITTEST = (
    "import unittest\n\n\nclass CounterTest(unittest.TestCase):\n    def test_add(self):\n        c = Counter()\n"
    "        c.add('a')\n        self.assertEqual(c.add('a'), 2)\n\n    def test_top(self):\n        c = Counter()\n"
    "        for name in ['a', 'b', 'b']:\n            c.add(name)\n        self.assertEqual(c.top(), 'b')\n"
    "        self.assertIsNone(Counter().top())\n"
)
TOP = "        return max(self.counts, key=self.counts.get) if self.counts else None\n"
INIT_AND_ADD = (
    "\n    def __init__(self):\n        self.counts = {}\n\n    def add(self, name):\n"
    "        self.counts[name] = self.counts.get(name, 0) + 1\n        return self.counts[name]\n"
)
RIGHT_CLASS = "class Counter:" + INIT_AND_ADD + "\n    def top(self):\n" + TOP


def _classeval_bench(path):
    from leaktrace.artifacts import write_table
    from leaktrace.data.benchmarks import GENERIC_BENCHMARK_SCHEMA

    rows = [
        {
            "sample_id": "ClassEval_0",
            "benchmark": "classeval",
            "task_id": "ClassEval_0",
            "prompt": "",
            "solution": RIGHT_CLASS,
            "code": RIGHT_CLASS,
            "test": UNITTEST,
            "entry_point": "Counter",
            "text": SKELETON,
            "kind": "both",
            "language": "python",
            "test_format": "unittest",
        },
        {
            "sample_id": "ds/0",
            "benchmark": "ds",
            "task_id": "ds/0",
            "prompt": "",
            "solution": "result = 1\n",
            "code": "result = 1\n",
            "test": "def test_execution(solution):\n    exec(solution)\n",
            "entry_point": "",
            "text": "Set result.",
            "kind": "both",
            "language": "python",
            "test_format": "exec",
        },
    ]
    write_table(rows, GENERIC_BENCHMARK_SCHEMA, path)


@pytest.mark.parametrize(
    "prompt, answers",
    [
        # the skeleton continued: its last method's body, then (draw 0) the methods it left empty, defined again
        ("completion", [TOP + INIT_AND_ADD, TOP]),
        # the whole class in a fenced block (draw 0), or one whose add counts nothing (draw 1)
        (
            "instruction",
            [
                f"```python\n{RIGHT_CLASS}```\n### Instruction: more",
                RIGHT_CLASS.replace("return self.counts[name]", "return 0"),
            ],
        ),
    ],
)
def test_rq3_runs_unittest_benchmarks_in_both_prompt_modes(tmp_path, monkeypatch, prompt, answers):
    """ClassEval's unittest classes reached run_tests as check code and
    crashed instruction mode (compile() arg 1 must be a string);
    completion mode ran nothing (ClassEval has no prompt). Both now run the
    unittest classes in the sandbox: the right class passes, the wrong one
    fails; a sample whose tests exec the source is left out."""
    import leaktrace.stages.leakage_rq3_runs as runs_stage

    _classeval_bench(tmp_path / "bench.parquet")
    texts, draws = [], []

    class Model:
        max_length = 4096

        def encode(self, text):
            texts.append(text)
            return [len(texts) - 1]

        def sample(self, prompts, *, max_new_tokens, temperature, seed, stops):
            draws.append(seed)
            return [answers[len(draws) - 1] for _ in prompts]

    monkeypatch.setattr(runs_stage, "generation_model", lambda *args: Model())
    settings = rq3_runs(
        prompt=prompt,
        n=2,
        temperature=0.8,
        max_new_tokens=64,
        workers=1,
        sandbox={"isolation": "weak", "timeout_s": 20},
    )
    generate_and_run(tmp_path / "bench.parquet", NO_MODEL, "m", settings, RQ3_BATCH, 0, tmp_path / "runs.parquet")
    assert texts == [SKELETON if prompt == "completion" else f"### Instruction: {SKELETON} ### Response:"]
    runs = pq.read_table(tmp_path / "runs.parquet").to_pylist()
    assert [(r["sample_id"], r["draw"], r["status"]) for r in runs] == [
        ("ClassEval_0", 0, "ok"),
        ("ClassEval_0", 1, "wrong"),
    ]


def test_the_sample_runner_refuses_tests_of_no_known_form():
    from leaktrace.sandbox.sample_runs import run_sample_tests

    with pytest.raises(TypeError, match="item 0: tests must be check code .*not dict"):
        run_sample_tests([("x = 1\n", {"inputs": []}, None)], workers=1)


# --- RQ4 as the paper runs it: perplexity ranking of the pooled, deduplicated, balanced labelled samples


def _ppl_rows(model: str, losses: dict[str, float], digests: dict[str, str] | None = None) -> list[dict]:
    return [
        {
            "sample_id": sid,
            "benchmark": sid.split("/")[0],
            "model": model,
            "digest": (digests or {}).get(sid, sid),
            "n_tokens": 5,
            "truncated": False,
            "loss": loss,
            "perplexity": float(np.exp(loss)),
        }
        for sid, loss in losses.items()
    ]


def test_deduplicated_keeps_one_sample_per_document_leaked_if_any_is():
    from leaktrace.evaluate.leak_detection import deduplicated

    kept, leaked = deduplicated({"b/2": "x", "a/1": "x", "a/3": "y", "a/4": "z"}, {"b/2", "a/4"})
    assert kept == ["a/1", "a/3", "a/4"] and leaked == {"a/1", "a/4"}


def test_balanced_caps_each_class_at_per_class():
    labels = np.array([True] * 4 + [False] * 6)
    keep = balanced([str(i) for i in range(10)], labels, np.random.default_rng(0), per_class=2)
    assert labels[keep].sum() == 2 and (~labels[keep]).sum() == 2


def test_rq4_ranking_on_hand_perplexities(tmp_path):
    from leaktrace.artifacts import write_table
    from leaktrace.evaluate.leak_detection import PERPLEXITY_SCHEMA, ranking_population
    from leaktrace.stages.leakage_rq4 import rq4_ranking

    # leaked: a/0, a/1, b/0 (b/0 a copy of a/0's document: deduplicated away); clean: a/2, b/1, b/2
    losses = {"a/0": 1.0, "a/1": 3.0, "a/2": 2.0, "b/0": 1.0, "b/1": 4.0, "b/2": 0.5}
    digests = {"b/0": "a/0"}
    _write(
        tmp_path / "pairs.parquet", {"sample_id": ["a/0", "a/1", "b/0", "b/1"], "duplicate": [True, True, True, False]}
    )
    write_table(_ppl_rows("m", losses, digests), PERPLEXITY_SCHEMA, tmp_path / "m.parquet")
    ids, leaked, counts = ranking_population({"m": _ppl_rows("m", losses, digests)}, {"a/0", "a/1", "b/0"}, None, 0)
    assert counts == {"scored": 6, "leaked_scored": 3, "distinct": 5, "leaked_distinct": 2, "balanced": 4}
    assert leaked == {"a/0", "a/1"} and len(ids) == 4
    settings = Rq4RankingSettings(size=None, top_k=(1, 2, 4, 100), bootstrap_resamples=50)
    rq4_ranking(
        "s",
        ("a", "b"),
        tmp_path / "pairs.parquet",
        {"m": tmp_path / "m.parquet"},
        settings,
        0,
        tmp_path / "rq4.parquet",
        tmp_path / "rq4.md",
    )
    rows = {(r["metric"], r["k"]): r for r in pq.read_table(tmp_path / "rq4.parquet").to_pylist()}
    clean = sorted(set(ids) - leaked)  # two of a/2 (2.0), b/1 (4.0), b/2 (0.5), drawn by the seed
    order = sorted(ids, key=lambda i: losses[i])  # ascending perplexity
    for k in (1, 2, 4):
        assert rows["precision_at_k", k]["value"] == pytest.approx(sum(i in leaked for i in order[:k]) / k)
    assert rows["precision_at_k", 4]["value"] == 0.5 and ("precision_at_k", 100) not in rows
    assert rows["auc", None]["n"] == 4 and len(clean) == 2
    text = (tmp_path / "rq4.md").read_text()
    assert (
        "6 samples scored by every model (3 leaked), 5 distinct documents (2 leaked)" in text
        and "k = 100 exceed" in text
    )


def test_rq4_ranking_caps_the_balanced_set_and_refuses_models_that_scored_different_texts():
    from leaktrace.evaluate.leak_detection import ranking_population

    losses = {f"a/{i}": float(i) for i in range(10)}
    ids, leaked, counts = ranking_population({"m": _ppl_rows("m", losses)}, {f"a/{i}" for i in range(5)}, 4, 0)
    assert counts["balanced"] == 4 and len(leaked) == 2
    with pytest.raises(ValueError, match="scored different texts"):
        ranking_population({"m": _ppl_rows("m", losses), "n": _ppl_rows("n", losses, {"a/0": "other"})}, set(), None, 0)


def test_rq4_perplexity_runs_the_tiny_model_over_pooled_benchmarks(tmp_path):
    from leaktrace.artifacts import write_table
    from leaktrace.data.benchmarks import BENCHMARK_SCHEMA
    from leaktrace.settings.models import ModelSettings
    from leaktrace.settings.score import TokenBatch
    from leaktrace.stages.leakage_rq4 import rq4_ranking
    from leaktrace.stages.leakage_rq4_perplexity import perplexities

    def problem(bench, i, body):
        code = f"def f{i}(x):\n    return {body}\n"
        return {
            "sample_id": f"{bench}/{i}",
            "benchmark": bench,
            "task_id": f"{bench}/{i}",
            "prompt": f"def f{i}(x):\n",
            "solution": f"    return {body}\n",
            "code": code,
            "test": "",
            "entry_point": f"f{i}",
        }

    for bench, bodies in (("a", ["x + 1", "x * 2", "x - 3"]), ("b", ["x ** 2", "x // 2", "x + 1"])):
        write_table(
            [problem(bench, i, b) for i, b in enumerate(bodies)], BENCHMARK_SCHEMA, tmp_path / f"{bench}.parquet"
        )
    model = ModelSettings(path="resources/models/leaktrace-tiny", dtype="float32", device="cpu", max_length=256)
    perplexities(
        {"a": tmp_path / "a.parquet", "b": tmp_path / "b.parquet"},
        model,
        "reference",
        TokenBatch(batch_size=4, token_budget=None),
        tmp_path / "ppl.parquet",
    )
    rows = pq.read_table(tmp_path / "ppl.parquet").to_pylist()
    assert [r["sample_id"] for r in rows] == ["a/0", "a/1", "a/2", "b/0", "b/1", "b/2"]
    assert all(
        r["perplexity"] == pytest.approx(np.exp(r["loss"])) and r["loss"] > 0 and r["n_tokens"] > 0 for r in rows
    )
    assert len({r["digest"] for r in rows}) == 6  # f0 of a and f2 of b differ in their names
    _write(tmp_path / "pairs.parquet", {"sample_id": ["a/0", "b/1", "b/2"], "duplicate": [True, True, True]})
    rq4_ranking(
        "s",
        ("a", "b"),
        tmp_path / "pairs.parquet",
        {"reference": tmp_path / "ppl.parquet"},
        Rq4RankingSettings(size=1300, top_k=(1, 3, 6, 7), bootstrap_resamples=20),
        0,
        tmp_path / "rq4.parquet",
        tmp_path / "rq4.md",
    )
    by = {(r["metric"], r["k"]): r for r in pq.read_table(tmp_path / "rq4.parquet").to_pylist()}
    leaked = {"a/0", "b/1", "b/2"}
    order = sorted(rows, key=lambda r: r["loss"])
    assert by["precision_at_k", 3]["value"] == pytest.approx(sum(r["sample_id"] in leaked for r in order[:3]) / 3)
    assert by["precision_at_k", 6]["value"] == 0.5 and ("precision_at_k", 7) not in by
