"""CodeSnitch's mutations: each keeps behaviour and parses, T3 lands on its target,
T2 never renames what it must not."""

import ast
import builtins
import importlib
import inspect
import io
import json
import random
import re
import tokenize
from pathlib import Path

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
CORPUS_MODULES = (
    "argparse",
    "bisect",
    "csv",
    "difflib",
    "heapq",
    "json.decoder",
    "random",
    "statistics",
    "string",
    "textwrap",
)
MUTATIONS = [Mutation.parse(n) for n in ("T1", "T2a", "T2b", "T3-0.9", "T3-0.7", "T3-0.5", "hybrid-0.8")]
# The fast sandbox check: a returned comprehension (29), a helper the test calls (38).
SANDBOXED = (29, 38)


@pytest.fixture(scope="module")
def names():
    lexicon = build_identifier_lexicon(
        (inspect.getsource(importlib.import_module(m)) for m in CORPUS_MODULES), min_count=1
    )
    return NameProposer(WordAlternatives(lexicon.word_counts), lexicon.word_counts)


def _mutate(mutation, sample, seed, names):
    return apply_mutation(
        mutation,
        sample.code,
        "python",
        sample.entry_point,
        random.Random(seed),
        names=names,
        protected=reserved_names(sample.test),
    )


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


@pytest.mark.parametrize(
    ("source", "rewrite", "expected", "arguments"),
    [
        ("def f(x):\n    x += 1\n    return x\n", "expand_augmented", "    x = x + 1\n", [0, 2.5]),
        ("def f(x):\n    x = x - 2\n    return x\n", "contract_augmented", "    x -= 2\n", [3, 2.5]),
        (
            "def f(x):\n    if x > 1:\n        return 1\n    else:\n        return 2\n",
            "swap_if_else",
            "    if not x > 1:\n",
            [0, 1, 2],
        ),
        (
            "def f(x):\n    return [y for y in x if y]\n",
            "returned_comprehension_to_loop",
            "        if y:\n",
            [[], [0, 3, 4]],
        ),
        (
            "def f(x):\n    r = []\n    for y in x:\n        r.append(y)\n    return r\n",
            "loop_to_comprehension",
            "    r = [y for y in x]\n",
            [[], [0, 3]],
        ),
        ("def f(x):\n    return x in [1, 2]\n", "membership_forms", "    return x in (1, 2)\n", [0, 1, 2]),
        ("def f(x):\n    return sum(range(x))\n", "explicit_range_start", "range(0, x)", [0, 5]),
        (
            "def f(x):\n    y = x + 1\n    return y\n",
            "add_logging",
            '    logging.getLogger(__name__).debug("y = %r", y)\n',
            [0, 2],
        ),
    ],
)
def test_catalogue_entries_rewrite_as_documented(source, rewrite, expected, arguments):
    only = tuple(r for r in CATALOGUE if r.name == rewrite)
    result = rewrite_statements(source, 0.0, random.Random(0), rewrites=only)
    assert result.rewrites and expected in result.text
    before, after = {}, {}
    exec(source, before)
    exec(result.text, after)
    assert [after["f"](a) for a in arguments] == [before["f"](a) for a in arguments]


@pytest.mark.parametrize(
    "source",
    [
        # the loop variable `y` is used after the comprehension: a loop would leak it
        "def f(x):\n    y = 0\n    z = [y for y in x]\n    return z, y\n",
        # `set` is the program's own name
        "def f(x, set=list):\n    z = {y for y in x}\n    return z\n",
    ],
)
def test_comprehensions_stay_where_a_loop_would_change_the_program(source):
    only = tuple(r for r in CATALOGUE if r.name == "comprehension_to_loop")
    assert rewrite_statements(source, 0.0, random.Random(0), rewrites=only).rewrites == ()


def test_logging_is_imported_once_and_never_over_a_name_the_program_uses():
    only = tuple(r for r in CATALOGUE if r.name == "add_logging")
    source = '"""Doc."""\nfrom __future__ import annotations\n\n\ndef f(x):\n    y = x\n    z = y\n    return z\n'
    result = rewrite_statements(source, 0.0, random.Random(0), rewrites=only)
    assert result.rewrites == ("add_logging", "add_logging")
    assert result.text.splitlines()[:3] == ['"""Doc."""', "from __future__ import annotations", "import logging"]
    assert result.text.count("import logging") == 1
    shadowed = "def f(logging):\n    y = logging\n    return y\n"
    assert rewrite_statements(shadowed, 0.0, random.Random(0), rewrites=only).rewrites == ()


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
            mutated = apply_mutation(
                Mutation(kind),
                code,
                "python",
                "solve",
                random.Random(seed),
                names=names,
                protected=reserved_names(test),
            )
            after = set(_identifiers(mutated.text))
            assert {
                "math",
                "where",
                "path",
                "os",
                "Box",
                "area",
                "self",
                "width",
                "floor",
                "sep",
                "sorted",
                "len",
                "helper",
                "solve",
            } <= after
            assert not {"candidate", "check"} & after  # the test's own names are never introduced
            if kind == "T2b":
                assert "count" not in after and "total" not in after and "values" not in after
                assert "numbers" not in after


def test_abbreviations_drop_inner_vowels_of_the_longer_words():
    """Hand values: words of four or more letters lose their inner vowels;
    shorter words and digits stay; a name with nothing to shorten has no abbreviation."""
    from leaktrace.mutate.renaming import abbreviation

    assert abbreviation("count") == "cnt"
    assert abbreviation("numbers") == "nmbrs"
    assert abbreviation("max_value") == "max_vl"
    assert abbreviation("isPalindrome") == "isPlndrm"
    assert abbreviation("total") == "ttl" and abbreviation("balloon") == "blln"
    assert abbreviation("i") is None and abbreviation("arr") is None and abbreviation("x2") is None


def test_t2a_attempts_every_name_t2b_renames_synonym_abbreviation_or_number(names):
    """CodeSnitch's T2a renames all identifiers: a name without a synonym (`i`, `k`) gets an
    abbreviation or a number, a name the docstring echoes (`numbers`) is renamed too."""
    code = (
        'def solve(numbers, k):\n    """Sum the numbers above k."""\n    total = 0\n'
        "    for i in numbers:\n        if i > k:\n            total += i\n    return total\n"
    )
    renamed = {}
    for kind in ("T2a", "T2b"):
        mutated = apply_mutation(Mutation(kind), code, "python", "solve", random.Random(0), names=names)
        renamed[kind] = mutated.details
    assert set(renamed["T2a"]["renames"]) == set(renamed["T2b"]["renames"]) == {"numbers", "k", "total", "i"}
    assert renamed["T2a"]["kinds"] == {"numbers": "parameter", "k": "parameter", "total": "local", "i": "local"}
    assert set(renamed["T2a"]["sources"].values()) <= {"synonym", "abbreviation", "numbered"}
    assert set(renamed["T2b"]["sources"].values()) == {"random"}
    text = apply_mutation(Mutation("T2a"), code, "python", "solve", random.Random(0), names=names).text
    assert "Sum the numbers above" in text  # the docstring's English stays (its code reference `k` follows)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.integers(0, len(SAMPLES) - 1), seed=st.integers(0, 2**32))
def test_t2a_and_t2b_rename_the_same_names_on_humaneval(names, index, seed):
    sample = SAMPLES[index]
    t2a, t2b = (_mutate(Mutation(kind), sample, seed, names).details for kind in ("T2a", "T2b"))
    assert set(t2a["renames"]) == set(t2b["renames"])
    assert t2a["kinds"] == t2b["kinds"]


def test_name_kinds_follow_the_first_binding():
    from leaktrace.mutate.renaming import name_kinds

    code = (
        "LIMIT = 3\n\nclass Box:\n    pass\n\ndef helper(size, *rest):\n    total = [v for v in rest]\n"
        "    try:\n        pass\n    except ValueError as error:\n        raise\n    return lambda w: w + size\n"
    )
    assert name_kinds(code) == {
        "LIMIT": "global",
        "Box": "class",
        "helper": "function",
        "size": "parameter",
        "rest": "parameter",
        "total": "local",
        "v": "local",
        "error": "local",
        "w": "parameter",
    }


def test_rename_counts_sum_names_by_kind_and_source_over_the_texts():
    from leaktrace.stages.mutate import rename_count_rows, rename_table

    def row(mutation, renames, kinds, sources, valid=True):
        return {
            "mutation": mutation,
            "text": "x",
            "valid": valid,
            "details": json.dumps({"renames": renames, "kinds": kinds, "sources": sources}),
        }

    texts = [
        row(
            "T2a",
            {"i": "i2", "numbers": "nums"},
            {"i": "local", "numbers": "parameter"},
            {"i": "numbered", "numbers": "synonym"},
        ),
        row("T2a", {"n": "m"}, {"n": "parameter"}, {"n": "synonym"}, valid=False),
        row(
            "T2b",
            {"i": "qwertyui", "numbers": "asdfghjk"},
            {"i": "local", "numbers": "parameter"},
            {"i": "random", "numbers": "random"},
        ),
        {"mutation": "T1", "text": "x", "valid": True, "details": "{}"},
    ]
    rows = rename_count_rows(texts)
    assert rows == [
        {"mutation": "T2a", "kind": "local", "source": "numbered", "names": 1, "samples": 2, "valid_names": 1},
        {"mutation": "T2a", "kind": "parameter", "source": "synonym", "names": 2, "samples": 2, "valid_names": 1},
        {"mutation": "T2b", "kind": "local", "source": "random", "names": 1, "samples": 1, "valid_names": 1},
        {"mutation": "T2b", "kind": "parameter", "source": "random", "names": 1, "samples": 1, "valid_names": 1},
    ]
    table = "\n".join(rename_table(rows))
    assert (
        "| parameter | 1.00 | 1.00 |" in table
        and "| local | 0.50 | 1.00 |" in table
        and "| all | 1.50 | 2.00 |" in table
    )


def test_t1_formats_java_and_cpp_with_clang_format():
    java = "class A { int f(int x){ if(x>0){return x*2;} return 0; } }\n"
    cpp = "int f(int x){if(x>0){return x*2;}return 0;}\n"
    for code, language in ((java, "java"), (cpp, "cpp")):
        text = reformat(code, language, random.Random(1))
        assert text != code
        assert "".join(text.split()) == "".join(code.split())  # only whitespace moved


def test_configured_mutations_follow_the_clone_type_order():
    mutations = configured_mutations(
        {"kinds": ["hybrid", "T3", "T2b", "T1", "T2a"], "t3_targets": [0.5, 0.9, 0.7], "hybrid_target": 0.8}
    )
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


def test_setting2_takes_one_type2_mutation_per_definition():
    """The paper's Setting 2 has one MT2: "up to T2a" and "up to T2b" are the Type-2 definition with
    each of them as MT2, and every other definition uses T2a (hand-counted texts: 2 members, 2
    non-members, mutations T1, T2a, T2b, T3-0.5)."""
    from leaktrace.stages.mutate import ORIGINAL, setting2_definitions, setting_rows

    mutations = [Mutation.parse(n) for n in ("T1", "T2a", "T2b", "T3-0.5")]
    definitions = {
        c: ([m.name for m in kept], [m.name for m in beyond]) for c, kept, beyond in setting2_definitions(mutations)
    }
    assert definitions == {
        "verbatim": ([], ["T1", "T2a", "T3-0.5"]),
        "up to T1": (["T1"], ["T2a", "T3-0.5"]),
        "up to T2a": (["T1", "T2a"], ["T3-0.5"]),
        "up to T2b": (["T1", "T2b"], ["T3-0.5"]),
        "up to T3-0.5": (["T1", "T2a", "T3-0.5"], []),
    }
    split = {"m1": "member", "m2": "member", "n1": "non-member", "n2": "non-member"}
    # members look like members except under random names (T2b)
    scores = {
        (sid, c): {"loss": float(split[sid] == "member" and c != "T2b")}
        for sid in split
        for c in [ORIGINAL] + [m.name for m in mutations]
    }
    rows = {r["condition"]: r for r in setting_rows(scores, split, mutations) if r["analysis"] == "setting2"}
    assert (rows["up to T2a"]["n_members"], rows["up to T2a"]["n_non_members"]) == (6, 2 + 2 + 2 + 2)
    assert (rows["up to T2b"]["n_members"], rows["up to T2b"]["n_non_members"]) == (6, 8)
    # by hand: up to T2a, 6 positives at 1 against 2 members' T3 texts at 1 and 6 non-member texts at 0;
    # up to T2b, the 2 positives from T2b score 0 (ties with the 6 zeros, below the 2 ones)
    assert rows["up to T2a"]["auc"] == pytest.approx((6 + 2 * 0.5) / 8)
    assert rows["up to T2b"]["auc"] == pytest.approx((4 * (6 + 2 * 0.5) / 8 + 2 * (6 * 0.5) / 8) / 6)


def test_t2_drop_is_setting1_auc_under_t2a_minus_t2b_and_is_drawn(tmp_path):
    """Members keep a high score under T2a and fall to the non-members' under T2b:
    the drop is the whole AUC above chance, and both figures are written."""
    from leaktrace.report.mutation_plots import setting_heatmaps, t2_drop_plot
    from leaktrace.stages.mutate import ORIGINAL, setting_rows, t2_drop_rows

    mutations = [Mutation.parse(n) for n in ("T2a", "T2b")]
    split = {"m1": "member", "m2": "member", "n1": "non-member", "n2": "non-member"}
    scores = {
        (sid, c): {"loss": 1.0 if split[sid] == "member" and c != "T2b" else 0.0}
        for sid in split
        for c in (ORIGINAL, "T2a", "T2b")
    }
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
    renamed = Mutated(
        code.replace("running", "tally").replace("item", "elem"),
        "total",
        0.2,
        True,
        {"renames": {"running": "tally", "item": "elem"}},
    )
    replayed = replay_renames(renamed.text, "total", _neighbour_renames(variant, renamed))
    assert replayed.text == code.replace("values", "numbers").replace("running", "acc").replace("item", "x")
    assert replay_renames(code, "total", {"absent": "y"}) is None
    # a new name the text already uses is not introduced
    assert replay_renames(code, "total", {"running": "item", "values": "numbers"}).renames == {"values": "numbers"}


def test_only_valid_mutated_texts_bring_their_neighbours_to_scoring(tmp_path):
    from leaktrace.artifacts import write_table
    from leaktrace.stages.mutate import MUTATIONS_SCHEMA, scored_mutations

    def row(sid, neighbor, valid, reached=True):
        return {
            "sample_id": sid,
            "mutation": "T1",
            "neighbor": neighbor,
            "text": f"{sid}{neighbor}",
            "similarity": None,
            "target": None,
            "reached": reached,
            "details": "{}",
            "valid": valid,
            "invalid_reason": None,
            "isolation": "full",
        }

    path = tmp_path / "mutations.parquet"
    write_table(
        [
            row("a", 0, True),
            row("a", 3, True),
            row("a", 4, False),
            row("b", 0, False),
            row("b", 3, True),
            row("c", 0, True, reached=False),
            row("c", 3, True),
        ],
        MUTATIONS_SCHEMA,
        path,
    )
    assert [(r["sample_id"], r["neighbor"]) for r in scored_mutations(path)] == [("a", 0)]
    assert [(r["sample_id"], r["neighbor"]) for r in scored_mutations(path, neighbours=True)] == [("a", 0), ("a", 3)]


def test_mutate_command_writes_one_verdict_a_line(tmp_path):
    from leaktrace.cli import main

    sample = SAMPLES[29]
    cpp = next(r for r in HUMANEVAL_X_STYLE if r["id"] == "cpp/below_zero")
    source = tmp_path / "in.jsonl"
    source.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "id": "a",
                    "code": sample.code,
                    "language": "python",
                    "tests": sample.test,
                    "entry_point": sample.entry_point,
                },
                {
                    "id": "b",
                    "code": "class A {\n    int f(int x) {\n        return x * 2;\n    }\n}\n",
                    "language": "java",
                },
                {"id": "c", "code": "def broken(:\n", "language": "python"},
                {
                    "id": "d",
                    "code": cpp["code"],
                    "language": "cpp",
                    "tests": cpp["test"],
                    "entry_point": cpp["entry_point"],
                },
            ]
        )
        + "\n"
    )
    output = tmp_path / "out.jsonl"
    assert main(["mutate", "--kind", "T3", "--target", "0.7", str(source), str(output)]) == 0
    rows = {r["id"]: r for r in map(json.loads, output.read_text().splitlines())}
    assert rows["a"]["valid"] is True and rows["a"]["similarity"] <= 0.7 + 1 / len(sample.code.splitlines())
    assert rows["a"]["validation"] == "sandbox"
    assert rows["b"]["code"] != "" and rows["b"]["rewrites"] and rows["b"]["valid"] is None  # no tests: not run
    assert rows["c"]["code"] is None and rows["c"]["invalid_reason"].startswith("mutation:")
    if _has_compiler("cpp"):
        assert (rows["d"]["valid"], rows["d"]["validation"]) == (True, "sandbox")
    else:
        assert (rows["d"]["valid"], rows["d"]["validation"]) == (None, "unvalidated")


# ---------------------------------------------------------------------------
# Java and C++ (tree-sitter): T2, T3, and validation by building and running in the sandbox

HUMANEVAL_X_STYLE = [
    json.loads(line) for line in (Path(__file__).parent / "data" / "humanevalx_style.jsonl").read_text().splitlines()
]
CPP = """#include <algorithm>
#include <vector>
#define LIMIT 10
using namespace std;
struct Point { int x; };
int helper(int value) { return value * LIMIT; }
int solve(vector<int> items, int shift) {
    int total = 0;
    for (int item : items) total += helper(item) + shift;
    Point point;
    point.x = total;
    int size = items.size();
    return point.x + size + (int) count(items.begin(), items.end(), 3);
}
"""
CPP_TEST = "#include <cassert>\nint main() { assert(solve({1}, 2) == 13); }\n"
JAVA = """import java.util.*;

class Solution {
    private int calls = 0;

    private int twice(int value) { return 2 * value; }

    public int solve(List<Integer> items) {
        int total = 0;
        for (int item : items) {
            total += twice(item);
            calls++;
        }
        Runnable r = new Runnable() { @Override public void run() { } };
        int size = items.size();
        return total + size + this.calls - 2;
    }
}
"""
JAVA_TEST = (
    "public class Main { public static void main(String[] args) { "
    "if (new Solution().solve(Arrays.asList(1, 2)) != 8) throw new AssertionError(); } }\n"
)


def _has_compiler(language):
    from leaktrace.sandbox import toolchains

    return toolchains.missing(language) is None


@pytest.mark.parametrize(
    ("code", "language", "test", "expected"),
    [
        (
            CPP,
            "cpp",
            CPP_TEST,
            {
                "helper": "function",
                "value": "parameter",
                "items": "parameter",
                "shift": "parameter",
                "total": "local",
                "item": "local",
                "point": "local",
                "size": "local",
            },
        ),
        (
            JAVA,
            "java",
            JAVA_TEST,
            {
                "twice": "function",
                "value": "parameter",
                "items": "parameter",
                "total": "local",
                "item": "local",
                "r": "local",
                "size": "local",
            },
        ),
    ],
)
def test_tree_t2_renames_declared_names_never_members_fields_macros_types_or_the_tests(code, language, test, expected):
    """Hand-listed: the names each program declares as parameters, locals and helper functions;
    never a field (`x`, `calls`), a macro (`LIMIT`), a type, a library call (`count`), an
    overridden method (`run`), a member call (`.size()`) or a name of the test (`solve`)."""
    from leaktrace.mutate.compiled import test_names
    from leaktrace.mutate.renaming import RandomNames
    from leaktrace.mutate.tree_renaming import renamable, rename

    protected = test_names(test)
    assert renamable(code, language, protected).names == expected
    text, renames, kinds = rename(code, language, RandomNames(), random.Random(0), protected)
    assert set(renames) == set(expected) and kinds == expected
    kept = (
        {"x", "LIMIT", "Point", "count", "size()", ".begin", "solve"}
        if language == "cpp"
        else {"calls", "run", "Solution", ".size()", "solve", "Runnable"}
    )
    assert all(k in text for k in kept)
    assert not any(re.search(rf"\b{old}\b(?!\()", text) for old in ("total", "item", "shift", "point", "value"))


@pytest.mark.parametrize(
    ("language", "code", "rewrite", "expected"),
    [
        (
            "cpp",
            "int f(int x) {\n    if (x > 1) {\n        return 1;\n    } else {\n        return 2;\n    }\n}\n",
            "swap_if_else",
            "    if (!(x > 1)) {\n        return 2;\n    } else {\n        return 1;\n    }\n",
        ),
        (
            "java",
            "class A {\n    int f(int x) {\n        x += 2;\n        return x;\n    }\n}\n",
            "expand_augmented",
            "        x = x + 2;\n",
        ),
        (
            "java",
            "class A {\n    int f(int x) {\n        x = x * 3;\n        return x;\n    }\n}\n",
            "contract_augmented",
            "        x *= 3;\n",
        ),
        (
            "cpp",
            "int f(int n) {\n    int s = 0;\n    for (int i = 0; i < n; i++) s += i;\n    return s;\n}\n",
            "increment_to_compound",
            "for (int i = 0; i < n; i += 1)",
        ),
        (
            "java",
            "class A {\n    int f(int x) {\n        int y = x + 1;\n        return y;\n    }\n}\n",
            "add_logging",
            '        int y = x + 1;\n        java.util.logging.Logger.getGlobal().log(java.util.logging.Level.FINE, "y = {0}", y);\n',
        ),
        (
            "cpp",
            "int f(int x) {\n    int y = x + 1;\n    return y;\n}\n",
            "add_logging",
            '#include <cstdio>\nint f(int x) {\n    int y = x + 1;\n    fprintf(stderr, "y = %g\\n", static_cast<double>(y));\n',
        ),
        (
            "cpp",
            "int f(int x) {\n    int y;\n    y = x * 2;\n    return y;\n}\n",
            "wrap_in_try",
            "    try { y = x * 2; } catch (...) { throw; }\n",
        ),
        (
            "java",
            "class A {\n    int f(int x) {\n        return x * 2;\n    }\n}\n",
            "wrap_in_try",
            "        try { return x * 2; } catch (RuntimeException error) { throw error; }\n",
        ),
        (
            "java",
            "class A {\n    boolean f(int x) {\n        return x == 3;\n    }\n}\n",
            "negate_equality",
            "return !(x != 3);",
        ),
        ("cpp", "bool f(int x, int y) {\n    return x < y;\n}\n", "mirror_comparison", "return y > x;"),
        (
            "cpp",
            "long f(long x) {\n    return x * 2;\n}\n",
            "return_through_variable",
            "    long result = x * 2;\n    return result;\n",
        ),
    ],
)
def test_tree_t3_catalogue_entries_rewrite_as_documented(language, code, rewrite, expected):
    from leaktrace.mutate.tree_renaming import parse
    from leaktrace.mutate.tree_statements import CATALOGUE as TREE_CATALOGUE
    from leaktrace.mutate.tree_statements import rewrite_statements as tree_rewrite

    only = tuple(r for r in TREE_CATALOGUE if r.name == rewrite)
    result = tree_rewrite(code, language, 0.0, random.Random(0), rewrites=only)
    assert result.rewrites and result.rewrites[0] == rewrite
    assert expected in result.text
    parse(result.text, language)


@pytest.mark.parametrize(
    ("language", "code", "rewrite"),
    [
        ("java", "class A {\n    char f(char c) {\n        c += 1;\n        return c;\n    }\n}\n", "expand_augmented"),
        (
            "cpp",
            "#include <vector>\nint f(std::vector<int> v) {\n    auto it = v.begin();\n    it++;\n    return *it;\n}\n",
            "increment_to_compound",
        ),
        (
            "cpp",
            "int f(int n) {\n    while (n > 0) {\n        int s = n;\n        n = s - 1;\n    }\n    return n;\n}\n",
            "add_logging",
        ),
        (
            "cpp",
            "#include <string>\nbool f(std::string a, std::string b) {\n    return a == b;\n}\n",
            "negate_equality",
        ),
    ],
)
def test_tree_t3_leaves_what_it_cannot_rewrite_soundly(language, code, rewrite):
    """Java's `c = c + 1` does not compile for a char; an iterator has no `+= 1` in general; C++
    logging stays out of loops; `!=` of two values of unknown type may not exist."""
    from leaktrace.mutate.tree_statements import CATALOGUE as TREE_CATALOGUE
    from leaktrace.mutate.tree_statements import rewrite_statements as tree_rewrite

    only = tuple(r for r in TREE_CATALOGUE if r.name == rewrite)
    assert tree_rewrite(code, language, 0.0, random.Random(0), rewrites=only).rewrites == ()


def _compiled_verdicts(records, mutations, names):
    from leaktrace.mutate.compiled import test_names, validate_compiled

    programs, originals, labels = [], [], []
    for record in records:
        base = len(programs)
        programs.append((record["language"], record["code"], record["test"]))
        originals.append(base)
        for mutation in mutations:
            mutated = apply_mutation(
                mutation,
                record["code"],
                record["language"],
                record["entry_point"],
                random.Random(7),
                names=names,
                protected=test_names(record["test"]),
            )
            programs.append((record["language"], mutated.text, record["test"]))
            originals.append(base)
            labels.append((record["id"], mutation.name, mutated))
    verdicts = validate_compiled(programs, originals, SandboxLimits(), workers=2)
    mutated_verdicts = [v for i, v in enumerate(verdicts) if originals[i] != i]
    assert all(v == (True, None) for i, v in enumerate(verdicts) if originals[i] == i)  # the originals pass
    return [(label, verdict) for label, verdict in zip(labels, mutated_verdicts, strict=True)]


@pytest.mark.skipif(not _has_compiler("cpp") or not _has_compiler("java"), reason="no g++ or JDK here")
def test_java_and_cpp_mutations_compile_and_pass_their_tests_in_the_sandbox(names):
    chosen = [r for r in HUMANEVAL_X_STYLE if r["id"] in ("cpp/largest_divisor", "java/below_zero")]
    results = _compiled_verdicts(chosen[:1], MUTATIONS, names) + _compiled_verdicts(
        chosen[1:], [Mutation.parse(n) for n in ("T2a", "T3-0.7")], names
    )
    assert [(label[:2], verdict) for label, verdict in results if verdict != (True, None)] == []
    kinds = {label[1]: label[2] for label, _ in results if label[0] == "cpp/largest_divisor"}
    assert (
        set(kinds["T2a"].details["renames"])
        == set(kinds["T2b"].details["renames"])
        == {"n", "best", "limit", "candidate"}
    )
    assert kinds["T3-0.7"].reached and kinds["T3-0.7"].details["rewrites"]


@pytest.mark.slow
@pytest.mark.skipif(not _has_compiler("cpp") or not _has_compiler("java"), reason="no g++ or JDK here")
def test_every_mutation_of_every_java_and_cpp_fixture_is_valid(names):
    results = _compiled_verdicts(HUMANEVAL_X_STYLE, MUTATIONS, names)
    assert [(label[:2], verdict) for label, verdict in results if verdict != (True, None)] == []


def test_a_mutation_that_breaks_the_test_is_invalid_and_no_compiler_means_unvalidated(monkeypatch):
    from leaktrace.mutate import compiled
    from leaktrace.sandbox import toolchains

    record = next(r for r in HUMANEVAL_X_STYLE if r["id"] == "cpp/below_zero")
    broken = record["code"].replace("balance < 0", "balance <= 0")
    if _has_compiler("cpp"):
        programs = [("cpp", record["code"], record["test"]), ("cpp", broken, record["test"])]
        valid, why = compiled.validate_compiled(programs, [0, 0], SandboxLimits(), workers=2)[1]
        assert valid is False and why.startswith("test: signal") and "Assertion" in why
    monkeypatch.setattr(toolchains, "missing", lambda language: "g++ is not installed")
    assert compiled.validate_compiled([("cpp", record["code"], record["test"])], [0], SandboxLimits()) == [
        (None, "unvalidated: g++ is not installed")
    ]


# ---------------------------------------------------------------------------
# Unchanged is not valid


def test_normalised_code_ignores_layout_and_comments_but_not_names_or_blocks():
    from leaktrace.variants.validate import is_unchanged

    code = "def f(x):\n    return x+1  # one more\n"
    assert is_unchanged(code, "def f(x):\n  return (x +\n          1)\n") is False  # brackets are tokens
    assert is_unchanged(code, "def f(x):\n  return x + 1\n\n\n")  # spacing, indent width, blank lines, comment
    assert not is_unchanged(code, "def f(y):\n    return y+1\n")  # a rename
    assert not is_unchanged("if a:\n    b()\n    c()\n", "if a:\n    b()\nc()\n")  # a statement left its block
    assert not is_unchanged(code, "def f(x):\n  return x + 1\n", layout=True)  # T1: the layout is the change
    assert is_unchanged(code, "def f(x):\n    return x+1  # one more   \r\n\n", layout=True)
    assert is_unchanged("int f() { return 1; }", "int f()\n{\n  return 1;\n}\n", "cpp")
    assert not is_unchanged(code, None)


def test_a_mutation_that_changes_nothing_is_unchanged_not_valid(tmp_path):
    """The test calls the function with keyword arguments: its parameters are an API, so T2 may
    rename nothing and returns the code as it was; a real renaming is valid."""
    from leaktrace.cli import main

    api = {
        "id": "api",
        "code": "def lookup(table, key):\n    return table[key]\n",
        "language": "python",
        "tests": "def check(candidate):\n    assert candidate(table={'a': 1}, key='a') == 1\n",
        "entry_point": "lookup",
    }
    sample = SAMPLES[29]
    real = {
        "id": "real",
        "code": sample.code,
        "language": "python",
        "tests": sample.test,
        "entry_point": sample.entry_point,
    }
    source, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in (api, real)))
    assert main(["mutate", "--kind", "T2b", str(source), str(output)]) == 0
    rows = {r["id"]: r for r in map(json.loads, output.read_text().splitlines())}
    assert rows["api"]["code"] == api["code"]
    assert (rows["api"]["status"], rows["api"]["valid"], rows["api"]["validation"]) == ("unchanged", False, None)
    assert rows["real"]["code"] != sample.code and (rows["real"]["status"], rows["real"]["valid"]) == ("valid", True)


def test_regression_the_study_table_counts_unchanged_apart():
    from leaktrace.stages.mutate import study_report

    def row(status, reached=True):
        return {
            "mutation": "T2b",
            "valid": status == "valid",
            "status": status,
            "reached": reached,
            "similarity": 1.0,
            "invalid_reason": "sandbox: failed" if status == "invalid" else None,
            "text": "x",
            "details": "{}",
        }

    table = [row("valid"), row("valid"), row("unchanged", reached=False), row("invalid")]
    report = study_report([], table, [Mutation.parse("T2b")], [], [])
    assert "| mutation | samples | valid | unchanged | invalid | at target | scored |" in report
    assert "| T2b | 4 | 2 | 1 | 1 | 3 | 2 | 1.000 |" in report
    assert "Invalid, by reason: sandbox 1" in report
