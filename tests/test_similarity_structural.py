"""The structural similarity family: CodeBLEU against the codebleu 0.7.0
package's own values, TSED's distance against the apted package, the paper's
App. E examples, and the counterfactual_structural stage's table."""

import json
import math
import re
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apted import APTED, PerEditOperationConfig

from leaktrace.artifacts import write_table
from leaktrace.cli import main
from leaktrace.similarity.codebleu import CodeBLEU, codebleu, remove_comments_and_docstrings
from leaktrace.similarity.generations import GENERATIONS_SCHEMA
from leaktrace.similarity.python_tree import parse_tree, parses
from leaktrace.similarity.structural import METRICS, structural_scores, whole_function
from leaktrace.similarity.table import SIMILARITY_FAMILY_SCHEMA, Score, family_row
from leaktrace.similarity.text import TEXT_METRICS
from leaktrace.similarity.tsed import PAPER_COSTS, tree_edit_distance, tsed

DATA = Path(__file__).parent / "data"
FIXTURES = json.loads((DATA / "codebleu_fixtures.json").read_text())["pairs"]
APP_E = DATA / "app_e"
COMPONENTS = {
    "ngram": "ngram_match_score",
    "weighted_ngram": "weighted_ngram_match_score",
    "syntax": "syntax_match_score",
}


# --- CodeBLEU vs the package ---------------------------------------------------


@pytest.fixture(scope="module")
def ours():
    return {p["name"]: codebleu(p["reference"], p["candidate"]) for p in FIXTURES}


def test_codebleu_components_equal_the_package(ours):
    """n-gram, weighted n-gram and syntax match equal the package's on every fixture pair."""
    for p in FIXTURES:
        mine = ours[p["name"]]
        for field, key in COMPONENTS.items():
            assert any(math.isclose(getattr(mine, field), run[key], abs_tol=1e-9) for run in p["package"]), (
                p["name"],
                field,
            )


def test_codebleu_dataflow_equals_the_package_where_the_package_is_deterministic(ours):
    """Where the package's dataflow score does not depend on the hash seed, ours equals it; the package's 0
    for "no ground-truth dataflow" is our None. A few pairs vary with the seed (set order, module docstring)."""
    varying = [p for p in FIXTURES if len({run["dataflow_match_score"] for run in p["package"]}) > 1]
    assert len(varying) <= 12
    for p in FIXTURES:
        if p in varying:
            continue
        package = p["package"][0]["dataflow_match_score"]
        mine = ours[p["name"]].dataflow
        assert (0 if mine is None else mine) == pytest.approx(package, abs=1e-9), p["name"]
    assert ours["no_dataflow"].dataflow is None and ours["zero_dataflow_match"].dataflow == 0.0


def test_codebleu_total_equals_the_package_except_without_dataflow(ours):
    """The package's total uses ``dataflow or 1``; ours rescales the other three weights when there is no
    dataflow and keeps a real 0. Everywhere else the totals are equal."""
    checked = 0
    for p in FIXTURES:
        mine, run = ours[p["name"]], p["package"][0]
        if len(p["package"]) > 1:
            continue
        three = run["ngram_match_score"] + run["weighted_ngram_match_score"] + run["syntax_match_score"]
        if mine.dataflow is None:
            assert run["codebleu"] == pytest.approx(0.25 * three + 0.25)
            assert mine.total() == pytest.approx(three / 3)
        elif mine.dataflow == 0:
            assert run["codebleu"] == pytest.approx(0.25 * three + 0.25)
            assert mine.total() == pytest.approx(0.25 * three)
        else:
            assert mine.total() == pytest.approx(run["codebleu"], abs=1e-9), p["name"]
            checked += 1
    assert checked >= 50


def test_codebleu_weights_and_bounds():
    scores = CodeBLEU(ngram=0.2, weighted_ngram=0.4, syntax=0.6, dataflow=None)
    assert scores.total() == pytest.approx(0.4)
    assert scores.total((0.1, 0.1, 0.8, 0.0)) == pytest.approx(0.02 + 0.04 + 0.48)
    same = codebleu("def f(a):\n    b = a + 1\n    return b\n", "def f(a):\n    b = a + 1\n    return b\n")
    assert (same.ngram, same.weighted_ngram, same.syntax, same.dataflow) == pytest.approx((1, 1, 1, 1))


def test_remove_comments_and_docstrings():
    code = 'def f(x):\n    """Doc."""\n    # note\n    y = "s"  # trailing\n    return y\n'
    assert (
        remove_comments_and_docstrings(code) == 'def f(x):\n    y = "s"  \n    return y'
    )  # the package keeps the spaces


# --- TSED -------------------------------------------------------------------


class _AptedNode:
    def __init__(self, node, leaf_text, nodes="named"):
        children = node.named_children if nodes == "named" else node.children
        self.name = f"{node.type}:{node.text.decode()}" if leaf_text and not children else node.type
        self.children = [_AptedNode(child, leaf_text, nodes) for child in children]


def test_tree_edit_distance_equals_apted():
    """Zhang & Shasha (numba) and the apted package compute the same distance (small pairs: apted is slow),
    with node-type labels and with labelled leaves."""
    small = [p for p in FIXTURES if len(p["reference"]) + len(p["candidate"]) < 150]
    assert len(small) >= 10  # the edge cases
    for p in small:
        reference, candidate = p["reference"].strip(), p["candidate"].strip()
        for leaf_text in (False, True):
            for nodes in ("named", "all"):
                expected = APTED(
                    _AptedNode(parse_tree(reference), leaf_text, nodes),
                    _AptedNode(parse_tree(candidate), leaf_text, nodes),
                    PerEditOperationConfig(*PAPER_COSTS),
                ).compute_edit_distance()
                got = tree_edit_distance(reference, candidate, leaf_text=leaf_text, nodes=nodes)[0]
                assert got == pytest.approx(expected, abs=1e-9), (p["name"], leaf_text, nodes)


def test_tsed_by_hand():
    # named nodes: module > expression_statement > assignment > (identifier, integer): 5 nodes, the same types:
    # renaming is free
    named = {"nodes": "named"}
    assert tree_edit_distance("x = 1", "y = 2", **named) == (0.0, 5) and tsed("x = 1", "y = 2", **named) == 1.0
    # with labelled leaves, x -> y is one rename
    assert tree_edit_distance("x = 1", "y = 1", leaf_text=True, **named) == (1.0, 5)
    assert tsed("x = 1", "y = 1", leaf_text=True, **named) == pytest.approx(0.8)
    # one more statement: 4 inserted nodes at 0.8 each, M = 9
    assert tsed("x = 1", "x = 1\nz = 2", **named) == pytest.approx((9 - 3.2) / 9)
    # module > return_statement > integer: expression_statement renamed to return_statement (1.0), assignment
    # and identifier deleted (2 x 1.0), integer kept; d = 3, M = 5
    assert tsed("x = 1", "return 1", **named) == pytest.approx(0.4)
    assert tsed("x = 1", "x = 1", **named) == 1.0
    # every node (the default): the anonymous "=" is a node too, labelled by its text: 6 nodes, renaming still free
    assert tree_edit_distance("x = 1", "y = 2") == (0.0, 6)
    # module > return_statement > ("return", integer): expression_statement -> return_statement and
    # identifier -> "return" renamed (2 x 1.0), assignment and "=" deleted (2 x 1.0); d = 4, M = 6
    assert tree_edit_distance("x = 1", "return 1") == (4.0, 6) and tsed("x = 1", "return 1") == pytest.approx(1 / 3)
    # one more statement: 5 inserted nodes (expression_statement, assignment, identifier, "=", integer), M = 11
    assert tsed("x = 1", "x = 1\nz = 2") == pytest.approx((11 - 4.0) / 11)
    with pytest.raises(ValueError, match="TSED nodes must be one of"):
        tsed("x = 1", "x = 1", nodes="anonymous")


def test_tsed_is_not_symmetric_in_its_costs():
    # deleting costs 1.0, inserting 0.8: growing the tree is cheaper than shrinking it
    assert tsed("x = 1\nz = 2", "x = 1") < tsed("x = 1", "x = 1\nz = 2")


# --- App. E of the paper ------------------------------------------------------

# App. E as printed is reflowed for the page. One reflow is undone before scoring, by a rule fixed in
# advance and applied to every listing: a string literal broken over two lines (a line ending in a literal,
# the next starting with one of the same prefix and quote) is one literal. Example 3's reference as printed
# is not even valid Python (its URL's second half is an indented line of its own); with the literal joined,
# Example 3's target scores the paper's CodeBLEU syntax 1.00.
_LITERAL_END = re.compile(r"""(?<![\w"'])(f?)(["'])[^"'\n]*\2$""")
_LITERAL_START = re.compile(r"""^\s*(f?)(["'])(?!\2\2)""")
METRIC_ORDER = ("bleu", "edit_similarity", "lcs", "codebleu", "codebleu_syntax", "codebleu_dataflow", "tsed")


def joined_literals(code: str) -> str:
    out: list[str] = []
    for line in code.split("\n"):
        end = _LITERAL_END.search(out[-1]) if out else None
        start = _LITERAL_START.match(line)
        if end and start and end.groups() == start.groups():
            out[-1] = out[-1][:-1] + line[start.end() :]
        else:
            out.append(line)
    return "\n".join(out)


def test_joined_literals_undo_exactly_the_broken_literals():
    assert joined_literals('    x = f"a "\n        f"{b}"\ny = 1') == '    x = f"a {b}"\ny = 1'
    assert joined_literals('x = "a"\n"""doc"""') == 'x = "a"\n"""doc"""'  # a docstring is no continuation
    assert joined_literals('x = "a"\nf"b"') == 'x = "a"\nf"b"'  # other prefixes: left alone
    changed = sorted(
        f"{path.parent.name}/{path.name}"
        for path in APP_E.glob("*/*.txt")
        if joined_literals(path.read_text()) != path.read_text()
    )
    assert changed == ["example1/target.txt", "example3/reference.txt", "example3/target.txt"]


def _app_e():
    for example in sorted(path for path in APP_E.iterdir() if path.is_dir()):
        paper = json.loads((example / "paper.json").read_text())
        signature = (example / "signature.txt").read_text()
        truth = textwrap.indent(joined_literals((example / "ground_truth.txt").read_text()), "    ")
        for model in ("target", "reference"):
            generated = textwrap.indent(joined_literals((example / f"{model}.txt").read_text()), "    ")
            yield example.name, model, signature, truth, generated, paper


def test_app_e_against_the_papers_printed_values(capsys):
    """Every text and structural metric of the paper's seven App. E examples against the value the paper
    PRINTS, within 0.02. The values this does not reproduce are listed, each with its reason, in
    tests/data/app_e/unreproduced.json (and the docs/methods/similarity.md, "App. E of the paper"); they are asserted to miss,
    so a change that reproduces one fails here until the list is updated, and no value is pinned at ours."""
    unreproduced = json.loads((APP_E / "unreproduced.json").read_text())
    assert set(unreproduced["values"].values()) <= set(unreproduced["reasons"])
    within = dict.fromkeys(METRIC_ORDER, 0)
    stale, missed = [], []
    for name, model, signature, truth, generated, paper in _app_e():
        assert parses(whole_function(signature, truth)) and parses(whole_function(signature, generated))
        values = {metric: TEXT_METRICS[metric](truth, generated) for metric in ("bleu", "edit_similarity", "lcs")}
        structural = structural_scores(
            whole_function(signature, truth), whole_function(signature, generated), (0.25,) * 4, PAPER_COSTS
        )
        values.update({metric: score.value for metric, score in structural.items()})
        for metric, value in values.items():
            key, ok = f"{name}/{model}/{metric}", abs(value - paper[metric][model]) <= 0.02
            within[metric] += ok
            if ok and key in unreproduced["values"]:
                stale.append(key)
            elif not ok and key not in unreproduced["values"]:
                missed.append(f"{key}: {value:.3f}, paper {paper[metric][model]}")
    with capsys.disabled():
        print(
            f"\nApp. E: {sum(within.values())} of 98 printed values reproduced within 0.02; per metric (of 14): "
            + ", ".join(f"{metric} {count}" for metric, count in within.items())
        )
    assert not missed, missed
    assert not stale, f"reproduced now, remove from unreproduced.json: {stale}"
    assert within == {
        "bleu": 11,
        "edit_similarity": 9,
        "lcs": 10,
        "codebleu": 7,
        "codebleu_syntax": 7,
        "codebleu_dataflow": 13,
        "tsed": 9,
    }


# --- the stage --------------------------------------------------------------


def test_table_rows():
    row = family_row("s", "tsed", Score(0.75), Score(None, "parse_error:generation"))
    assert row == {
        "sample_id": "s",
        "metric": "tsed",
        "target": 0.75,
        "reference": None,
        "delta": None,
        "target_outcome": "ok",
        "reference_outcome": "parse_error:generation",
    }
    assert family_row("s", "tsed", Score(0.75), Score(0.5))["delta"] == 0.25
    with pytest.raises(ValueError):
        Score(None)
    with pytest.raises(ValueError):
        Score(0.5, "timeout")


def _stage_inputs(tmp_path):
    samples = {
        # sample: (signature, ground-truth continuation, target body, reference body)
        "ok": (
            "def add(a, b):\n",
            "    c = a + b\n    return c\n",
            "    c = a + b\n    return c\n",
            "    return a - b\n",
        ),
        "method": (
            "    def push(self, item):\n",
            "        self.items.append(item)\n        n = len(self.items)\n        return n\n",
            "        self.items.append(item)\n",
            "        self.items.insert(0, item)\n",
        ),
        "broken_generation": ("def f(x):\n", "    y = x * 2\n    return y\n", "    y = x *\n", "    return x * 2\n"),
        "no_dataflow": ("def g():\n", "    pass\n", "    pass\n", "    return 1\n"),
        "broken_truth": ("def h(x):\n", "    return (x\n", "    return x\n", "    return x\n"),
    }
    functions = [
        {"sample_id": sid, "signature": sig, "continuation": truth} for sid, (sig, truth, _, _) in samples.items()
    ]
    schema = pa.schema([("sample_id", pa.string()), ("signature", pa.string()), ("continuation", pa.string())])
    write_table(functions, schema, tmp_path / "functions.parquet")
    generations = [
        {"sample_id": sid, "model": model, "prompt_tokens": 1, "generated": body, "function": body, "parsed": True}
        for sid, (_, _, target, reference) in samples.items()
        for model, body in (("target", target), ("reference", reference))
    ]
    write_table(generations, GENERATIONS_SCHEMA, tmp_path / "generations.parquet")


def _run(tmp_path, processes):
    output = tmp_path / f"structural-{processes}.parquet"
    settings = json.dumps(
        {
            "codebleu_weights": [0.25] * 4,
            "tsed_costs": {"delete": 1.0, "insert": 0.8, "rename": 1.0},
            "tsed_leaf_text": False,
            "tsed_nodes": "all",
        }
    )
    assert main(
        [
            "counterfactual-structural",
            "--generations",
            str(tmp_path / "generations.parquet"),
            "--functions",
            str(tmp_path / "functions.parquet"),
            "--settings",
            settings,
            "--processes",
            str(processes),
            "--output",
            str(output),
        ]
    ) in (0, None)
    return output


def test_stage_outcomes_and_determinism(tmp_path):
    _stage_inputs(tmp_path)
    single, pooled = _run(tmp_path, 1), _run(tmp_path, 2)
    assert single.read_bytes() == pooled.read_bytes()
    table = pq.read_table(single)
    assert table.schema.equals(SIMILARITY_FAMILY_SCHEMA)
    rows = {(r["sample_id"], r["metric"]): r for r in table.to_pylist()}
    assert len(rows) == 5 * len(METRICS)
    for metric in METRICS:
        ok = rows[("ok", metric)]
        assert ok["target"] == pytest.approx(1.0) and ok["target_outcome"] == ok["reference_outcome"] == "ok"
        assert ok["delta"] == pytest.approx(ok["target"] - ok["reference"]) and ok["delta"] > 0
        assert rows[("method", metric)]["target_outcome"] == "ok"  # dedented before parsing
        broken = rows[("broken_generation", metric)]
        assert (broken["target"], broken["target_outcome"], broken["delta"]) == (None, "parse_error:generation", None)
        assert broken["reference_outcome"] == "ok" and broken["reference"] is not None
        truth = rows[("broken_truth", metric)]
        assert truth["target"] is None and truth["reference"] is None
        assert truth["target_outcome"] == truth["reference_outcome"] == "parse_error:ground_truth"
    no_dataflow = rows[("no_dataflow", "codebleu_dataflow")]
    assert (
        no_dataflow["target"] is None
        and no_dataflow["target_outcome"] == no_dataflow["reference_outcome"] == "no_dataflow"
    )
    # CodeBLEU without dataflow: the mean of the other three components
    parts = codebleu(whole_function("def g():\n", "    pass\n"), whole_function("def g():\n", "    pass\n"))
    assert rows[("no_dataflow", "codebleu")]["target"] == pytest.approx(
        (parts.ngram + parts.weighted_ngram + parts.syntax) / 3
    )
