"""The verifier's rules (``model: rules``): the same problem statement over
another solution, near-identical files a few lines apart, containment both
ways, structure, execution equivalence in the sandbox, thresholds that move
decisions; and `verify-pairs` (the learned verifier by default) with its bad
input. The rules' figures on generated pairs come from
benchmarks/verify_devset.py; the learned verifier's tests are in
test_verify_human.py."""

import json
from dataclasses import replace

import pyarrow.parquet as pq
import pytest

from leaktrace.cli import main as cli
from leaktrace.data.corpora import stdlib_root
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.leakage import combiner
from leaktrace.leakage.devset import ALTERNATIVES, _edit_lines, half_of
from leaktrace.leakage.execution import Executor, callable_as
from leaktrace.leakage.pairs import settings_for
from leaktrace.leakage.verify import Verifier, decide, supersede
from leaktrace.sandbox import SandboxLimits, isolation_level
from leaktrace.seeding import rng_for

HUMANEVAL = {s.task_id: s for s in load_humaneval(shipped_humaneval_path(), "humaneval")}
ALT = {r["task_id"]: r["code"] for r in map(json.loads, ALTERNATIVES.read_text().splitlines())}
LIMITS = SandboxLimits(timeout_s=5, cpu_s=5, isolation="weak")


def _verifier(execute=False, model="rules"):
    return Verifier(settings_for("default", execute, model=model), Executor(LIMITS) if execute else None)


def _pair(v, bench, corpus, language="python", **run):
    return v.verify(v.side(bench, language, **run), v.side(corpus, language))


def test_same_statement_other_solution_is_a_duplicate_the_old_rules_missed():
    s = HUMANEVAL["HumanEval/13"]  # gcd: Euclid's loop against math.gcd
    other = s.prompt.rstrip() + "\n" + ALT["HumanEval/13"].split("\n", 1)[1]
    v = _pair(_verifier(), s.code, other)
    assert (v.duplicate, v.decided_by, v.clone_type) == (True, "statement", "type-4")
    assert v.statement == 1.0 and v.statement_words >= 12 and v.code_containment <= 0.5
    assert not v.flagged and not v.renamed_equal  # Jaccard/containment and Type-2 alone said "none"


def test_near_identical_files_a_few_lines_apart():
    text = (stdlib_root() / "colorsys.py").read_text()
    edited = _edit_lines(text, 4, rng_for(0, "test"))
    v = _pair(_verifier(), text, edited)
    assert (v.duplicate, v.decided_by, v.clone_type) == (True, "structure", "type-3")
    assert v.alignment > 0.95 and not v.layout_equal


def test_containment_both_ways_and_unrelated_code():
    small = "def scale(values, k):\n    out = []\n    for v in values:\n        out.append(v * k + 1)\n    return out\n"
    big = "".join(f"def helper_{i}(a):\n    return a * {i} - {i} // 2\n\n" for i in range(40)) + small
    v = _pair(_verifier(), small, big)
    assert v.containment == 1.0 and v.containment_corpus < 0.2 and v.aligned and v.duplicate
    back = _pair(_verifier(), big, small)  # the corpus unit inside the benchmark sample
    assert back.containment_corpus == 1.0 and back.containment < 0.2
    other = _pair(_verifier(), small, "def shout(text):\n    return text.upper() + '!' * 3\n")
    assert (other.duplicate, other.clone_type, other.decided_by) == (False, "none", "none")


def test_humaneval_56_and_61_and_thresholds_that_move_decisions():
    v = _verifier()
    pair = _pair(v, HUMANEVAL["HumanEval/56"].code, HUMANEVAL["HumanEval/61"].code)
    assert (
        pair.clone_type == "type-2" and not pair.literals_equal and pair.decided_by == "statement"
    )  # no tests: "<>" vs "()"
    assert decide(pair, replace(v.s, statement=pair.statement + 0.01)) == ("type-2", False, "none")
    assert decide(replace(pair, execution="fail"), v.s) == ("type-2", False, "none")  # their tests tell them apart
    s = HUMANEVAL["HumanEval/13"]
    same = _pair(v, s.code, s.prompt.rstrip() + "\n" + ALT["HumanEval/13"].split("\n", 1)[1])
    assert decide(same, replace(v.s, statement=1.01)) == ("none", False, "none")


def test_text_only_statements():
    doc = " ".join(HUMANEVAL["HumanEval/0"].prompt.split('"""')[1].split())
    v = _pair(_verifier(), doc, f"## Exercise\n\n{doc}\n\nSolve it.\n", language="text")
    assert v.duplicate and v.statement == 1.0
    other = _pair(_verifier(), doc, " ".join(HUMANEVAL["HumanEval/5"].prompt.split('"""')[1].split()), language="text")
    assert not other.duplicate


def test_callable_as_aliases_one_function():
    assert callable_as("def g(x):\n    return x\n", "f") == ("def g(x):\n    return x\n\n\nf = g\n", None)
    assert callable_as("def f(x):\n    return x\n", "f")[0] == "def f(x):\n    return x\n"
    assert callable_as("x = (", "f") == (None, "corpus text is not Python")
    assert callable_as("def a():\n    pass\ndef b():\n    pass\n", "f")[0] is None


def test_execution_equivalence_in_the_sandbox():
    try:
        isolation_level(LIMITS)
    except Exception as err:  # noqa: BLE001 - no sandbox on this platform
        pytest.skip(f"no sandbox: {err}")
    s = HUMANEVAL["HumanEval/58"]  # common elements: nested loops against set intersection
    v = _verifier(execute=True)
    run = {"test": s.test, "entry_point": s.entry_point}
    same = _pair(v, s.code, ALT["HumanEval/58"], **run)
    assert (same.execution, same.duplicate, same.decided_by, same.clone_type) == ("pass", True, "execution", "type-4")
    wrong = _pair(v, s.code, ALT["HumanEval/58"].replace("&", "|"), **run)
    assert (wrong.execution, wrong.duplicate) == ("fail", False)
    no_tests = _pair(v, s.code, ALT["HumanEval/58"])
    assert no_tests.execution is None and no_tests.execution_note == "benchmark has no tests or entry point"


def test_verify_pairs_command(tmp_path):
    s = HUMANEVAL["HumanEval/13"]
    good = tmp_path / "pairs.jsonl"
    good.write_text(
        json.dumps({"id": "gcd", "bench_text": s.code, "corpus_text": s.code.replace("    ", "  ")})
        + "\n\n"
        + json.dumps(
            {
                "bench_text": "def f(x):\n    return x + 1\n",
                "corpus_text": "print('hello world')\n",
                "language": "python",
            }
        )
        + "\n"
    )
    out = tmp_path / "out.parquet"
    assert cli(["verify-pairs", str(good), str(out)]) == 0
    rows = pq.read_table(out).to_pylist()
    assert [(r["id"], r["clone_type"], r["duplicate"], r["decided_by"]) for r in rows] == [
        ("gcd", "type-1", True, "layout"),
        ("3", "none", False, "model"),
    ]  # an exact copy by definition
    assert rows[0]["score"] > 0.9 > 0.1 > rows[1]["score"]
    assert {"jaccard", "statement", "alignment", "shape", "lines", "score", "execution", "execution_note"} <= set(
        rows[0]
    )


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "line 2: not JSON"),
        ('{"bench_text": "x"}', "line 2: missing or non-string field 'corpus_text'"),
        ('{"bench_text": "x", "corpus_text": "y", "language": "cobol"}', "line 2: unknown language 'cobol'"),
        ('["x", "y"]', "line 2: each line needs a JSON object"),
    ],
)
def test_verify_pairs_bad_input_names_the_line(tmp_path, caplog, line, message):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"bench_text": "a", "corpus_text": "b"}\n' + line + "\n")
    assert cli(["verify-pairs", str(bad), str(tmp_path / "out.parquet")]) == 2
    assert message in caplog.text and not (tmp_path / "out.parquet").exists()


def test_dev_set_halves_are_stable_and_balanced():
    groups = [f"humaneval/HumanEval/{i}" for i in range(164)]
    halves = [half_of(g) for g in groups]
    assert halves == [half_of(g) for g in groups] and 60 < halves.count("dev") < 104


def test_a_unit_that_copies_one_sample_is_not_a_looser_duplicate_of_another():
    v = _verifier()
    unit = v.side(HUMANEVAL["HumanEval/7"].code, "python")  # a corpus unit: a copy of /7
    copy, lookalike = (v.verify(v.side(HUMANEVAL[t].code, "python"), unit) for t in ("HumanEval/7", "HumanEval/29"))
    assert (copy.decided_by, lookalike.decided_by, lookalike.duplicate) == ("layout", "structure", True)
    kept, dropped = supersede([copy, lookalike])
    assert kept == copy and (dropped.duplicate, dropped.decided_by) == (False, "copy_of_other")
    assert supersede([lookalike]) == [lookalike]
    # the learned verifier: its exact copy (Type-1 form) supersedes its looser duplicates (Type-3/4 form) the same way
    m = _verifier(model="shipped")
    unit = m.side(HUMANEVAL["HumanEval/7"].code, "python")
    copy, lookalike = (m.verify(m.side(HUMANEVAL[t].code, "python"), unit) for t in ("HumanEval/7", "HumanEval/29"))
    assert (copy.decided_by, copy.duplicate, copy.clone_type) == ("layout", True, "type-1")
    loose = replace(lookalike, duplicate=True, decided_by="model", clone_type="type-3")
    # nor an input leak of /29: the two share their docstring's template
    assert supersede([copy, loose]) == [
        copy,
        replace(loose, duplicate=False, decided_by="copy_of_other", input_leak=False),
    ]


def test_verify_pairs_with_the_llm_judge(tmp_path, monkeypatch):
    import leaktrace.models.hf as hf

    class Judge:  # stands in for the model: the wiring is what is tested, not a model's answers
        def __init__(self, spec, progress):
            self.answers = iter(["Label: not_related", "I cannot tell"])

        def chat(self, messages, *, max_new_tokens):
            assert "def f(x)" in messages[0]["content"]
            return next(self.answers)

    monkeypatch.setattr(hf, "HFLanguageModel", Judge)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "".join(
            json.dumps({"bench_text": "def f(x):\n    return x + 1\n", "corpus_text": text}) + "\n"
            for text in ("def f(x):\n    return x + 1\n", "def g(y):\n    return y + 1\n")
        )
    )
    assert cli(["verify-pairs", str(pairs), str(tmp_path / "out.parquet"), "--judge", '{"model": "any"}']) == 0
    rows = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [(r["judge_label"], r["duplicate"], r["decided_by"]) for r in rows] == [
        ("not_related", False, "judge"),
        ("unparsed", rows[1]["score"] >= combiner.load().threshold, "model"),
    ]


def test_without_a_sandbox_the_rules_decide_and_say_why(monkeypatch):
    import leaktrace.leakage.execution as execution
    from leaktrace.sandbox import SandboxUnavailable

    def unavailable(*args, **kwargs):
        raise SandboxUnavailable("no namespaces here")

    monkeypatch.setattr(execution, "run_tests", unavailable)
    s = HUMANEVAL["HumanEval/58"]
    v = _pair(_verifier(execute=True), s.code, ALT["HumanEval/58"], test=s.test, entry_point=s.entry_point)
    assert (v.execution, v.duplicate, v.execution_note) == (None, False, "sandbox unavailable: no namespaces here")
