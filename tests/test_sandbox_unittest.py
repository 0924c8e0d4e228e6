"""unittest classes against a program's objects held by reference
(ClassEval's protocol; sandbox/harness.py ``Remote``): a right class passes,
a wrong one fails, what the test does to the objects is recorded, and a
program cannot answer a comparison for the test (an object equal to
anything), nor end the run to pass. Then the same classes run in the
program's own process, as validation runs them (`run_whole_unittest`)."""

import pytest

from leaktrace.data.samples import UnittestTests
from leaktrace.sandbox import SandboxLimits, run_unittest, run_whole_unittest
from leaktrace.sandbox.values import decode
from leaktrace.variants.validate import validate_variants

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
    assert record["tests"] == [
        (f"__test__.{name}", "passed")
        for name in (  # in the order the test defines its classes
            "StackTestPush.test_full",
            "StackTestPush.test_push",
            "StackTestMore.test_merge_and_len",
            "StackTestMore.test_static_and_attributes",
        )
    ]
    first = decode(record["calls"][0])
    assert first[0] == "Stack()" and first[2] == ("object",)  # the instance stays in the program


def test_the_same_class_gives_the_same_record_and_a_wrong_one_fails():
    assert run_unittest(STACK, TESTS, LIMITS).record == run_unittest(STACK, TESTS, LIMITS).record
    wrong = run_unittest(
        STACK.replace("return len(self.items)\n\n    def pop", "return 0\n\n    def pop"), TESTS, LIMITS
    )
    assert wrong.status == "wrong" and wrong.error.startswith(
        "__test__.StackTestPush.test_push: AssertionError: 0 != 1"
    )


def test_a_program_cannot_answer_a_comparison_for_the_test():
    """An object that claims to equal anything, where the test expects a value."""
    forged = STACK + (
        "class Any:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
        "Stack.push = lambda self, item: Any()\n"
    )
    result = run_unittest(forged, TESTS, LIMITS)
    assert result.status == "wrong"
    assert dict(decode(result.record)["tests"])["__test__.StackTestPush.test_push"] == "failed"


def test_a_program_cannot_end_the_run_to_pass():
    result = run_unittest(STACK + "import os\nStack.pop = lambda self: os._exit(0)\n", TESTS, LIMITS)
    assert result.status == "error" and "the program ended" in result.error


def test_a_test_without_test_cases_does_not_pass():
    result = run_unittest(STACK, "import unittest\n", LIMITS)
    assert result.status == "wrong" and "no unittest.TestCase" in result.error


# --- what ClassEval's canonical solutions pass and return ---

CALENDAR = """import datetime
import sqlite3


class Calendar:
    def __init__(self, db_path):
        self.db_path = db_path

    def add(self, name, start, length):
        with sqlite3.connect(self.db_path) as db:
            db.execute("INSERT INTO events VALUES (?, ?, ?)", (name, start.isoformat(), length.total_seconds()))

    def end(self, name):
        with sqlite3.connect(self.db_path) as db:
            start, seconds = db.execute("SELECT start, seconds FROM events WHERE name = ?", (name,)).fetchone()
        return datetime.datetime.fromisoformat(start) + datetime.timedelta(seconds=seconds)

    def day(self, moment):
        return moment.date()

    def kind(self):
        return type(self.db_path)

    def own_kind(self):
        return Calendar

    def archive(self, path):
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE archive (name TEXT)")
"""

CALENDAR_TEST = """import datetime
import os
import sqlite3
import unittest


class CalendarTest(unittest.TestCase):
    def setUp(self):
        self.db_path = "calendar.db"  # made by the test, in the working directory it shares with the program
        with sqlite3.connect(self.db_path) as db:
            db.execute("CREATE TABLE events (name TEXT, start TEXT, seconds REAL)")

    def tearDown(self):
        os.remove(self.db_path)

    def test_datetime_values_cross_both_ways(self):
        calendar = Calendar(self.db_path)
        calendar.add("talk", datetime.datetime(2024, 2, 28, 23, 30), datetime.timedelta(hours=1))
        self.assertEqual(calendar.end("talk"), datetime.datetime(2024, 2, 29, 0, 30))
        self.assertEqual(calendar.day(datetime.datetime(2024, 2, 29, 0, 30)), datetime.date(2024, 2, 29))

    def test_types_cross_by_name(self):
        self.assertEqual(Calendar(self.db_path).kind(), str)
        self.assertEqual(Calendar(self.db_path).own_kind().qualname, "Calendar")

    def test_a_database_the_program_made_is_the_tests_to_write(self):
        Calendar(self.db_path).archive("archive.db")
        with sqlite3.connect("archive.db") as db:
            db.execute("INSERT INTO archive VALUES ('x')")
        os.remove("archive.db")
"""


def test_datetime_type_and_shared_database_tests_pass(full_isolation):
    result = run_unittest(CALENDAR, CALENDAR_TEST, LIMITS)
    assert result.status == "ok", (result.error, result.stderr[-2000:])
    assert [outcome for _, outcome in decode(result.record)["tests"]] == ["passed"] * 3


def test_a_wrong_date_still_fails(full_isolation):
    wrong = CALENDAR.replace("+ datetime.timedelta(seconds=seconds)", "")
    result = run_unittest(wrong, CALENDAR_TEST, LIMITS)
    assert result.status == "wrong" and "test_datetime_values_cross_both_ways" in result.error


# --- run in the program's own process, as validation runs them ---

SORTER = """class Sorter:
    def __init__(self, key=None):
        self.key = key

    def sort_in_place(self, items):
        items.sort(key=self.key)

    def lazily(self, items):
        return iter(sorted(items, key=self.key))

    def __eq__(self, other):
        return isinstance(other, Sorter) and self.key == other.key
"""

SORTER_TEST = """import unittest


class SorterTest(unittest.TestCase):
    def test_in_place(self):
        items = [3, 1, 2]
        Sorter().sort_in_place(items)
        self.assertEqual(items, [1, 2, 3])

    def test_lazily_and_equal(self):
        self.assertEqual(list(Sorter(abs).lazily([-3, 2])), [2, -3])
        self.assertEqual(Sorter(abs), Sorter(abs))
"""


@pytest.mark.usefixtures("full_isolation")
def test_a_class_whose_test_checks_a_list_it_sorted_in_place_or_compares_its_objects_passes_whole():
    across = run_unittest(SORTER, SORTER_TEST, LIMITS)
    assert across.status == "wrong"  # by value, the test's list never reaches the program
    result = run_whole_unittest(SORTER, SORTER_TEST, LIMITS)
    assert (result.status, result.error) == ("ok", None), result.stderr
    record = decode(result.record)
    assert record["tests"] == [
        ("__test__.SorterTest.test_in_place", "passed"),
        ("__test__.SorterTest.test_lazily_and_equal", "passed"),
    ]
    assert [decode(call)[:3] for call in record["calls"]] == [
        ("self.assertEqual", (("value", [1, 2, 3]), ("value", [1, 2, 3])), {}),
        ("self.assertEqual", (("value", [2, -3]), ("value", [2, -3])), {}),
        ("self.assertEqual", (("object", None), ("object", None)), {}),  # the program's own objects
    ]
    wrong = run_whole_unittest(SORTER.replace("items.sort(key=self.key)", "items = sorted(items)"), SORTER_TEST, LIMITS)
    assert wrong.status == "wrong" and wrong.error.startswith("__test__.SorterTest.test_in_place: ")
    assert run_whole_unittest(SORTER, "import unittest\n", LIMITS).status == "wrong"


@pytest.mark.usefixtures("full_isolation")
def test_a_renamed_class_is_valid_and_one_that_asserts_other_values_is_not():
    weak = SORTER_TEST.replace("self.assertEqual(items, [1, 2, 3])", "self.assertIn(items[0], [1, 3])")
    renamed = SORTER.replace("items", "values")
    descending = SORTER.replace("items.sort(key=self.key)", "items.sort(key=self.key, reverse=True)")
    items = [(code, UnittestTests(weak), None) for code in (SORTER, renamed, descending)]
    verdicts = validate_variants(items, [0, 0, 0], LIMITS, workers=2)
    assert verdicts[:2] == [(True, None), (True, None)]
    assert verdicts[2] == (False, "differs: call 1 (self.assertIn(3, [1, 3])), the original's had other arguments")
