"""SrDetection's offline test-case transformation (tau_t)."""

import ast
import random
import subprocess
import sys
import time

from leaktrace.data.io_tests import IoTests
from leaktrace.sandbox import SandboxLimits
from leaktrace.variants import testcases
from leaktrace.variants.testcases import (
    Example,
    Replacement,
    Transformed,
    apply_plan,
    find_examples,
    find_program_examples,
    literal_test_inputs,
    plan_test_cases,
    rewrite_examples,
    run_plans,
    similar_value,
)

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
        (2, 4, ([1, 2], 10), "doctest"),
        (4, 6, ([], 0), "doctest"),
        (7, 8, ([5], 1), "inline"),
    ]
    assert examples[2].head == "For example: " and examples[2].separator == " == " and examples[2].shown == "6"
    assert [e.shown for e in examples[:2]] == ["13", "0"]
    assert find_examples(PROGRAM, "other") == []
    assert literal_test_inputs(TEST) == [([4, 4, 4], 2)]


def test_rewrite_changes_only_the_examples_lines():
    examples = find_examples(PROGRAM, "add_all")
    new = rewrite_examples(PROGRAM, "add_all", examples, [Replacement(([3], 4), 7), None, Replacement(([2, 2], 0), 4)])
    assert new.splitlines()[2:8] == [
        "    >>> add_all([3], 4)",
        "    7",
        "    >>> add_all([], 0)",
        "    0",
        "",
        "    For example: add_all([2, 2], 0) == 4",
    ]
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
    result = transform_test_cases(
        PROGRAM, "add_all", TEST, [(PROGRAM, "add_all"), (renamed, "sum_into")], random.Random(3)
    )
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
    assert (
        transform_test_cases(
            "def f(x):\n    return x\n", "f", TEST, [("def f(x):\n    return x\n", "f")], random.Random(0)
        ).outcome
        == "no examples"
    )


LOOPING = PROGRAM.replace(
    "    return start + sum(numbers)", "    for number in numbers:\n        start += number\n    return start"
)


def test_a_run_past_its_steps_is_left_alone_the_same_on_a_busy_machine(monkeypatch):
    # add_all's calls on this test's inputs take 2 to 5 steps each (its call, an iteration per number)
    plan = plan_test_cases(LOOPING, "add_all", TEST, 1, random.Random(0))
    monkeypatch.setattr(testcases, "STEPS", 3)
    tight = plan_test_cases(LOOPING, "add_all", TEST, 1, random.Random(0))
    assert transform_test_cases(LOOPING, "add_all", TEST, [(LOOPING, "add_all")], random.Random(0)).outcome == (
        "past 3 steps"
    )
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        busy = run_plans([tight, plan], WEAK, workers=1)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    assert apply_plan(tight, busy[0], [(LOOPING, "add_all")]).outcome == "past 3 steps"
    assert apply_plan(plan, busy[1], [(LOOPING, "add_all")]).outcome == "transformed"  # within the default STEPS


def test_a_run_a_time_limit_stops_is_run_again_at_twice_it_and_says_so(monkeypatch):
    monkeypatch.setattr(testcases, "CPU_S", 1)
    spinning = PROGRAM.replace("    return start + sum(numbers)", "    return sum(itertools.repeat(0, 10**14))")
    spinning = "import itertools\n\n" + spinning
    plan = plan_test_cases(spinning, "add_all", TEST, 1, random.Random(0))
    started = time.monotonic()
    assert apply_plan(plan, run_plans([plan], WEAK, workers=1)[0], [(spinning, "add_all")]).outcome == (
        "sandbox killed"
    )
    assert time.monotonic() - started >= 3  # 1 s of CPU time, then 2 s


def test_an_example_showing_another_output_than_the_originals_is_left_alone():
    wrong = PROGRAM.replace("    13\n", "    14\n")  # the docstring's first example is wrong (or is not one)
    result = transform_test_cases(wrong, "add_all", TEST, [(wrong, "add_all")], random.Random(3))
    assert result.texts[0].splitlines()[2:4] == ["    >>> add_all([1, 2], 10)", "    14"]
    assert (
        result.texts[0].splitlines()[4] != "    >>> add_all([], 0)"
        or result.texts[0].splitlines()[7] != wrong.splitlines()[7]
    )


# -- whole programs on standard input (APPS) --------------------------------------------------

STDIN_PROGRAM = '''"""
Given n integers, print their sum.

-----Input-----

The first line holds n, the second n integers.

-----Output-----

Print the sum.

-----Examples-----
Input
3
1 2 3

Output
6

Sample Input 2
2
10 -4
Sample Output 2
7
"""
n = int(input())
print(sum(map(int, input().split()[:n])))
'''
STDIN_TESTS = IoTests(("3\n1 2 3\n", "1\n7\n", "4\n1 1 1 1\n"), ("6\n", "7\n", "4\n"))


def test_a_whole_program_s_examples_are_its_docstring_s_input_and_output_blocks():
    examples = find_program_examples(STDIN_PROGRAM)
    # "-----Input-----" heads the format's description: no example; two examples, the second's output wrong
    assert [(e.input_start, e.input_end, e.output_start, e.output_end, e.input, e.shown) for e in examples] == [
        (13, 15, 17, 18, "3\n1 2 3\n", "6\n"),
        (20, 22, 23, 24, "2\n10 -4\n", "7\n"),
    ]
    assert find_program_examples("n = int(input())\nprint(n)\n") == []
    assert find_program_examples('"""Print n.\n\n-----Input-----\nn\n-----Output-----\nn\n"""\nprint(input())\n') == []


def test_tau_t_gives_a_whole_program_the_original_s_output_on_another_input():
    renamed = STDIN_PROGRAM.replace("n = int", "count = int").replace("[:n]", "[:count]")
    plan = plan_test_cases(STDIN_PROGRAM, None, STDIN_TESTS, 2, random.Random(0))
    assert plan.inputs[:2] == ["3\n1 2 3\n", "2\n10 -4\n"]
    # the sample's own test inputs first, then the example's input with its integers moved
    assert plan.candidates[0][0][:2] in (["1\n7\n", "4\n1 1 1 1\n"], ["4\n1 1 1 1\n", "1\n7\n"])
    result = transform_test_cases(
        STDIN_PROGRAM, None, STDIN_TESTS, [(STDIN_PROGRAM, None), (renamed, None)], random.Random(0)
    )
    assert result.outcome == "transformed"
    for original, text in zip((STDIN_PROGRAM, renamed), result.texts, strict=True):
        new, old = text.splitlines(), original.splitlines()
        changed = [i for i, (a, b) in enumerate(zip(new, old, strict=True)) if a != b]
        # the first example only (the second shows 7 where the program prints 6): another test input, its output
        assert changed and set(changed) <= {13, 14, 17}
        assert {"\n".join(new[13:15]): new[17]} in ({"1\n7": "7"}, {"4\n1 1 1 1": "4"})


def test_tau_t_leaves_a_whole_program_whose_examples_it_cannot_reproduce():
    wrong = STDIN_PROGRAM.replace("Output\n6\n", "Output\n5\n")  # neither example shows what the program prints
    result = transform_test_cases(wrong, None, STDIN_TESTS, [(wrong, None)], random.Random(0))
    assert result == Transformed([None], "examples not the original's output")
    none = transform_test_cases("print(input())\n", None, STDIN_TESTS, [("print(input())\n", None)], random.Random(0))
    assert none.outcome == "no examples"
