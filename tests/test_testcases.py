"""SrDetection's offline test-case transformation (tau_t)."""

import ast
import random

from leaktrace.sandbox import SandboxLimits
from leaktrace.variants.testcases import (Example, Replacement, apply_plan, find_examples, literal_test_inputs,
                                          plan_test_cases, rewrite_examples, run_plans, similar_value)

PROGRAM = '''def add_all(numbers, start):
    """Add the numbers to start.
    >>> add_all([1, 2], 10)
    13
    >>> add_all([], 0)
    0

    For example: add_all([5], 1) == 6
    """
    return start + sum(numbers)  # >>> add_all([9], 9) is code, not an example
'''
WEAK = SandboxLimits(isolation="weak")


def transform_test_cases(code, entry_point, test, variants, rng):
    plan = plan_test_cases(code, entry_point, test, len(variants), rng)
    return apply_plan(plan, run_plans([plan], WEAK, workers=1)[0], variants)


TEST = "def check(candidate):\n    assert candidate([4, 4, 4], 2) == 14\n"


def test_examples_are_found_in_the_entry_points_docstring_only():
    examples = find_examples(PROGRAM, "add_all")
    assert [(e.start, e.end, e.args, e.form) for e in examples] == [
        (2, 4, ([1, 2], 10), "doctest"), (4, 6, ([], 0), "doctest"), (7, 8, ([5], 1), "inline"),
    ]
    assert examples[2].head == "For example: " and examples[2].separator == " == " and examples[2].shown == "6"
    assert [e.shown for e in examples[:2]] == ["13", "0"]
    assert find_examples(PROGRAM, "other") == []
    assert literal_test_inputs(TEST) == [([4, 4, 4], 2)]


def test_rewrite_changes_only_the_examples_lines():
    examples = find_examples(PROGRAM, "add_all")
    new = rewrite_examples(PROGRAM, "add_all", examples, [Replacement(([3], 4), 7), None, Replacement(([2, 2], 0), 4)])
    assert new.splitlines()[2:8] == ["    >>> add_all([3], 4)", "    7", "    >>> add_all([], 0)", "    0", "",
                                     "    For example: add_all([2, 2], 0) == 4"]
    assert new.splitlines()[8:] == PROGRAM.splitlines()[8:] and new.splitlines()[:2] == PROGRAM.splitlines()[:2]


def test_rewrite_refuses_to_touch_code():
    example = Example(9, 10, ([9], 9), "doctest", "    ", "18")  # the code line: not a docstring line
    try:
        rewrite_examples(PROGRAM, "add_all", [example], [Replacement(([1], 1), 2)])
    except ValueError as error:
        assert "outside the docstrings" in str(error)
    else:
        raise AssertionError("a rewrite of code was accepted")


def test_similar_values_keep_type_and_shape():
    rng = random.Random(0)
    for _ in range(50):
        word = similar_value("ab-C1", rng)
        assert len(word) == 5 and word[2] == "-" and word[0].islower() and word[3].isupper() and word[4].isdigit()
        number = similar_value(7, rng)
        assert type(number) is int and 0 <= number <= 10
        items = similar_value([1, 2, 3], rng)
        assert type(items) is list and 2 <= len(items) <= 4 and all(type(x) is int for x in items)
        assert similar_value(True, rng) is True and similar_value(None, rng) is None


def test_outputs_come_from_the_original_in_the_sandbox():
    renamed = PROGRAM.replace("add_all", "sum_into")
    result = transform_test_cases(PROGRAM, "add_all", TEST, [(PROGRAM, "add_all"), (renamed, "sum_into")],
                                  random.Random(3))
    assert result.outcome == "transformed"
    for text, name in zip(result.texts, ("add_all", "sum_into"), strict=True):
        assert text != (PROGRAM if name == "add_all" else renamed)
        for example in find_examples(text, name):  # every example, old or new, is right
            lines = text.splitlines()
            shown = lines[example.start + 1] if example.form == "doctest" else lines[example.start].rsplit(" == ", 1)[1]
            assert ast.literal_eval(shown.strip()) == example.args[1] + sum(example.args[0])


def test_a_program_whose_examples_cannot_run_is_left_alone():
    broken = PROGRAM.replace("return start + sum(numbers)", "raise ValueError(start)")
    result = transform_test_cases(broken, "add_all", TEST, [(broken, "add_all")], random.Random(0))
    assert result.texts == [None] and result.outcome == "no usable input"
    assert transform_test_cases("def f(x):\n    return x\n", "f", TEST, [("def f(x):\n    return x\n", "f")],
                                random.Random(0)).outcome == "no examples"


def test_an_example_showing_another_output_than_the_originals_is_left_alone():
    wrong = PROGRAM.replace("    13\n", "    14\n")  # the docstring's first example is wrong (or is not one)
    result = transform_test_cases(wrong, "add_all", TEST, [(wrong, "add_all")], random.Random(3))
    assert result.texts[0].splitlines()[2:4] == ["    >>> add_all([1, 2], 10)", "    14"]
    assert result.texts[0].splitlines()[4] != "    >>> add_all([], 0)" or result.texts[0].splitlines()[7] != wrong.splitlines()[7]
