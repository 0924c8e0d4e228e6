"""The rephrase channel (leakage/rephrase.py, stages/leakage_rephrase.py): the
stand-in embedder, the hf embedder on the tiny local model, the exact top-k,
the judge's labels, and bad settings."""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pyarrow as pa
import pytest

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.benchmarks import BENCHMARK_SCHEMA
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.leakage.rephrase import (
    HFEmbedder,
    TfidfEmbedder,
    TopK,
    features,
    merge,
    rephrase_settings,
    subtokens,
)
from leaktrace.leakage.settings import resolve, scan_slice
from leaktrace.settings.leakage import RephraseSettings
from leaktrace.stages.leakage_rephrase import gather_candidates, rephrase_gather, rephrase_shard

HUMANEVAL_0 = '''from typing import List


def has_close_elements(numbers: List[float], threshold: float) -> bool:
    """ Check if in given list of numbers, are any two numbers closer to each other than
    given threshold.
    >>> has_close_elements([1.0, 2.0, 3.0], 0.5)
    False
    """
    for idx, elem in enumerate(numbers):
        for idx2, elem2 in enumerate(numbers):
            if idx != idx2:
                distance = abs(elem - elem2)
                if distance < threshold:
                    return True

    return False
'''
# renamed throughout, docstring dropped, statements rewritten (the distance inlined, an early
# `continue` for the inequality, the final return hoisted into a flag)
REPHRASED = """def fn_417(vals: List[float], lim: float) -> bool:
    found = False
    for p, a in enumerate(vals):
        for q, b in enumerate(vals):
            if p == q:
                continue
            if abs(a - b) < lim:
                found = True
    return found
"""
TRANSLATED = """function hasCloseElements(numbers, threshold) {
  for (let i = 0; i < numbers.length; i++) {
    for (let j = 0; j < numbers.length; j++) {
      if (i !== j && Math.abs(numbers[i] - numbers[j]) < threshold) {
        return true;
      }
    }
  }
  return false;
}
"""
# standard-library functions (CPython 3.11, abridged), none related to HumanEval/0
UNRELATED = [
    """def median(data):
    data = sorted(data)
    n = len(data)
    if n == 0:
        raise StatisticsError("no median for empty data")
    if n % 2 == 1:
        return data[n // 2]
    else:
        i = n // 2
        return (data[i - 1] + data[i]) / 2
""",
    """def indent(text, prefix, predicate=None):
    if predicate is None:
        def predicate(line):
            return line.strip()

    def prefixed_lines():
        for line in text.splitlines(True):
            yield (prefix + line if predicate(line) else line)
    return ''.join(prefixed_lines())
""",
    """def quote(s):
    if not s:
        return "''"
    if _find_unsafe(s) is None:
        return s
    return "'" + s.replace("'", "'\"'\"'") + "'"
""",
    """def commonprefix(m):
    if not m: return ''
    if not isinstance(m[0], (list, tuple)):
        m = tuple(map(os.fspath, m))
    s1 = min(m)
    s2 = max(m)
    for i, c in enumerate(s1):
        if c != s2[i]:
            return s1[:i]
    return s1
""",
    """def nsmallest(n, iterable, key=None):
    if n == 1:
        it = iter(iterable)
        sentinel = object()
        result = min(it, default=sentinel, key=key)
        return [] if result is sentinel else [result]
    try:
        size = len(iterable)
    except (TypeError, AttributeError):
        pass
    else:
        if n >= size:
            return sorted(iterable, key=key)[:n]
    return sorted(iterable, key=key)[:n]
""",
    """def translate(pat):
    res = []
    add = res.append
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        i = i+1
        if c == '*':
            if (not res) or res[-1] is not STAR:
                add(STAR)
        elif c == '?':
            add('.')
        else:
            add(re.escape(c))
    return res
""",
]


def test_subtokens_split_both_conventions():
    assert subtokens("hasCloseElements") == subtokens("has_close_elements") == ["has", "close", "elements"]
    assert subtokens("HTTPServer2x") == ["http", "server"]
    lexical, shape = features("if a && b === null: pass", "javascript")
    assert "k:and" in lexical and "k:null" in lexical and "ID|and|ID" in shape


@pytest.mark.parametrize(("copy", "language"), [(REPHRASED, "python"), (TRANSLATED, "javascript")])
def test_stand_in_ranks_a_rewritten_copy_above_unrelated_library_functions(copy, language):
    # the benchmark side: HumanEval's first 20 solutions (its IDF; fitted on one sample, every feature
    # would weigh the same and the translation would lose to commonprefix's enumerate-and-compare loop)
    codes = [s.code for s in load_humaneval(shipped_humaneval_path(), "humaneval")[:20]]
    embedder = TfidfEmbedder()
    embedder.fit(codes, ["python"] * len(codes))
    bench = embedder.embed(codes, ["python"] * len(codes))
    corpus = [copy, *UNRELATED]
    vectors = embedder.embed(corpus, [language] + ["python"] * len(UNRELATED))
    assert np.allclose(np.sqrt(vectors.multiply(vectors).sum(axis=1)), 1)
    sims = (bench @ vectors.T).toarray()[0]  # HumanEval/0
    assert sims[0] > max(sims[1:]) + 0.05, sims
    top = TopK([f"he/{i}" for i in range(len(codes))], bench, 1)
    top.add(
        vectors, [(f"d{i}", 1, 1, "") for i in range(len(corpus))], [{"doc_id": f"d{i}"} for i in range(len(corpus))]
    )
    assert top.rows()[0]["doc_id"] == "d0"


def test_stand_in_needs_its_fit_and_an_unrelated_text_scores_zero_on_disjoint_features():
    embedder = TfidfEmbedder()
    with pytest.raises(RuntimeError, match="fit"):
        embedder.embed(["x = 1"], ["python"])
    embedder.fit(["alpha_beta = 12"], ["python"])
    v = embedder.embed(["alpha_beta = 12", 'gamma_delta = "zz"'], ["python", "python"])
    assert (v @ v.T).toarray()[0, 1] == pytest.approx(0.0)  # no feature in common: lexical and shape both differ


def test_hf_embedder_on_the_tiny_model(tiny_model_dir):
    scan = {
        "corpus": {"kind": "files", "root": "."},
        "rephrase": {"enabled": True, "embedder": "hf", "model": str(tiny_model_dir)},
    }
    settings = rephrase_settings("s", scan_slice(scan).rephrase)
    embedder = HFEmbedder(settings)
    texts = ["def f(x):\n    return x + 1\n", "x = 1", "for i in range(10):\n    print(i * i)\n" * 3]
    vectors = embedder.embed(texts, ["python"] * 3)
    assert vectors.shape == (3, 32) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    alone = embedder.embed([texts[1]], ["python"])  # right padding beside a longer text changes nothing
    assert np.allclose(alone[0], vectors[1], atol=1e-5)
    assert not np.allclose(vectors[0], vectors[1])


def test_top_k_is_exact_ordered_by_key_on_ties_and_leaves_out_excluded_pairs():
    bench = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    units = {"A": [1.0, 0.0], "B": [1.0, 0.0], "C": [0.6, 0.8], "D": [0.0, 1.0]}
    key = {name: (name, 1, 2, "") for name in units}

    def run(batches, k=2, excluded=None):
        top = TopK(["s0", "s1"], bench, k, chunk=1)
        for batch in batches:
            top.add(
                np.array([units[n] for n in batch]),
                [key[n] for n in batch],
                [{"doc_id": n, "start_line": 1, "end_line": 2, "unit": None} for n in batch],
                excluded,
            )
        return [(r["sample_id"], r["doc_id"], r["similarity"], r["rank"]) for r in top.rows()]

    expected = [("s0", "A", 1.0, 1), ("s0", "B", 1.0, 2), ("s1", "D", 1.0, 1), ("s1", "C", 0.8, 2)]
    assert run([["A", "B", "C", "D"]]) == expected
    assert run([["D", "C"], ["B"], ["A"]]) == expected  # batches and their order change nothing
    assert run([["A", "B", "C", "D"]], excluded={("s0", key["A"])})[:2] == [("s0", "B", 1.0, 1), ("s0", "C", 0.6, 2)]
    # shards' own top-k merged: the global top-k, ranked again
    rows = [{"sample_id": s, "doc_id": d, "similarity": x, "start_line": 1, "end_line": 2, "unit": None}
            for s, d, x, _ in run([["B", "D"]], k=1) + run([["A", "C"]], k=1)]  # fmt: skip
    assert [(r["sample_id"], r["doc_id"], r["rank"]) for r in merge(rows, 1)] == [("s0", "A", 1), ("s1", "D", 1)]
    with pytest.raises(ValueError, match="top_k"):
        TopK(["s0"], bench[:1], 0)


class FakeJudge:
    def __init__(self, answer):
        self.answer, self.calls = answer, 0

    def chat(self, messages, *, max_new_tokens):
        self.calls += 1
        return self.answer


@pytest.fixture
def shard(tmp_path):
    """(the benchmark table, the scan's settings, one shard's candidates) on a corpus of a
    rephrased copy beside unrelated library functions."""
    sample = {
        "sample_id": "humaneval/HumanEval/0",
        "benchmark": "humaneval",
        "task_id": "HumanEval/0",
        "prompt": "",
        "solution": "",
        "code": HUMANEVAL_0,
        "test": "",
        "entry_point": "has_close_elements",
    }
    write_table([sample], BENCHMARK_SCHEMA, tmp_path / "bench.parquet")
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "copy.py").write_text(REPHRASED)
    for i, text in enumerate(UNRELATED):
        (root / f"lib{i}.py").write_text(text)
    settings = scan_slice(
        {"corpus": {"kind": "files", "root": str(root), "glob": "**/*.py"}, "rephrase": {"enabled": True, "top_k": 2}}
    )
    rephrase_shard("toy", (tmp_path / "bench.parquet",), settings, 0, 1, tmp_path / "part.parquet")
    return tmp_path / "bench.parquet", settings, tmp_path / "part.parquet"


@pytest.mark.parametrize(
    ("answer", "duplicate", "leak"), [("Label: exact copy", True, "rephrase"), ("Label: not related", False, None)]
)
def test_the_judge_makes_candidates_rephrase_leaks_or_not(shard, tmp_path, answer, duplicate, leak):
    bench, settings, part = shard
    judge = FakeJudge(answer)
    gather_candidates("toy", (bench,), (part,), settings, tmp_path / "r.parquet", tmp_path / "r.md", judge_model=judge)
    rows = read_records(tmp_path / "r.parquet")
    assert judge.calls == 2 and len(rows) == 2
    assert rows[0]["location"].endswith("copy.py") and rows[0]["rank"] == 1 and rows[0]["channel"] == "rephrase"
    assert {(r["duplicate"], r["leak"]) for r in rows} == {(duplicate, leak)}
    assert f"Rephrase leaks (a duplicate label): {1 if duplicate else 0} samples" in (tmp_path / "r.md").read_text()


def test_without_a_judge_candidates_stay_unverified(shard, tmp_path):
    bench, settings, part = shard
    rephrase_gather("toy", (bench,), (part,), settings, tmp_path / "r.parquet", tmp_path / "r.md")
    rows = read_records(tmp_path / "r.parquet")
    assert [r["rank"] for r in rows] == [1, 2] and rows[0]["similarity"] > rows[1]["similarity"]
    assert all(r["judge_label"] is None and r["duplicate"] is None and r["leak"] is None for r in rows)
    assert "not leaks (none is counted)" in (tmp_path / "r.md").read_text()


def test_rephrase_shard_leaves_out_units_the_other_channels_call_duplicates(shard, tmp_path):
    bench, settings, _ = shard
    write_table(
        [
            {
                "sample_id": "humaneval/HumanEval/0",
                "doc_id": "copy.py",
                "start_line": 1,
                "end_line": 9,
                "duplicate": True,
            }
        ],
        pa.schema(
            [
                ("sample_id", pa.string()),
                ("doc_id", pa.string()),
                ("start_line", pa.int64()),
                ("end_line", pa.int64()),
                ("duplicate", pa.bool_()),
            ]
        ),  # fmt: skip
        tmp_path / "pairs.parquet",
    )
    rephrase_shard("toy", (bench,), settings, 0, 1, tmp_path / "p.parquet", pairs=tmp_path / "pairs.parquet")
    assert not any(r["location"].endswith("copy.py") for r in read_records(tmp_path / "p.parquet"))


@pytest.mark.parametrize(
    ("rephrase", "message"),
    [
        ({"enabled": True, "embedder": "hf"}, "embedder hf needs a model"),
        ({"enabled": True, "top_k": 0}, "top_k must be an integer >= 1"),
    ],
)
def test_bad_rephrase_settings_name_the_scan(rephrase, message):
    scan = {"benchmark": "humaneval", "corpus": {"kind": "files", "root": "."}, "rephrase": rephrase}
    with pytest.raises(ValueError, match=rf"leakage scan 'myscan': rephrase: {message}"):
        resolve("myscan", scan_slice(scan, "myscan"))


@pytest.mark.parametrize(
    ("rephrase", "message"),
    [
        ({"enabled": True, "embedder": "bert"}, r"config myscan.rephrase.embedder: expected one of 'tfidf', 'hf'"),
        ({"enabled": True, "topk": 3}, r"config myscan.rephrase: unknown keys \['topk'\]"),
    ],
)
def test_a_rephrase_key_the_schema_does_not_allow_is_named(rephrase, message):
    with pytest.raises(ValueError, match=message):
        scan_slice({"corpus": {"kind": "files", "root": "."}, "rephrase": rephrase}, "myscan")


def test_rephrase_is_off_by_default():
    s = resolve("plain", scan_slice({"benchmark": "humaneval", "corpus": {"kind": "files", "root": "."}}))
    assert not s.rephrase.enabled and "rephrase" not in s.describe()
    assert s.rephrase == RephraseSettings(
        enabled=False,
        embedder="tfidf",
        model=None,
        dtype="float32",
        device="cpu",
        batch_size=16,
        max_length=512,
        top_k=3,
        judge=True,
    )


def test_cli_reports_bad_rephrase_settings_as_input_errors(tmp_path, caplog):
    from leaktrace.cli import main as cli

    scan = scan_slice({"corpus": {"kind": "files", "root": "."}, "rephrase": {"enabled": True, "top_k": 0}})
    settings = json.dumps(asdict(scan))
    code = cli(
        ["leakage-rephrase-gather", "--scan", "myscan", "--benchmark", str(tmp_path / "b.parquet"), "--parts",
         str(tmp_path / "p.parquet"), "--scan-settings", settings, "--output", str(tmp_path / "o.parquet"),
         "--markdown", str(tmp_path / "o.md")]
    )  # fmt: skip
    assert code == 2
    assert "leakage scan 'myscan': rephrase: top_k must be an integer >= 1, got 0" in caplog.text
