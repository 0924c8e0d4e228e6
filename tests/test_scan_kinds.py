"""The scan finds every kind of copy: a verbatim copy of a
solution with module-level lines is Type-1; a copy inside a much longer unit,
and one re-wrapped into short lines, is found by containment over windows,
with its span; the problem text over another solution is an input leak.
Containment and spans are checked by hand on small inputs first."""

import builtins
import json
import keyword
import random
import textwrap
from collections import Counter

import numpy as np
import pytest

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.benchmarks import GENERIC_BENCHMARK_SCHEMA
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.leakage.containment import ContainmentIndex, best_span, cut, hash_set, positional, shingle_set
from leaktrace.leakage.scan import scan_documents
from leaktrace.leakage.settings import resolve, scan_slice
from leaktrace.leakage.sources import iter_source
from leaktrace.leakage.units import Unit, benchmark_parts
from leaktrace.sandbox import SandboxLimits
from leaktrace.stages.leakage import build_index, gather, scan_shard


def _slice(scan: dict):
    """A scan's slice with the schema's defaults (the corpus unused)."""
    return scan_slice({"corpus": {"kind": "files", "root": "."}, **scan})


HUMANEVAL = load_humaneval(shipped_humaneval_path(), "humaneval")
# MBPP/1 as released: two module-level lines before its function
MBPP1 = """R = 3\r
C = 3\r
def min_cost(cost, m, n): \r
\ttc = [[0 for x in range(C)] for x in range(R)] \r
\ttc[0][0] = cost[0][0] \r
\tfor i in range(1, m+1): \r
\t\ttc[i][0] = tc[i-1][0] + cost[i][0] \r
\tfor j in range(1, n+1): \r
\t\ttc[0][j] = tc[0][j-1] + cost[0][j] \r
\tfor i in range(1, m+1): \r
\t\tfor j in range(1, n+1): \r
\t\t\ttc[i][j] = min(tc[i-1][j-1], tc[i-1][j], tc[i][j-1]) + cost[i][j] \r
\treturn tc[m][n]""".replace("\r", "")
MBPP1_TEXT = (
    "Write a function to find the minimum cost path to reach (m, n) from (0, 0) for the given cost matrix "
    "cost[][] and a position (m, n) in cost[][]."
)
# another solution of MBPP/1's problem (written for this test): the same problem, other code
OTHER_SOLUTION = """def cheapest_path(grid, row, col):
    best = {}
    for r in range(row + 1):
        for c in range(col + 1):
            here = grid[r][c]
            if r == 0 and c == 0:
                best[r, c] = here
                continue
            options = [best[p] for p in ((r - 1, c), (r, c - 1), (r - 1, c - 1)) if p in best]
            best[r, c] = here + min(options)
    return best[row, col]
"""
FILLER = "".join(f"    def helper_{i}(self, a, b):\n        return a * {i} + b - {i}\n\n" for i in range(150))


def _sample(sid, code, text="", kind="code"):
    return {
        "sample_id": f"b/{sid}",
        "benchmark": "b",
        "task_id": sid,
        "prompt": "",
        "solution": code,
        "code": code,
        "test": "",
        "entry_point": "",
        "text": text,
        "kind": kind,
        "language": "python",
        "test_format": None,
    }


def _scan(tmp_path, samples, files, glob="**/*", **extra):
    write_table(samples, GENERIC_BENCHMARK_SCHEMA, tmp_path / "b.parquet")
    corpus = tmp_path / "corpus"
    for name, text in files.items():
        (corpus / name).parent.mkdir(parents=True, exist_ok=True)
        (corpus / name).write_text(text)
    settings = scan_slice({"corpus": {"kind": "files", "root": str(corpus), "glob": glob}, **extra})
    out = tmp_path / "out"
    build_index("s", (tmp_path / "b.parquet",), settings, out / "index.parquet")
    scan_shard(
        "s", out / "index.parquet", (tmp_path / "b.parquet",), settings, 0, 1, out / "p.parquet", out / "a.parquet"
    )
    gather(
        "s",
        out / "index.parquet",
        {"b": tmp_path / "b.parquet"},
        (out / "p.parquet",),
        (out / "a.parquet",),
        settings,
        out / "g",
    )
    return read_records(out / "g" / "pairs.parquet"), read_records(out / "g" / "summary.parquet")[0]


def test_containment_and_its_span_by_hand():
    # "a b c d e" has the 3-grams abc, bcd, cde; "x a b c y" holds abc only: containment 1/3
    index = ContainmentIndex(["five", "other"], [hash_set("a b c d e"), hash_set("p q r")], 0.3)
    assert index.query([hash_set("x a b c y"), hash_set("p q r s"), hash_set("z")]) == [
        {"five": pytest.approx(1 / 3)},
        {"other": 1.0},
        {},
    ]
    assert ContainmentIndex(["five"], [hash_set("a b c d e")], 0.5).query([hash_set("x a b c y")]) == [{}]
    text = "zz\n" * 10 + "a b\nc d\ne\n" + "zz\n" * 10  # the five tokens on lines 11 to 13, re-wrapped
    span = best_span(hash_set("a b c d e"), text)
    assert (span.containment, span.first_line, span.last_line) == (1.0, 11, 13)
    assert cut(Unit(text, "f", 5, 27), span) == Unit("a b\nc d\ne\n", "f", 15, 17)
    # scattered matches: only what lies in one window counts (3 shingles: a window of 2 x 3 + 20 = 26 shingles)
    scattered = "a b c d " + "zz " * 60 + "c d e"
    assert best_span(hash_set("a b c d e"), scattered).containment == pytest.approx(2 / 3)
    assert (
        len(positional("A b", lower=True)[0]) == 1
        and hash_set("A B C", lower=True).tolist() == hash_set("a b c").tolist()
    )
    with pytest.raises(ValueError, match="containment threshold"):
        ContainmentIndex([], [], 0)
    with pytest.raises(ValueError, match="containment_channel must be in"):
        resolve("x", _slice({"containment_channel": 1.5}))


def test_the_compiled_shingle_set_is_positionals():
    texts = ["", "x", "a b", "É = 1  # Ünïcode\n", "def f(x):\n    return x.Upper() + 'A B C'\n" * 3]
    texts += [chr(c) * 3 + " y" for c in range(0, 300, 7)]
    for text in texts:
        for lower in (False, True):
            hashes, starts, _, _ = positional(text, lower)
            n_tokens, found = shingle_set(text, lower)
            assert n_tokens == len(starts) and np.array_equal(found, np.unique(hashes)), (text, lower)
            assert found.dtype == np.uint32


def test_a_benchmark_solution_is_compared_whole_and_by_function():
    parts = benchmark_parts(MBPP1, "python")
    assert [(p.name, p.start_line, p.end_line) for p in parts] == [(None, 1, 13), ("min_cost", 3, 13)]
    assert [p.name for p in benchmark_parts(HUMANEVAL[0].code, "python")] == [None]  # one function after an import
    assert [p.name for p in benchmark_parts(HUMANEVAL[10].code, "python")] == [None, "is_palindrome", "make_palindrome"]


def test_a_verbatim_copy_with_module_lines_is_type1(tmp_path):
    pairs, summary = _scan(
        tmp_path, [_sample("1", MBPP1, MBPP1_TEXT, kind="both")], {"copied.py": MBPP1 + "\n"}, "*.py"
    )
    assert [(p["unit"], p["clone_type"], p["duplicate"], p["leak"], p["bench_part"]) for p in pairs] == [
        ("min_cost", "type-1", True, "code", "min_cost")
    ]
    assert (summary["type1"], summary["leaked_count"]) == (1, 1)
    # without the part, the whole solution (module lines included) against the function alone is not Type-1
    pairs, _ = _scan(
        tmp_path,
        [_sample("1", MBPP1, MBPP1_TEXT, kind="both")],
        {"copied.py": MBPP1 + "\n"},
        "*.py",
        containment_channel=False,
    )
    assert [(p["clone_type"], p["bench_part"]) for p in pairs] != [("type-1", None)]


def test_an_embedded_copy_is_found_with_its_span(tmp_path):
    target = HUMANEVAL[0]
    copy = target.code.replace("from typing import List\n", "")
    long_file = "class Generated:\n" + FILLER + textwrap.indent(copy, "    ") + FILLER
    first = long_file[: long_file.index("    def has_close_elements")].count("\n") + 1
    last = first + copy.strip("\n").count("\n")
    sample = {**_sample("0", target.code), "entry_point": target.entry_point}
    record = {"id": "record-7", "content": "Some text before.\n" * 40 + copy + "Some text after.\n" * 40}
    files = {
        "gen.py": long_file,
        "data.jsonl": json.dumps({"id": "record-3", "content": "x = 1\n" * 30}) + "\n" + json.dumps(record) + "\n",
    }
    pairs, _ = _scan(tmp_path, [sample], files, "*.py")
    assert [
        (p["location"].rsplit("/", 1)[1], p["start_line"], p["end_line"], p["channel"], p["duplicate"], p["clone_type"])
        for p in pairs
    ] == [("gen.py", first, last, "containment", True, "type-1")]
    # the whole-unit Jaccard alone (the MinHash channels) cannot see it; the problem-text channel sees its docstring
    assert _scan(tmp_path, [sample], files, "*.py", containment_channel=False, statement_channel=False)[0] == []
    assert [
        (p["leak"], p["channel"]) for p in _scan(tmp_path, [sample], files, "*.py", containment_channel=False)[0]
    ] == [("input", "statement")]
    # a dataset record: its id, its path and line, and the lines inside it
    out = tmp_path / "jsonl"
    out.mkdir()
    settings = scan_slice(
        {
            "corpus": {
                "kind": "jsonl",
                "paths": [str(tmp_path / "corpus" / "data.jsonl")],
                "content": "content",
                "id": "id",
            }
        }
    )
    build_index("s", (tmp_path / "b.parquet",), settings, out / "index.parquet")
    s, skips = resolve("s", settings), Counter()
    documents = iter_source(dict(settings.corpus), 0, 1, [], skips, max_bytes=s.max_bytes, huge=s.huge)
    bench = read_records(tmp_path / "b.parquet")
    scanned = scan_documents(s, read_records(out / "index.parquet"), bench, documents, 0, skips, SandboxLimits())
    found = [p for p in scanned.pairs if p["duplicate"]]
    assert [(p["doc_id"], p["location"].endswith("data.jsonl:2"), p["start_line"], p["end_line"]) for p in found] == [
        ("record-7", True, 43, 43 + copy.strip("\n").count("\n"))
    ]


def test_a_rewrapped_copy_is_found(tmp_path):
    target = HUMANEVAL[12]
    # hard-wrapped at 24 columns, as a fixed-width dump: lines cut anywhere, tokens too
    wrapped = "\n".join(line[i : i + 24] for line in target.code.splitlines() for i in range(0, max(1, len(line)), 24))
    rng = random.Random(0)
    vocabulary = sorted(set(keyword.kwlist) | {w for w in dir(builtins) if w.islower()})
    page = (
        "# Notes\n\n" + "".join(" ".join(rng.choices(vocabulary, k=12)) + ".\n\n" for i in range(120)) + wrapped + "\n"
    )
    pairs, _ = _scan(tmp_path, [{**_sample("12", target.code), "entry_point": target.entry_point}], {"page.md": page})
    assert [(p["channel"], p["duplicate"]) for p in pairs] == [("containment", True)]
    assert page.splitlines()[pairs[0]["start_line"] - 1].startswith(wrapped.splitlines()[0][:8])


def test_a_statement_only_copy_is_an_input_leak(tmp_path):
    files = {
        "solver.py": f"# {MBPP1_TEXT}\n\n\n" + OTHER_SOLUTION,
        "README.md": "# Exercises\n\n"
        + "Some unrelated words here.\n" * 30
        + f"\n## 1\n\n{MBPP1_TEXT}\n\nGood luck.\n",
        "unrelated.py": "def shout(text):\n    '''Upper-case a text and add three exclamation marks to its end.'''\n"
        "    return text.upper() + '!' * 3\n",
    }
    pairs, summary = _scan(tmp_path, [_sample("1", MBPP1, MBPP1_TEXT, kind="both")], files)
    got = sorted((p["location"].rsplit("/", 1)[1], p["leak"], p["channel"], p["duplicate"]) for p in pairs)
    assert got == [("README.md", "input", "statement", True), ("solver.py", "input", "statement", True)]
    readme = next(p for p in pairs if p["location"].endswith("README.md"))
    assert readme["start_line"] == readme["end_line"] == 36 and readme["statement"] == 1.0, readme
    assert (summary["input_leaks"], summary["leaked_count"], summary["type1"]) == (2, 1, 0)
    # the lessleak preset reproduces LessLeak's scan: neither extra channel
    assert resolve("x", _slice({"preset": "lessleak"})).containment_channel is None
    assert not resolve("x", _slice({"preset": "lessleak"})).statement_channel
    assert "problem-text channel" in resolve("x", _slice({})).describe()


def test_regression_the_channels_propose_nothing_in_unrelated_code(tmp_path):
    """Regression test: the standard library's ``colorsys`` and ``textwrap``
    scanned for the first five HumanEval samples give no duplicate."""
    import colorsys
    import textwrap as tw

    files = {"colorsys.py": open(colorsys.__file__).read(), "textwrap.py": open(tw.__file__).read()}
    samples = [{**_sample(str(i), HUMANEVAL[i].code), "entry_point": HUMANEVAL[i].entry_point} for i in range(5)]
    pairs, summary = _scan(tmp_path, samples, files, "*.py")
    assert summary["leaked_count"] == 0 and not any(p["duplicate"] for p in pairs)
    assert np.all([p["channel"] in ("lsh", "containment", "statement") for p in pairs])


def test_a_copy_of_one_sample_is_no_input_leak_of_its_lookalike(tmp_path):
    """HumanEval/7 and /29 share their docstring's template: a file holding a
    copy of /7 (after another function, so its document is read apart from
    its units) leaks /7's code and nothing of /29."""
    samples = [{**_sample(str(i), HUMANEVAL[i].code), "entry_point": HUMANEVAL[i].entry_point} for i in (7, 29)]
    text = "def other(a):\n    return [x * 2 for x in a if x > 0] + [len(a)]\n\n\n" + HUMANEVAL[7].code
    pairs, summary = _scan(tmp_path, samples, {"copy.py": text}, "*.py")
    assert [(p["sample_id"], p["leak"]) for p in pairs if p["duplicate"]] == [("b/7", "code")]
    assert summary["leaked_count"] == 1
