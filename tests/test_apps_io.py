"""APPS's input/output tests through the testbed: parsing (a case cap, clear
errors), whole programs judged on standard input in the sandbox (right,
wrong, early exit, one case's answer only), the filter, and variants of a
whole program validated against the same cases."""

import json
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from leaktrace.artifacts import read_records
from leaktrace.data.io_tests import CallTests, IoTests, call_test, parse_io_tests
from leaktrace.data.samples import not_runnable, sample_tests
from leaktrace.errors import InputError
from leaktrace.sandbox import SandboxLimits, run_test
from leaktrace.sandbox.stdio import outputs_match, run_io_tests
from leaktrace.settings.function_filter import FunctionFilterSettings
from leaktrace.settings.ingest import BenchmarkEntry
from leaktrace.stages.function_filter import filter_functions
from leaktrace.stages.ingest import ingest_benchmark
from leaktrace.variants.natural import variants_settings
from leaktrace.variants.validate import validate_variants

FILTER = FunctionFilterSettings(min_body_lines=1, max_body_lines=None, min_chars=0, exclude_init=True)
FAST = SandboxLimits(timeout_s=5.0, cpu_s=5, memory_mb=256, file_size_mb=1, max_processes=8, scratch_mb=8)

SUM = "a, b = map(int, input().split())\nprint(a + b)\n"
# Ends with sys.exit(0), a normal end in competitive programming. No comment or docstring in the
# programs: the renamer would load WordNet (half a minute) to tell their English words.
SORT = """import sys


def main():
    count = int(sys.stdin.readline())
    values = sorted(int(word) for word in sys.stdin.readline().split())
    for value in values[:count]:
        print(value)
    sys.exit(0)


main()
"""
ADD = "def add(first, second):\n    return first + second\n"
PROBLEMS = [
    {
        "problem_id": 1,
        "question": "Print the sum of two integers.",
        "solutions": json.dumps([SUM]),
        "input_output": json.dumps({"inputs": ["1 2\n", "10 20\n", "-4 4\n"], "outputs": ["3\n", "30\n", "0\n"]}),
    },
    {
        "problem_id": 2,
        "question": "Sort n integers, one a line.",
        "solutions": json.dumps([SORT]),
        "input_output": json.dumps({"inputs": ["3\n3 1 2\n", ["2", "5 4"]], "outputs": ["1\n2\n3\n", ["4", "5"]]}),
    },
    {
        "problem_id": 3,
        "question": "Add two numbers (call-based).",
        "solutions": json.dumps([ADD]),
        "input_output": json.dumps({"fn_name": "add", "inputs": [[1, 2], [3, 4]], "outputs": [[3], 7]}),
    },
    {
        "problem_id": 4,
        "question": "Python 2.",
        "solutions": json.dumps(["print 'hello'\n"]),
        "input_output": json.dumps({"inputs": ["\n"], "outputs": ["hello\n"]}),
    },
]


isolated = pytest.mark.usefixtures("full_isolation")


def ingest(tmp_path, problems):
    path = tmp_path / "apps.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in problems))
    ingest_benchmark("apps", BenchmarkEntry(format="jsonl", preset="apps", path=str(path)), tmp_path / "apps.parquet")
    return read_records(tmp_path / "apps.parquet")


# -- parsing ---------------------------------------------------------------------------------------


def test_io_tests_are_parsed_with_a_cap_and_lists_of_lines_joined():
    tests = parse_io_tests(PROBLEMS[0]["input_output"], "apps.parquet", "apps/1", 2)
    assert tests == IoTests(("1 2\n", "10 20\n"), ("3\n", "30\n"))
    assert parse_io_tests(PROBLEMS[1]["input_output"], "f", "s", None).inputs == ("3\n3 1 2\n", "2\n5 4")
    call = parse_io_tests(PROBLEMS[2]["input_output"], "f", "s", None)
    assert call == CallTests("add", ([1, 2], [3, 4]), ([3], 7))


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "{not json",
            r"apps\.parquet, record apps/9: malformed input/output tests: not JSON \(Expecting property name",
        ),
        ("[1, 2]", "expected a JSON object with inputs and outputs, got a list"),
        ('{"inputs": ["1"]}', "'outputs' is missing or not a list"),
        ('{"inputs": ["1", "2"], "outputs": ["1"]}', "2 inputs but 1 outputs"),
        ('{"inputs": [], "outputs": []}', "no cases"),
        ('{"inputs": [3], "outputs": ["3"]}', "input 1 is a int, not a string or a list of lines"),
        ('{"fn_name": "f(x)", "inputs": [[1]], "outputs": [1]}', "fn_name 'f\\(x\\)' is not a Python identifier"),
    ],
)
def test_malformed_io_tests_are_a_clear_error(text, message):
    with pytest.raises(InputError, match=message):
        parse_io_tests(text, "apps.parquet", "apps/9", 10)


def test_ingested_apps_rows_say_their_tests_are_io_and_a_malformed_one_stops_the_filter(tmp_path):
    rows = ingest(tmp_path, PROBLEMS)
    assert [r["test_format"] for r in rows] == ["io"] * 4
    assert sample_tests(rows[0], "f", 1) == (IoTests(("1 2\n",), ("3\n",)), None)
    assert sample_tests(rows[2], "f")[1] == "add"
    assert not_runnable(rows[3]) == "its code does not parse as Python 3 (line 1)"
    assert not_runnable({**rows[0], "test": ""}) == "it has no input/output tests"
    leetcode = {**rows[2], "code": "class Solution:\n    def add(self, a, b):\n        return a + b\n"}
    assert "does not define at module level" in not_runnable(leetcode)
    broken = ingest(tmp_path, [{**PROBLEMS[0], "input_output": '{"inputs": ["1 2"], "outputs": '}])
    assert broken[0]["test"].startswith('{"inputs"')
    with pytest.raises(InputError, match=r"apps\.parquet, record apps/1: malformed input/output tests: not JSON"):
        filter_functions(tmp_path / "apps.parquet", FILTER, tmp_path / "functions.parquet")


def test_the_filter_keeps_whole_programs_as_one_body_and_drops_what_cannot_run(tmp_path):
    ingest(tmp_path, PROBLEMS)
    filter_functions(tmp_path / "apps.parquet", replace(FILTER, min_body_lines=3), tmp_path / "functions.parquet")
    rows = {r["sample_id"]: r for r in read_records(tmp_path / "functions.parquet")}
    assert rows["apps/1"]["reason"] == "function: body has 2 lines < 3"  # the whole program's non-blank lines
    assert rows["apps/2"]["kept"] and rows["apps/2"]["body_lines"] == 8 and rows["apps/2"]["signature"] == ""
    assert rows["apps/3"]["reason"] == "function: body has 1 lines < 3" and rows["apps/3"]["signature"].startswith(
        "def add"
    )
    assert rows["apps/4"]["reason"] == "not runnable: its code does not parse as Python 3 (line 1)"


# -- judging whole programs ------------------------------------------------------------------------


def test_strict_comparison_ignores_whitespace_around_lines_only():
    assert outputs_match("3  \n\n", "3\n") and outputs_match("1\r\n2", "1\n2\n") and outputs_match("  1\n 2 \n", "1\n2")
    assert not outputs_match("2 1\n", "1 2\n")  # APPS's set fallback would pass this
    assert not outputs_match("1\n\n2\n", "1\n2\n")  # nor drops inner blank lines
    assert not outputs_match("1.0000001\n", "1.0\n")  # nor compares numbers with a tolerance


@isolated
def test_a_right_program_passes_and_wrong_or_hostile_ones_fail():
    tests = IoTests(("1 2\n", "10 20\n", "-4 4\n"), ("3\n", "30\n", "0\n"))
    right = run_io_tests(SUM, tests, FAST)
    assert (right.status, right.error) == ("ok", None)
    wrong = run_io_tests(SUM.replace("a + b", "a - b"), tests, FAST)
    assert (wrong.status, wrong.error) == ("wrong", "case 1: line 1 is '-1', expected '3'")
    early = run_io_tests("import sys\nsys.exit(0)\n" + SUM, tests, FAST)
    assert (early.status, early.error) == ("wrong", "case 1: 0 lines of output, expected 1")
    one_case = run_io_tests("print(3)\n", tests, FAST)
    assert (one_case.status, one_case.error) == ("wrong", "case 2: line 1 is '3', expected '30'")
    crash = run_io_tests("raise SystemExit('no')\n", tests, FAST)
    assert (crash.status, crash.error) == ("error", "case 1: exited with status 1 (no)")


@isolated
def test_programs_that_end_through_threads_atexit_or_sys_exit_pass():
    tests = IoTests(("3\n3 1 2\n", "2\n5 4"), ("1\n2\n3\n", "4\n5"))
    assert run_io_tests(SORT, tests, FAST).status == "ok"
    threaded = (
        "import sys, threading\nthreading.stack_size(1 << 24)\n"
        "def main():\n    n = int(input())\n    print(*sorted(map(int, input().split()))[:n], sep='\\n')\n"
        "threading.Thread(target=main).start()\n"
    )
    assert run_io_tests(threaded, tests, FAST).status == "ok"
    buffered = (
        "import atexit, io, sys\nout = io.StringIO()\natexit.register(lambda: sys.__stdout__.write(out.getvalue()))\n"
        "n = int(input())\nfor v in sorted(map(int, input().split()))[:n]:\n    out.write(f'{v}\\n')\n"
    )
    assert run_io_tests(buffered, tests, FAST).status == "ok"
    slow = run_io_tests("while True:\n    pass\n", tests, SandboxLimits(**{**vars(FAST), "timeout_s": 0.5, "cpu_s": 1}))
    assert (slow.status, slow.error) == ("timeout", "case 1: exceeded the wall-clock limit of 0.5 s")


@isolated
def test_call_based_problems_run_through_the_function_test_path():
    tests = parse_io_tests(PROBLEMS[2]["input_output"], "f", "s", None)
    assert run_test(ADD, call_test(tests), "add", FAST).status == "ok"
    assert run_test(ADD.replace("+", "*"), call_test(tests), "add", FAST).status == "wrong"


# -- variants --------------------------------------------------------------------------------------


@isolated
def test_renamed_variants_of_a_whole_program_validate_against_the_same_cases(tmp_path, monkeypatch):
    from leaktrace.stages import variants as stage

    # two made-up alternatives per word instead of WordNet's (which takes half a minute to load)
    monkeypatch.setattr(stage, "WordAlternatives", lambda counts: lambda word: (f"{word}q", f"{word}z"))
    ingest(tmp_path, PROBLEMS[:2])
    pq.write_table(
        pa.Table.from_pylist([{"sample_id": s, "kept": True} for s in ("apps/1", "apps/2")]),
        tmp_path / "functions.parquet",
    )
    pq.write_table(
        pa.Table.from_pylist([{"kind": "variable", "name": w, "count": 4} for w in ("count", "value")]),
        tmp_path / "lexicon.parquet",
    )
    settings = variants_settings(
        n=2,
        names_per_variant=None,
        io_cases=2,
        test_cases={"compose": True, "untransformed": 2},
        sandbox={"timeout_s": 5, "cpu_s": 5, "memory_mb": 256},
    )
    stage.make_variants_table(
        tmp_path / "apps.parquet",
        tmp_path / "functions.parquet",
        tmp_path / "lexicon.parquet",
        settings,
        7,
        2,
        tmp_path / "variants.parquet",
    )
    rows = read_records(tmp_path / "variants.parquet")
    sort = [r for r in rows if r["sample_id"] == "apps/2"]
    assert [(r["variant_id"], r["kind"], r["entry_point"], r["generator"]) for r in sort] == [
        (0, "original", None, "original"),
        (1, "rename", None, "ast"),
        (2, "rename", None, "ast"),
    ]
    # no examples in the program: tau_t does not apply
    assert all(r["valid"] for r in rows) and len({r["text"] for r in sort}) == 3
    tests = IoTests(("3\n3 1 2\n",), ("1\n2\n3\n",))
    negated = SORT.replace("int(word)", "-int(word)")  # not the same program
    prints_more = SORT.replace("print(value)", "print(value, '')")  # right under the strict comparison, other bytes
    verdicts = validate_variants(
        [(SORT, tests, None), (sort[1]["text"], tests, None), (negated, tests, None), (prints_more, tests, None)],
        [0, 0, 0, 0],
        FAST,
        workers=2,
    )
    assert verdicts[:2] == [(True, None), (True, None)]
    assert verdicts[2] == (False, "wrong: case 1: line 1 is '-3', expected '1'")
    assert verdicts[3] == (
        False,
        "differs: call 1 (case(1)) gave ('return', '1 \\n2 \\n3 \\n'), the original ('return', '1\\n2\\n3\\n')",
    )


SUM_QUESTION = """Print the sum of two integers.

-----Input-----

One line with two integers.

-----Output-----

Their sum.

-----Examples-----
Input
1 2

Output
3
"""


@isolated
def test_tau_t_replaces_the_examples_of_a_whole_program_that_holds_its_problem(tmp_path, monkeypatch):
    """With problem_in_code the question heads the program as its docstring; tau_t gives each
    variant another of the sample's test inputs as its example, with the original's output."""
    from leaktrace.stages import variants as stage

    monkeypatch.setattr(stage, "WordAlternatives", lambda counts: lambda word: (f"{word}q", f"{word}z"))
    path = tmp_path / "apps.jsonl"
    path.write_text(json.dumps({**PROBLEMS[0], "question": SUM_QUESTION}) + "\n")
    ingest_benchmark(
        "apps",
        BenchmarkEntry(format="jsonl", preset="apps", path=str(path), problem_in_code=True),
        tmp_path / "apps.parquet",
    )
    (sample,) = read_records(tmp_path / "apps.parquet")
    assert sample["code"] == '"""\n' + SUM_QUESTION + '"""\n' + SUM
    pq.write_table(pa.Table.from_pylist([{"sample_id": "apps/1", "kept": True}]), tmp_path / "functions.parquet")
    pq.write_table(
        pa.Table.from_pylist([{"kind": "variable", "name": w, "count": 4} for w in ("first", "second")]),
        tmp_path / "lexicon.parquet",
    )
    settings = variants_settings(
        n=1,
        names_per_variant=1,
        io_cases=3,
        test_cases={"compose": True, "untransformed": 1},
        sandbox={"timeout_s": 5, "cpu_s": 5, "memory_mb": 256},
    )
    stage.make_variants_table(
        tmp_path / "apps.parquet",
        tmp_path / "functions.parquet",
        tmp_path / "lexicon.parquet",
        settings,
        7,
        2,
        tmp_path / "variants.parquet",
    )
    rows = read_records(tmp_path / "variants.parquet")
    assert [(r["kind"], r["generator"], r["valid"]) for r in rows] == [
        ("original", "original", True),
        ("rename", "ast+tt", True),
        ("ast", "ast", True),
    ]
    composed, renamed = rows[1]["text"], rows[2]["text"]
    example = composed[composed.index("Input\n") : composed.index('"""', 3)]
    assert example in ("Input\n10 20\n\nOutput\n30\n", "Input\n-4 4\n\nOutput\n0\n")  # another test case's
    assert composed.replace(example, "Input\n1 2\n\nOutput\n3\n") == renamed  # the docstring's example alone differs
