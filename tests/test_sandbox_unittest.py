"""unittest classes against a program's objects held by reference
(ClassEval's protocol; sandbox/harness.py ``Remote``): a right class passes,
a wrong one fails, what the test does to the objects is recorded, and a
program cannot answer a comparison for the test (an object equal to
anything), nor end the run to pass."""

import pytest
from leaktrace.sandbox import SandboxLimits, run_unittest
from leaktrace.sandbox.values import decode

LIMITS = SandboxLimits(timeout_s=30)

STACK = """class Stack:
    LIMIT = 3

    def __init__(self, items=None):
        self.items = list(items or [])

    def push(self, item):
        if len(self.items) >= self.LIMIT:
            raise OverflowError("full")
        self.items.append(item)
        return len(self.items)

    def pop(self):
        return self.items.pop()

    def merged(self, other):
        return Stack(self.items + other.items)

    @staticmethod
    def describe(n):
        return f"{n} items"

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(self.items)
"""

TESTS = """import unittest


class StackTestPush(unittest.TestCase):
    def test_push(self):
        s = Stack()
        self.assertEqual(s.push('a'), 1)
        self.assertEqual(s.items, ['a'])

    def test_full(self):
        s = Stack([1, 2, 3])
        with self.assertRaises(OverflowError):
            s.push(4)


class StackTestMore(unittest.TestCase):
    def test_merge_and_len(self):
        a, b = Stack([1]), Stack([2, 3])
        merged = a.merged(b)
        self.assertEqual(len(merged), 3)
        self.assertEqual(list(merged), [1, 2, 3])
        self.assertIn(2, merged.items)
        self.assertIsInstance(merged, Stack)

    def test_static_and_attributes(self):
        self.assertEqual(Stack.describe(2), '2 items')
        s = Stack()
        s.items = [9]
        self.assertEqual(s.pop(), 9)
"""


def test_a_right_class_passes_and_the_record_holds_each_test_and_request():
    result = run_unittest(STACK, TESTS, LIMITS)
    assert (result.status, result.error) == ("ok", None), result.stderr
    record = decode(result.record)
    assert record["test"] == "passed"
    assert record["tests"] == [(f"__test__.{name}", "passed") for name in (  # in the order the test defines its classes
        "StackTestPush.test_full", "StackTestPush.test_push", "StackTestMore.test_merge_and_len",
        "StackTestMore.test_static_and_attributes")]
    first = decode(record["calls"][0])
    assert first[0] == "Stack()" and first[2] == ("object",)  # the instance stays in the program


def test_the_same_class_gives_the_same_record_and_a_wrong_one_fails():
    assert run_unittest(STACK, TESTS, LIMITS).record == run_unittest(STACK, TESTS, LIMITS).record
    wrong = run_unittest(STACK.replace("return len(self.items)\n\n    def pop", "return 0\n\n    def pop"), TESTS, LIMITS)
    assert wrong.status == "wrong" and wrong.error.startswith("__test__.StackTestPush.test_push: AssertionError: 0 != 1")


def test_a_program_cannot_answer_a_comparison_for_the_test():
    """An object that claims to equal anything, where the test expects a value."""
    forged = STACK + ("class Any:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
                      "Stack.push = lambda self, item: Any()\n")
    result = run_unittest(forged, TESTS, LIMITS)
    assert result.status == "wrong"
    assert dict(decode(result.record)["tests"])["__test__.StackTestPush.test_push"] == "failed"


def test_a_program_cannot_end_the_run_to_pass():
    result = run_unittest(STACK + "import os\nStack.pop = lambda self: os._exit(0)\n", TESTS, LIMITS)
    assert result.status == "error" and "the program ended" in result.error


def test_a_test_without_test_cases_does_not_pass():
    result = run_unittest(STACK, "import unittest\n", LIMITS)
    assert result.status == "wrong" and "no unittest.TestCase" in result.error
