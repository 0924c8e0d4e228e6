"""Any benchmark in: the generic reader on a small file in each
preset's format, its clear errors, the kinds of samples (code, text, both)
through the leakage scan, and the testbed stages refusing what they cannot run."""

import csv
import gzip
import json
import sys
import types

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from leaktrace.artifacts import read_records, read_table
from leaktrace.data import benchmarks
from leaktrace.data.benchmarks import BENCHMARK_SCHEMA, GENERIC_BENCHMARK_SCHEMA, PRESETS, load_benchmark
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.data.samples import BenchmarkSample, document, not_runnable
from leaktrace.errors import InputError
from leaktrace.leakage.settings import scan_slice
from leaktrace.settings.function_filter import FunctionFilterSettings
from leaktrace.settings.ingest import BenchmarkEntry
from leaktrace.stages.function_filter import filter_functions
from leaktrace.stages.ingest import ingest_benchmark
from leaktrace.stages.leakage import build_index, gather, scan_shard

FILTER = FunctionFilterSettings(min_body_lines=1, max_body_lines=None, min_chars=0, exclude_init=True)

JAVA = """public static int gcd(int a, int b) {
    while (b != 0) {
        int t = b;
        b = a % b;
        a = t;
    }
    return a;
}
"""
CPP = """int clamp(int value, int low, int high) {
    // keep value inside [low, high]
    if (value < low) return low;
    if (value > high) return high;
    return value;
}
"""


def write(path, fmt, records):
    """``records`` written in ``fmt`` (jsonl, jsonl.gz, json, parquet, csv)."""
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    elif fmt == "jsonl.gz":
        path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode()))
    elif fmt == "json":
        path.write_text(json.dumps(records))
    elif fmt == "parquet":
        pq.write_table(pa.Table.from_pylist(records), path)
    elif fmt == "csv":
        with path.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(records[0]))
            writer.writeheader()
            writer.writerows(records)
    return path


# (preset, file format, records in the benchmark's own layout, what the first sample must hold)
CASES = {
    "humaneval": (
        "jsonl.gz",
        [
            {
                "task_id": "HumanEval/0",
                "prompt": 'def f(x):\n    """Double x."""\n',
                "canonical_solution": "    return 2 * x\n",
                "test": "def check(candidate):\n    pass\n",
                "entry_point": "f",
            }
        ],
        {
            "kind": "both",
            "code": 'def f(x):\n    """Double x."""\n    return 2 * x\n',
            "entry_point": "f",
            "language": "python",
        },
    ),
    "humanevalplus": (
        "parquet",
        [
            {
                "task_id": "HumanEval/1",
                "prompt": "def g():\n",
                "canonical_solution": "    return 1\n",
                "entry_point": "g",
                "test": "def check(candidate):\n    assert candidate() == 1\n",
            }
        ],
        {
            "kind": "both",
            "code": "def g():\n    return 1\n",
            "test": "def check(candidate):\n    assert candidate() == 1\n",
        },
    ),
    "mbpp": (
        "jsonl",
        [
            {
                "task_id": 11,
                "text": "Write a function to remove a character.",
                "code": "def remove(s, c):\n    return s.replace(c, '')\n",
                "test_list": ["assert remove('aba', 'a') == 'b'", "assert remove('', 'a') == ''"],
                "test_setup_code": "",
                "challenge_test_list": [],
            }
        ],
        {
            "task_id": "11",
            "kind": "both",
            "text": "Write a function to remove a character.",
            "prompt": "",
            "test": "\nassert remove('aba', 'a') == 'b'\nassert remove('', 'a') == ''",
            "entry_point": "remove",
            "test_format": "script",
        },
    ),
    "mbpp-sanitized": (
        "json",
        [
            {
                "source_file": "Benchmark Questions Verification V2.ipynb",
                "task_id": 12,
                "prompt": "Write a function to find the hypotenuse.",
                "code": "import math\ndef hypot(a, b):\n    return math.sqrt(a * a + b * b)\n",
                "test_imports": ["import math"],
                "test_list": ["assert math.isclose(hypot(3, 4), 5)"],
            }
        ],
        {
            "task_id": "12",
            "kind": "both",
            "test": "import math\nassert math.isclose(hypot(3, 4), 5)",
            "entry_point": "hypot",
            "test_format": "script",
        },
    ),
    "mbppplus-evalplus": (
        "jsonl",
        [
            {
                "task_id": "Mbpp/3",
                "prompt": '"""\nWrite a function to add one.\n"""\n',
                "entry_point": "add_one",
                "canonical_solution": "\ndef add_one(x):\n    return x + 1\n",
                "base_input": [[1], [2]],
                "plus_input": [[-5]],
                "atol": 0,
                "contract": "\n    assert isinstance(x, int)\n",
                "assertion": "\nassert add_one(1) == 2\n",
            }
        ],
        {
            "task_id": "Mbpp/3",
            "kind": "both",
            "entry_point": "add_one",
            "test": "\nassert add_one(1) == 2\n",
            "code": "\ndef add_one(x):\n    return x + 1\n",
            "test_format": "script",
        },
    ),
    "cruxeval": (
        "jsonl",
        [{"code": "def f(text):\n    return text[::-1]\n", "input": "'abc'", "output": "'cba'", "id": "sample_0"}],
        {
            "task_id": "sample_0",
            "kind": "code",
            "entry_point": "f",
            "test": "assert f('abc') == 'cba'",
            "test_format": "script",
        },
    ),
    "humaneval-x": (
        "jsonl.gz",
        [
            {
                "task_id": "CPP/0",
                "prompt": "#include<stdio.h>\n/* Add two numbers. */\nint add(int a, int b){\n",
                "declaration": "#include<stdio.h>\nint add(int a, int b){\n",
                "canonical_solution": "    return a + b;\n}\n",
                "test": "int main(){}\n",
                "example_test": "",
            },
            {
                "task_id": "Java/0",
                "prompt": "class Solution {\n    public int add(int a, int b) {\n",
                "declaration": "class Solution {\n",
                "canonical_solution": "        return a + b;\n    }\n}\n",
                "test": "public class Main {}\n",
                "example_test": "",
            },
        ],
        {"task_id": "CPP/0", "kind": "both", "language": "cpp"},
    ),
    "mbppplus": (
        "parquet",
        [
            {
                "task_id": 2,
                "code": "def similar(a, b):\n    return set(a) & set(b)\n",
                "prompt": "Write a function to find the shared elements.",
                "source_file": "mbpp.jsonl",
                "test_imports": [],
                "test_list": ["assert similar([1], [1]) == {1}"],
                "test": "inputs = []\n",
            }
        ],
        {
            "task_id": "2",
            "kind": "both",
            "text": "Write a function to find the shared elements.",
            "test": "inputs = []\n",
            "entry_point": "similar",
        },
    ),
    "apps": (
        "jsonl",
        [
            {
                "problem_id": 7,
                "question": "Read n and print n squared.",
                "solutions": json.dumps(["n = int(input())\nprint(n * n)\n", "print(int(input()) ** 2)\n"]),
                "input_output": json.dumps({"inputs": ["3\n"], "outputs": ["9\n"]}),
                "difficulty": "introductory",
                "url": "https://example.org/7",
                "starter_code": "",
            },
            {
                "problem_id": 8,
                "question": "A problem without solutions.",
                "solutions": "",
                "input_output": "",
                "difficulty": "interview",
                "url": "",
                "starter_code": "",
            },
        ],
        {
            "task_id": "7",
            "kind": "both",
            "solution": "n = int(input())\nprint(n * n)\n",
            "test": json.dumps({"inputs": ["3\n"], "outputs": ["9\n"]}),
        },
    ),
    "ds1000": (
        "jsonl.gz",
        [
            {
                "prompt": "Problem: sort a frame.\nA:\n<code>\nimport pandas as pd\n</code>",
                "reference_code": "result = df.sort_values('a')\n",
                "metadata": {
                    "problem_id": 0,
                    "library_problem_id": 0,
                    "library": "Pandas",
                    "test_case_cnt": 1,
                    "perturbation_type": "Origin",
                    "perturbation_origin_id": 0,
                },
                "code_context": "def test_execution(solution: str):\n    pass\n",
            }
        ],
        {"task_id": "0", "kind": "both", "code": "result = df.sort_values('a')\n"},
    ),
    "classeval": (
        "json",
        [
            {
                "task_id": "ClassEval_0",
                "skeleton": 'class Box:\n    """A box."""\n',
                "test": "import unittest\n",
                "solution_code": 'class Box:\n    """A box."""\n    size = 1\n',
                "import_statement": [],
                "class_description": "A box.",
                "methods_info": [],
                "class_name": "Box",
                "test_classes": ["BoxTest"],
                "class_constructor": "",
                "fields": [],
            }
        ],
        {"task_id": "ClassEval_0", "kind": "both", "entry_point": "Box", "text": 'class Box:\n    """A box."""\n'},
    ),
    "codesearchnet": (
        "parquet",
        [
            {
                "repository_name": "o/r",
                "func_path_in_repository": "src/M.java",
                "func_name": "M.gcd",
                "whole_func_string": JAVA,
                "language": "java",
                "func_code_string": JAVA,
                "func_code_tokens": ["public"],
                "func_documentation_string": "",
                "func_documentation_tokens": [],
                "split_name": "test",
                "func_code_url": "https://github.com/o/r/blob/x/src/M.java#L1-L8",
            }
        ],
        {"task_id": "https://github.com/o/r/blob/x/src/M.java#L1-L8", "kind": "code", "language": "java", "code": JAVA},
    ),
    "codesearchnet-original": (
        "jsonl",
        [
            {
                "repo": "o/r",
                "path": "src/clamp.cc",
                "func_name": "clamp",
                "original_string": CPP,
                "language": "C++",
                "code": CPP,
                "code_tokens": [],
                "docstring": "Clamp a value.",
                "docstring_tokens": [],
                "sha": "x",
                "url": "https://example.org/clamp",
                "partition": "test",
            }
        ],
        {"kind": "both", "language": "cpp", "text": "Clamp a value."},
    ),
    "swe-bench": (
        "jsonl",
        [
            {
                "instance_id": "o__r-1",
                "repo": "o/r",
                "base_commit": "x",
                "patch": "diff",
                "test_patch": "diff",
                "problem_statement": "Saving crashes with a KeyError.",
                "hints_text": "",
                "created_at": "2024-01-01",
                "version": "1.0",
            }
        ],
        {"task_id": "o__r-1", "kind": "text", "code": "", "text": "Saving crashes with a KeyError."},
    ),
    "text": (
        "csv",
        [{"id": "bug-1", "text": "The parser hangs on an empty file.", "reporter": "a"}],
        {"task_id": "bug-1", "kind": "text", "language": None},
    ),
}


def test_every_preset_has_a_case():
    assert set(CASES) == set(PRESETS)


@pytest.mark.parametrize("preset", CASES)
def test_each_preset_reads_a_file_in_its_format(tmp_path, preset):
    fmt, records, expected = CASES[preset]
    path = write(tmp_path / f"bench.{fmt}", fmt, records)
    settings = BenchmarkEntry(format=fmt.removesuffix(".gz"), preset=preset, path=str(path))
    ingest_benchmark("b", settings, tmp_path / "out.parquet")
    table = read_table(tmp_path / "out.parquet")
    assert table.schema == GENERIC_BENCHMARK_SCHEMA
    rows = table.to_pylist()
    assert len(rows) == len(records)
    first = rows[0]
    assert first["sample_id"] == f"b/{first['task_id']}"
    assert {k: first[k] for k in expected} == expected


def test_apps_without_solutions_is_a_text_sample(tmp_path):
    fmt, records, _ = CASES["apps"]
    samples = load_benchmark(
        BenchmarkEntry(format="jsonl", preset="apps", path=str(write(tmp_path / "a.jsonl", fmt, records))), "apps"
    )
    assert [(s.task_id, s.kind) for s in samples] == [("7", "both"), ("8", "text")]


def test_fields_override_a_preset_and_limit_stops_reading(tmp_path):
    path = write(
        tmp_path / "b.jsonl",
        "jsonl",
        [
            {
                "task_id": i,
                "text": f"Problem {i}.",
                "code": f"x = {i}\n",
                "test_list": [],
                "test_setup_code": "",
                "lang": "Python3",
            }
            for i in range(5)
        ],
    )
    samples = load_benchmark(
        BenchmarkEntry(format="jsonl", preset="mbpp", path=str(path), fields={"text": None, "language": "lang"}),
        "b",
        limit=2,
    )
    assert [(s.task_id, s.kind, s.language, s.text) for s in samples] == [
        ("0", "code", "python", ""),
        ("1", "code", "python", ""),
    ]


def test_the_humaneval_preset_reads_the_shipped_file_as_the_humaneval_format_does(tmp_path):
    ingest_benchmark("humaneval", BenchmarkEntry(format="humaneval", limit=10), tmp_path / "strict.parquet")
    ingest_benchmark(
        "humaneval",
        BenchmarkEntry(format="jsonl", preset="humaneval", path=str(shipped_humaneval_path()), limit=10),
        tmp_path / "generic.parquet",
    )
    strict = read_table(tmp_path / "strict.parquet")
    assert strict.schema == BENCHMARK_SCHEMA  # the default's table is unchanged: no kind, text or language column
    generic = read_table(tmp_path / "generic.parquet").select(BENCHMARK_SCHEMA.names)
    assert generic.equals(strict)
    assert all(document(r) == r["code"] and not_runnable(r) is None for r in strict.to_pylist())


def test_the_humaneval_reader_and_the_humaneval_preset_give_the_same_samples():
    """One sample type for every reader: HumanEval's own reader gives each
    shipped problem the sample preset humaneval gives it (its problem text
    the prompt, code and text both, Python, check tests)."""
    path = shipped_humaneval_path()
    strict = load_humaneval(path, "humaneval")
    generic = load_benchmark(BenchmarkEntry(format="jsonl", preset="humaneval", path=str(path)), "humaneval")
    assert {type(s) for s in strict + generic} == {BenchmarkSample}
    assert strict == generic
    assert (strict[0].kind, strict[0].language, strict[0].test_format, strict[0].text) == (
        "both",
        "python",
        "check",
        strict[0].prompt,
    )


# --- bad input: one InputError naming the file and the record ---

BAD = {
    "missing mapped field": (
        "jsonl",
        [{"task_id": 1, "code": "x = 1\n", "test_list": []}],
        "mbpp",
        "record line 1: the record does not match preset 'mbpp': it lacks the field(s) "
        "test_setup_code, text (it has: code, task_id, test_list)",
    ),
    "wrong type": (
        "jsonl",
        [{"task_id": 1, "text": "t", "code": {"a": 1}, "test_list": [], "test_setup_code": ""}],
        "mbpp",
        "record line 1: field 'code' (the solution) is dict, expected a string or a list of strings",
    ),
    "id of the wrong type": (
        "json",
        [{"instance_id": 1.5, "problem_statement": "x"}],
        "swe-bench",
        "record 1: field 'instance_id' (the id) is float",
    ),
    "duplicate id": (
        "jsonl",
        [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}],
        "text",
        "record line 2 (a): duplicate id",
    ),
    "neither text nor code": (
        "parquet",
        [{"id": "a", "text": " "}],
        "text",
        "record row 1: neither problem text nor code",
    ),
    "JSON string that is not JSON": (
        "jsonl",
        [{"problem_id": 1, "question": "q", "solutions": "[oops", "input_output": ""}],
        "apps",
        "record line 1: field 'solutions' is a string that is not JSON",
    ),
    "not an array": ("json", {"id": "a"}, "text", ": expected a JSON array of records"),
    "lone surrogate": (
        "jsonl",
        [{"id": "a", "text": "x\ud800"}],
        "text",
        "record line 1: field 'text' holds a lone surrogate",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_record_is_one_error_naming_file_and_record(tmp_path, case):
    fmt, records, preset, message = BAD[case]
    path = tmp_path / f"bench.{fmt}"
    if isinstance(records, dict):
        path.write_text(json.dumps(records))
    else:
        write(path, fmt, records)
    with pytest.raises(InputError) as err:
        load_benchmark(BenchmarkEntry(format=fmt, preset=preset, path=str(path)), "b")
    assert err.value.file == str(path) and message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv", "parquet"])
def test_an_empty_or_unreadable_file_is_an_error(tmp_path, fmt):
    empty = tmp_path / f"empty.{fmt}"
    if fmt == "parquet":
        pq.write_table(pa.table({"id": pa.array([], pa.string()), "text": pa.array([], pa.string())}), empty)
    else:
        empty.write_text("[]" if fmt == "json" else "id,text\n" if fmt == "csv" else "")
    with pytest.raises(InputError, match="benchmark has no records"):
        load_benchmark(BenchmarkEntry(format=fmt, preset="text", path=str(empty)), "b")
    garbage = tmp_path / f"garbage.{fmt}"
    garbage.write_bytes(b"\xff\xfe not what it claims\n")
    expected = {
        "jsonl": "record line 1: not UTF-8",
        "json": "not UTF-8",
        "csv": "not UTF-8",
        "parquet": "not a Parquet file",
    }[fmt]
    with pytest.raises(InputError, match=expected):
        load_benchmark(BenchmarkEntry(format=fmt, preset="text", path=str(garbage)), "b")


def test_a_bad_benchmark_is_one_line_on_stderr_from_the_cli(tmp_path):
    from helpers import assert_one_line_error, run_cli

    bench = write(
        tmp_path / "bench.jsonl", "jsonl", [{"task_id": 1, "text": "t", "test_list": [], "test_setup_code": ""}]
    )
    settings = json.dumps({"preset": "mbpp", "path": str(bench)})  # the preset implies the format
    result = run_cli(
        "ingest-benchmark", "--name", "b", "--settings", settings, "--output", str(tmp_path / "out.parquet")
    )
    assert_one_line_error(
        result,
        f"{bench}, record line 1: the record does not match preset 'mbpp': it lacks the "
        "field(s) code (it has: task_id, test_list, test_setup_code, text)",
    )
    assert not (tmp_path / "out.parquet").exists()


# --- Hugging Face datasets: streamed, from local files only ---


def test_a_huggingface_benchmark_is_streamed_with_its_settings(monkeypatch):
    calls = []

    def load_dataset(path, **kw):
        calls.append((path, kw))
        return iter([{"instance_id": "o__r-1", "problem_statement": "It crashes."}])

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    samples = load_benchmark(
        BenchmarkEntry(
            format="huggingface",
            preset="swe-bench",
            dataset="org/bench",
            split="test",
            config=None,
            revision="abc",
        ),
        "swe",
    )
    assert [(s.sample_id, s.kind) for s in samples] == [("swe/o__r-1", "text")]
    assert calls == [
        ("org/bench", {"name": None, "split": "test", "data_files": None, "revision": "abc", "streaming": True})
    ]


def test_a_huggingface_benchmark_from_local_files(tmp_path):
    import datasets  # noqa: F401  (pinned in requirements.lock: a missing package fails the test, never skips it)

    fmt, records, expected = CASES["mbpp"]
    path = write(tmp_path / "mbpp.jsonl", fmt, records)
    samples = load_benchmark(
        BenchmarkEntry(format="huggingface", dataset="json", path=str(path), split="train", preset="mbpp"), "mbpp"
    )
    assert [(s.task_id, s.kind, s.test) for s in samples] == [("11", "both", expected["test"])]


# --- kinds through the scan, and the stages that refuse them ---

SCAN = {
    "benchmark": "b",
    "corpus": {"kind": "files", "root": "."},
    "granularity": "function",
    "min_tokens": 5,
    "max_bytes": 1_000_000,
    "huge": "chunk",
    "batch_size": 8,
    "language": "python",
}


def scan_files(tmp_path, settings, files):
    """Ingest ``settings`` as benchmark b, scan a directory of ``files``, gather; the duplicate pairs."""
    root = tmp_path / "corpus"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    ingest_benchmark("b", settings, tmp_path / "b.parquet")
    scan = scan_slice({**SCAN, "corpus": {"kind": "files", "root": str(root), "glob": "*"}})
    build_index("t", (tmp_path / "b.parquet",), scan, tmp_path / "index.parquet")
    scan_shard(
        "t",
        tmp_path / "index.parquet",
        (tmp_path / "b.parquet",),
        scan,
        0,
        1,
        tmp_path / "pairs.parquet",
        tmp_path / "accounting.parquet",
    )
    gather(
        "t",
        tmp_path / "index.parquet",
        {"b": tmp_path / "b.parquet"},
        (tmp_path / "pairs.parquet",),
        (tmp_path / "accounting.parquet",),
        scan,
        tmp_path / "out",
    )
    return read_records(tmp_path / "out" / "pairs.parquet")


def test_code_text_and_mixed_samples_in_python_java_cpp_are_scanned_as_they_are(tmp_path):
    issue = (
        "When the configuration file is missing, the service starts with an empty list of hosts and then "
        "silently drops every request instead of refusing to start."
    )
    records = [
        {"id": "java", "text": "", "code": JAVA, "lang": "java"},
        {"id": "cpp", "text": None, "code": CPP, "lang": "c++"},
        {"id": "issue", "text": issue, "code": "", "lang": ""},
        {
            "id": "mixed",
            "text": "Return the mean of a list of numbers.",
            "code": "def mean(values):\n    total = sum(values)\n    return total / len(values)\n",
            "lang": "python",
        },
        {
            "id": "unseen",
            "text": "A problem nobody copied, about sorting the words of a sentence by their length.",
            "code": "",
            "lang": "",
        },
    ]
    path = write(tmp_path / "b.json", "json", records)
    settings = BenchmarkEntry(
        format="json",
        path=str(path),
        fields={"id": "id", "text": "text", "solution": "code", "language": "lang"},
    )
    pairs = scan_files(
        tmp_path,
        settings,
        {
            "Maths.java": "class Maths {\n    // Euclid\n" + JAVA + "}\n",
            "clamp.cpp": "#include <algorithm>\n\n" + CPP.replace("value < low", "value  <  low"),
            "NOTES.txt": "Known problems.\n\n" + issue + "\n",
            "solutions.py": 'import math\n\n\ndef mean(values):\n    """Return the mean of a list of numbers."""\n'
            "    total = sum(values)\n    return total / len(values)\n",
        },
    )
    found = {p["sample_id"]: (p["location"].rsplit("/", 1)[1], p["clone_type"]) for p in pairs if p["duplicate"]}
    assert found == {
        "b/java": ("Maths.java", "type-1"),
        "b/cpp": ("clamp.cpp", "type-1"),
        "b/issue": ("NOTES.txt", "type-1"),
        "b/mixed": ("solutions.py", "type-3"),
    }
    kinds = {r["sample_id"]: (r["kind"], r["language"]) for r in read_records(tmp_path / "b.parquet")}
    assert kinds == {
        "b/java": ("code", "java"),
        "b/cpp": ("code", "cpp"),
        "b/issue": ("text", "python"),
        "b/mixed": ("both", "python"),
        "b/unseen": ("text", "python"),
    }


def test_testbed_stages_refuse_samples_they_cannot_run(tmp_path):
    fmt, records, _ = CASES["mbpp"]
    # two functions, and asserts that call neither: no entry point to infer
    records = [
        {**records[0], "code": "def a():\n    return 1\n\ndef b():\n    return 2\n", "test_list": ["assert 1 == 1"]}
    ]
    ingest_benchmark(
        "mbpp",
        BenchmarkEntry(format="jsonl", preset="mbpp", path=str(write(tmp_path / "m.jsonl", fmt, records))),
        tmp_path / "mbpp.parquet",
    )
    with pytest.raises(
        InputError,
        match=r"mbpp\.parquet, record mbpp/11: the filter stage needs runnable Python with "
        r"HumanEval-style, script or input/output tests, and it has no entry point \(the "
        r"release names none, and neither its tests nor its code show one\); scan "
        r"such a benchmark",
    ):
        filter_functions(tmp_path / "mbpp.parquet", FILTER, tmp_path / "functions.parquet")
    assert not (tmp_path / "functions.parquet").exists()
    row = {"sample_id": "x", "kind": "both", "language": "python", "entry_point": "f", "code": "def f(): pass\n"}
    assert not_runnable({**row, "kind": "text"}) == "it is problem text only, with no code"
    assert not_runnable({**row, "language": "java"}) == "its code is java, not Python"
    assert (
        not_runnable({**row, "test": "assert f() is None\n"})
        == "its tests define no HumanEval-style check(candidate) function"
    )
    assert not_runnable({**row, "test": "def check(candidate):\n    assert candidate() is None\n"}) is None


def test_the_shipped_fixtures_are_read(tmp_path):
    """The files config/experiments/benchmarks.yaml scans."""
    from repo_copy import REPO

    mbpp = load_benchmark(
        BenchmarkEntry(format="jsonl", preset="mbpp", path=str(REPO / "resources/benchmarks/mbpp-mini.jsonl")), "m"
    )
    issues = load_benchmark(
        BenchmarkEntry(format="jsonl", preset="swe-bench", path=str(REPO / "resources/benchmarks/issues-mini.jsonl")),
        "i",
    )
    assert [s.kind for s in mbpp] == ["both"] * 3 and [s.kind for s in issues] == ["text"] * 2
    assert benchmarks.source_name(BenchmarkEntry(format="jsonl", path="x.jsonl")) == "x.jsonl"


def test_one_pass_over_the_corpus_for_several_benchmarks(tmp_path):
    """Several benchmarks in one index, one scan of the corpus: a Table 2 row
    per benchmark, the per-language averages, and every cleaned sample."""
    ingest_benchmark("humaneval", BenchmarkEntry(format="humaneval", limit=3), tmp_path / "humaneval.parquet")
    he = read_records(tmp_path / "humaneval.parquet")
    write(
        tmp_path / "f.json",
        "json",
        [{"id": "gcd", "code": JAVA, "lang": "java"}, {"id": "clamp", "code": CPP, "lang": "cpp"}],
    )
    ingest_benchmark(
        "funcs",
        BenchmarkEntry(
            format="json",
            path=str(tmp_path / "f.json"),
            fields={"id": "id", "solution": "code", "language": "lang"},
        ),
        tmp_path / "funcs.parquet",
    )
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "copied.py").write_text(he[1]["code"])
    (root / "Maths.java").write_text("class Maths {\n" + JAVA + "}\n")
    settings = scan_slice({**SCAN, "corpus": {"kind": "files", "root": str(root), "glob": "*"}})
    tables = {"humaneval": tmp_path / "humaneval.parquet", "funcs": tmp_path / "funcs.parquet"}
    build_index("all", tuple(tables.values()), settings, tmp_path / "index.parquet")
    scan_shard(
        "all",
        tmp_path / "index.parquet",
        tuple(tables.values()),
        settings,
        0,
        1,
        tmp_path / "p.parquet",
        tmp_path / "a.parquet",
    )
    gather(
        "all",
        tmp_path / "index.parquet",
        tables,
        (tmp_path / "p.parquet",),
        (tmp_path / "a.parquet",),
        settings,
        tmp_path / "out",
    )
    summary = read_records(tmp_path / "out" / "summary.parquet")
    assert [(r["benchmark"], r["language"], r["size"], r["leaked_count"], r["documents"]) for r in summary] == [
        ("humaneval", "python", 3, 1, 2),
        ("funcs", "cpp", 2, 1, 2),
    ]  # a tie: the first in order
    clean = read_records(tmp_path / "out" / "clean.parquet")
    assert [r["sample_id"] for r in clean] == [he[0]["sample_id"], he[2]["sample_id"], "funcs/clamp"]
    assert clean[0]["kind"] is None and clean[2]["kind"] == "code"
    report = (tmp_path / "out" / "report.md").read_text()
    assert "2 benchmarks vs" in report and "| cpp | 1 | 2 | 1 | 50.0% | 50.0% |" in report
