"""CodeSnitch's mutations: each keeps behaviour and parses, T3 lands on its target,
T2 never renames what it must not."""

import ast
import builtins
import importlib
import inspect
import io
import json
import random
import tokenize

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.mutate.formatting import reformat
from leaktrace.mutate.registry import Mutation, apply_mutation, configured_mutations
from leaktrace.mutate.statements import CATALOGUE, line_similarity, rewrite_statements
from leaktrace.sandbox import SandboxLimits
from leaktrace.variants.lexicon import build_identifier_lexicon
from leaktrace.variants.naming import NameProposer
from leaktrace.variants.synonyms import WordAlternatives
from leaktrace.variants.validate import reserved_names, validate_variants

SAMPLES = load_humaneval(shipped_humaneval_path(), "h")
CORPUS_MODULES = ("argparse", "bisect", "csv", "difflib", "heapq", "json.decoder", "random", "statistics", "string",
                  "textwrap")
MUTATIONS = [Mutation.parse(n) for n in ("T1", "T2a", "T2b", "T3-0.9", "T3-0.7", "T3-0.5", "hybrid-0.8")]
# The fast sandbox check: a returned comprehension (29), a helper the test calls (38).
SANDBOXED = (29, 38)


@pytest.fixture(scope="module")
def names():
    lexicon = build_identifier_lexicon(
        (inspect.getsource(importlib.import_module(m)) for m in CORPUS_MODULES), min_count=1)
    return NameProposer(WordAlternatives(lexicon.word_counts), lexicon.word_counts)


def _mutate(mutation, sample, seed, names):
    return apply_mutation(mutation, sample.code, "python", sample.entry_point, random.Random(seed), names=names,
                          protected=reserved_names(sample.test))


def _identifiers(code):
    return [t.string for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.NAME]


def _sandbox_verdicts(indices, names):
    """Differential validation: each mutated sample's test record must equal its original's."""
    items, originals = [], []
    for k in indices:
        sample, base = SAMPLES[k], len(items)
        items.append((sample.code, sample.test, sample.entry_point))
        for mutation in MUTATIONS:
            mutated = _mutate(mutation, sample, k, names)
            items.append((mutated.text, sample.test, mutated.entry_point))
        originals += [base] * (1 + len(MUTATIONS))
    verdicts = validate_variants(items, originals, SandboxLimits(timeout_s=10.0), workers=2)
    return [(items[i][0], why) for i, (ok, why) in enumerate(verdicts) if not ok]


def test_every_mutation_keeps_behaviour_under_the_tests_in_the_sandbox(names):
    assert _sandbox_verdicts(SANDBOXED, names) == []


@pytest.mark.slow
def test_every_mutation_keeps_behaviour_on_all_of_humaneval(names):
    assert _sandbox_verdicts(range(len(SAMPLES)), names) == []


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.integers(0, len(SAMPLES) - 1), seed=st.integers(0, 2**32), which=st.sampled_from(MUTATIONS))
def test_mutations_parse_and_keep_the_program_s_structure(names, index, seed, which):
    """Every mutation parses; T1 changes layout only (same AST); T2 keeps the entry point and the tests' names."""
    sample = SAMPLES[index]
    mutated = _mutate(which, sample, seed, names)
    tree = ast.parse(mutated.text)
    if which.kind == "T1":
        assert ast.dump(tree) == ast.dump(ast.parse(sample.code))
    if which.kind in ("T2a", "T2b"):
        original_names = set(_identifiers(sample.code))
        kept = reserved_names(sample.test) | {sample.entry_point} | {n for n in original_names if hasattr(builtins, n)}
        assert kept & original_names <= set(_identifiers(mutated.text))
        # renaming is consistent: the token stream differs only at identifiers
        before, after = _identifiers(sample.code), _identifiers(mutated.text)
        assert len(before) == len(after)


@settings(max_examples=15, deadline=None)
@given(index=st.integers(0, len(SAMPLES) - 1), seed=st.integers(0, 2**32), target=st.sampled_from([0.9, 0.7, 0.5]))
def test_t3_lands_within_one_line_of_its_target_or_says_it_did_not(index, seed, target):
    code = SAMPLES[index].code
    result = rewrite_statements(code, target, random.Random(seed))
    one_line = 1 / len(code.splitlines())
    assert result.similarity == pytest.approx(line_similarity(code, result.text))
    assert result.similarity >= target - one_line - 1e-9  # never more than a line below
    assert result.reached == (abs(result.similarity - target) <= one_line)
    compile(result.text, "<t3>", "exec")


def test_t3_reports_a_sample_no_rewrite_can_bring_to_its_target():
    code = 'def f(x):\n    """Doc\n\n    more doc\n    and more\n    """\n    return x\n'
    result = rewrite_statements(code, 0.3, random.Random(0))
    assert not result.reached
    assert result.similarity > 0.3 + 1 / len(code.splitlines())


def test_t3_results_and_choices_repeat_with_the_seed():
    code = SAMPLES[0].code
    assert rewrite_statements(code, 0.5, random.Random(3)) == rewrite_statements(code, 0.5, random.Random(3))


@pytest.mark.parametrize(("source", "rewrite", "expected", "arguments"), [
    ("def f(x):\n    x += 1\n    return x\n", "expand_augmented", "    x = x + 1\n", [0, 2.5]),
    ("def f(x):\n    x = x - 2\n    return x\n", "contract_augmented", "    x -= 2\n", [3, 2.5]),
    ("def f(x):\n    if x > 1:\n        return 1\n    else:\n        return 2\n", "swap_if_else",
     "    if not x > 1:\n", [0, 1, 2]),
    ("def f(x):\n    return [y for y in x if y]\n", "returned_comprehension_to_loop", "        if y:\n",
     [[], [0, 3, 4]]),
    ("def f(x):\n    r = []\n    for y in x:\n        r.append(y)\n    return r\n", "loop_to_comprehension",
     "    r = [y for y in x]\n", [[], [0, 3]]),
    ("def f(x):\n    return x in [1, 2]\n", "membership_forms", "    return x in (1, 2)\n", [0, 1, 2]),
    ("def f(x):\n    return sum(range(x))\n", "explicit_range_start", "range(0, x)", [0, 5]),
])
def test_catalogue_entries_rewrite_as_documented(source, rewrite, expected, arguments):
    only = tuple(r for r in CATALOGUE if r.name == rewrite)
    result = rewrite_statements(source, 0.0, random.Random(0), rewrites=only)
    assert result.rewrites and expected in result.text
    before, after = {}, {}
    exec(source, before)
    exec(result.text, after)
    assert [after["f"](a) for a in arguments] == [before["f"](a) for a in arguments]


@pytest.mark.parametrize("source", [
    # the loop variable `y` is used after the comprehension: a loop would leak it
    "def f(x):\n    y = 0\n    z = [y for y in x]\n    return z, y\n",
    # `set` is the program's own name
    "def f(x, set=list):\n    z = {y for y in x}\n    return z\n",
])
def test_comprehensions_stay_where_a_loop_would_change_the_program(source):
    only = tuple(r for r in CATALOGUE if r.name == "comprehension_to_loop")
    assert rewrite_statements(source, 0.0, random.Random(0), rewrites=only).rewrites == ()


def test_augmented_assignment_stays_where_a_list_would_be_repeated_in_place():
    """`xs *= 2` extends the caller's list; `xs = xs * 2` does not."""
    source = "def f(xs):\n    xs = xs * 2\n    return xs\n"
    only = tuple(r for r in CATALOGUE if r.name == "contract_augmented")
    assert rewrite_statements(source, 0.0, random.Random(0), rewrites=only).rewrites == ()


def test_t2_never_renames_builtins_attributes_imports_self_or_the_tested_names(names):
    code = (
        "import math\nfrom os import path as where\n\n"
        "class Box:\n    def area(self, width):\n        return self.width * width\n\n"
        "def helper(count):\n    total = math.floor(count) + len(where.sep)\n    return total\n\n"
        "def solve(numbers):\n    values = sorted(numbers)\n    return helper(values[0]) + Box().area(1)\n"
    )
    test = "def check(candidate):\n    assert candidate([1]) == helper(1)\n"
    for kind in ("T2a", "T2b"):
        for seed in range(5):
            mutated = apply_mutation(Mutation(kind), code, "python", "solve", random.Random(seed), names=names,
                                     protected=reserved_names(test))
            after = set(_identifiers(mutated.text))
            assert {"math", "where", "path", "os", "Box", "area", "self", "width", "floor", "sep", "sorted", "len",
                    "helper", "solve"} <= after
            assert not {"candidate", "check"} & after  # the test's own names are never introduced
            if kind == "T2b":
                assert "count" not in after and "total" not in after and "values" not in after
                assert "numbers" not in after


def test_t1_formats_java_and_cpp_with_clang_format():
    java = "class A { int f(int x){ if(x>0){return x*2;} return 0; } }\n"
    cpp = "int f(int x){if(x>0){return x*2;}return 0;}\n"
    for code, language in ((java, "java"), (cpp, "cpp")):
        text = reformat(code, language, random.Random(1))
        assert text != code
        assert "".join(text.split()) == "".join(code.split())  # only whitespace moved


def test_configured_mutations_follow_the_clone_type_order():
    mutations = configured_mutations({"kinds": ["hybrid", "T3", "T2b", "T1", "T2a"], "t3_targets": [0.5, 0.9, 0.7],
                                      "hybrid_target": 0.8})
    assert [m.name for m in mutations] == ["T1", "T2a", "T2b", "T3-0.9", "hybrid-0.8", "T3-0.7", "T3-0.5"]
    assert Mutation.parse("T3-0.7") == Mutation("T3", 0.7)
    with pytest.raises(ValueError):
        Mutation("T3")


def test_settings_put_each_text_on_the_side_the_paper_does():
    """Scores equal to the side the paper assigns (1 member, 0 non-member) give AUC 1 in every setting."""
    from leaktrace.stages.mutate import ORIGINAL, setting_rows

    mutations = [Mutation.parse(n) for n in ("T1", "T2b", "T3-0.5")]
    split = {"m1": "member", "m2": "member", "n1": "non-member", "n2": "non-member"}
    conditions = [ORIGINAL] + [m.name for m in mutations]

    def table(member_side):
        return {(sid, c): {"loss": float(member_side(sid, c))} for sid in split for c in conditions}

    def auc(rows, analysis, condition):
        return next(r["auc"] for r in rows if r["analysis"] == analysis and r["condition"] == condition)

    # Settings 1 and 3: every member text is a member
    rows = setting_rows(table(lambda sid, c: split[sid] == "member"), split, mutations)
    assert auc(rows, "setting1", "T2b") == auc(rows, "setting3", "T3-0.5") == 1.0
    # Setting 2 under "up to T2b": members' T3 texts count as non-members; non-members' T1/T2b stay non-members
    rows = setting_rows(table(lambda sid, c: split[sid] == "member" and c != "T3-0.5"), split, mutations)
    assert auc(rows, "setting2", "up to T2b") == 1.0
    counts = next(r for r in rows if r["condition"] == "up to T2b")
    assert (counts["n_members"], counts["n_non_members"]) == (2 * 3, 2 + 2 + 2 * 2)
    # Verbatim: every mutated member is a non-member
    rows = setting_rows(table(lambda sid, c: split[sid] == "member" and c == ORIGINAL), split, mutations)
    assert auc(rows, "setting2", "verbatim") == 1.0


def test_t2_drop_is_setting1_auc_under_t2a_minus_t2b_and_is_drawn(tmp_path):
    """Members keep a high score under T2a and fall to the non-members' under T2b:
    the drop is the whole AUC above chance, and both figures are written."""
    from leaktrace.report.mutation_plots import setting_heatmaps, t2_drop_plot
    from leaktrace.stages.mutate import ORIGINAL, setting_rows, t2_drop_rows

    mutations = [Mutation.parse(n) for n in ("T2a", "T2b")]
    split = {"m1": "member", "m2": "member", "n1": "non-member", "n2": "non-member"}
    scores = {(sid, c): {"loss": 1.0 if split[sid] == "member" and c != "T2b" else 0.0}
              for sid in split for c in (ORIGINAL, "T2a", "T2b")}
    rows = setting_rows(scores, split, mutations)
    assert t2_drop_rows(rows) == [{"method": "loss", "auc_t2a": 1.0, "auc_t2b": 0.5, "drop": 0.5}]
    assert t2_drop_rows([r for r in rows if r["condition"] != "T2b"]) == []
    setting_heatmaps(rows, tmp_path / "heatmaps.png")
    t2_drop_plot(t2_drop_rows(rows), tmp_path / "t2_drop.png")
    assert (tmp_path / "heatmaps.png").stat().st_size > 0 and (tmp_path / "t2_drop.png").stat().st_size > 0


def test_a_mutated_texts_neighbours_replay_its_originals_renamings():
    """Neighbor's neighbour of a mutated text carries the same new names as the
    original's variant, found under the names T2 gave them; names the mutated
    text does not bind are left out."""
    from leaktrace.mutate.registry import Mutated
    from leaktrace.stages.mutate import _neighbour_renames
    from leaktrace.variants.renaming import replay_renames

    code = "def total(values):\n    running = 0\n    for item in values:\n        running += item\n    return running\n"
    variant = {"values": "numbers", "running": "acc", "item": "x"}
    laid_out = Mutated(reformat(code, "python", random.Random(1)), "total", 1.0, True)
    replayed = replay_renames(laid_out.text, "total", _neighbour_renames(variant, laid_out))
    assert replayed.renames == variant and "acc += x" in replayed.text
    renamed = Mutated(code.replace("running", "tally").replace("item", "elem"), "total", 0.2, True,
                      {"renames": {"running": "tally", "item": "elem"}})
    replayed = replay_renames(renamed.text, "total", _neighbour_renames(variant, renamed))
    assert replayed.text == code.replace("values", "numbers").replace("running", "acc").replace("item", "x")
    assert replay_renames(code, "total", {"absent": "y"}) is None
    # a new name the text already uses is not introduced
    assert replay_renames(code, "total", {"running": "item", "values": "numbers"}).renames == {"values": "numbers"}


def test_only_valid_mutated_texts_bring_their_neighbours_to_scoring(tmp_path):
    from leaktrace.artifacts import write_table
    from leaktrace.stages.mutate import MUTATIONS_SCHEMA, scored_mutations

    def row(sid, neighbor, valid, reached=True):
        return {"sample_id": sid, "mutation": "T1", "neighbor": neighbor, "text": f"{sid}{neighbor}", "similarity": None,
                "target": None, "reached": reached, "details": "{}", "valid": valid, "invalid_reason": None,
                "isolation": "full"}

    path = tmp_path / "mutations.parquet"
    write_table([row("a", 0, True), row("a", 3, True), row("a", 4, False), row("b", 0, False), row("b", 3, True),
                 row("c", 0, True, reached=False), row("c", 3, True)], MUTATIONS_SCHEMA, path)
    assert [(r["sample_id"], r["neighbor"]) for r in scored_mutations(path)] == [("a", 0)]
    assert [(r["sample_id"], r["neighbor"]) for r in scored_mutations(path, neighbours=True)] == [("a", 0), ("a", 3)]


def test_mutate_command_writes_one_verdict_a_line(tmp_path):
    from leaktrace.cli import main

    sample = SAMPLES[29]
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in [
        {"id": "a", "code": sample.code, "language": "python", "tests": sample.test, "entry_point": sample.entry_point},
        {"id": "b", "code": "class A { int f(int x){return x*2;} }\n", "language": "java"},
        {"id": "c", "code": "def broken(:\n", "language": "python"},
    ]) + "\n")
    output = tmp_path / "out.jsonl"
    assert main(["mutate", "--kind", "T3", "--target", "0.7", str(source), str(output)]) == 0
    rows = {r["id"]: r for r in map(json.loads, output.read_text().splitlines())}
    assert rows["a"]["valid"] is True and rows["a"]["similarity"] <= 0.7 + 1 / len(sample.code.splitlines())
    assert rows["b"]["valid"] is False and "Python only" in rows["b"]["invalid_reason"]
    assert rows["c"]["code"] is None and rows["c"]["invalid_reason"].startswith("mutation:")
