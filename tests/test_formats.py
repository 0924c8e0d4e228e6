"""Benchmarks in their published layouts: each file of
tests/data/formats/ (written for these tests by make_formats.py, in the
layout of one release) is read by its preset alone, with no field mapping,
and each runnable one runs its own tests in the sandbox as the audit's
variants stage does: the solutions pass, a wrong solution fails. Those that
cannot run say why, in the words the planning check prints."""

import json
from pathlib import Path

import pytest

from leaktrace.data.benchmarks import load_benchmark
from leaktrace.data.samples import not_runnable, sample_tests
from leaktrace.sandbox import SandboxLimits
from leaktrace.settings.ingest import BenchmarkEntry
from leaktrace.variants.validate import validate_variants

FORMATS = Path(__file__).parent / "data" / "formats"

# preset -> (file, format, ids, languages, what the audit can do with it: None = runs, else the reason's start)
RELEASES = {
    "humaneval": ("humaneval.jsonl.gz", "jsonl", ["HumanEval/0", "HumanEval/1"], {"python"}, None),
    "mbpp": ("mbpp.jsonl", "jsonl", ["601", "602"], {"python"}, None),
    "mbpp-sanitized": ("mbpp-sanitized.json", "json", ["603", "604"], {"python"}, None),
    "mbppplus": ("mbppplus.jsonl", "jsonl", ["605"], {"python"}, None),
    "mbppplus-evalplus": ("mbppplus-evalplus.jsonl", "jsonl", ["Mbpp/606", "Mbpp/607"], {"python"}, None),
    "cruxeval": ("cruxeval.jsonl", "jsonl", ["sample_0", "sample_1"], {"python"}, None),
    "apps": ("apps.jsonl", "jsonl", ["4000", "4001"], {"python"}, None),
    "classeval": ("classeval.json", "json", ["ClassEval_900"], {"python"}, None),
    "humaneval-x": ("humaneval-x.jsonl.gz", "jsonl", ["CPP/0", "Java/0"], {"cpp", "java"}, "its code is "),
    "ds1000": ("ds1000.jsonl.gz", "jsonl", ["900"], {"python"}, "its tests exec the solution's source"),
    "swe-bench": ("swe-bench.jsonl", "jsonl", ["example__shop-1"], {"python"}, "it is problem text only"),
}
LIMITS = SandboxLimits(timeout_s=20, cpu_s=10)


def rows(preset: str) -> list[dict]:
    file, fmt, _, _, _ = RELEASES[preset]
    samples = load_benchmark(BenchmarkEntry(format=fmt, preset=preset, path=str(FORMATS / file)), preset)
    return [{**vars(s), "code": s.code} for s in samples]


@pytest.mark.parametrize("preset", RELEASES)
def test_each_release_is_read_by_its_preset_alone(preset):
    _, _, ids, languages, unrunnable = RELEASES[preset]
    found = rows(preset)
    assert [r["task_id"] for r in found] == ids
    assert {r["language"] for r in found} == languages
    reasons = [not_runnable(r) for r in found]
    if unrunnable is None:
        assert reasons == [None] * len(found)
    else:
        assert all(reason and reason.startswith(unrunnable) for reason in reasons), reasons


def test_entry_points_come_from_the_release_or_from_its_tests():
    """MBPP and CRUXEval name none: the function the asserts call; MBPP+ and HumanEval name theirs."""
    assert [r["entry_point"] for r in rows("mbpp")] == ["gcd", "hypotenuse"]
    assert [r["entry_point"] for r in rows("cruxeval")] == ["f", "f"]
    assert [r["entry_point"] for r in rows("mbppplus-evalplus")] == ["reverse_words", "mean"]
    assert [r["test"] for r in rows("cruxeval")] == ["assert f('abcde', 2) == 'cdeab'", "assert f([1, 2, 3]) == [1, 9]"]
    assert rows("mbpp")[1]["test"] == (
        "import math\nassert math.isclose(hypotenuse(3, 4), 5.0)\nassert hypotenuse(0, 0) == 0.0"
    )


def wrong(row: dict) -> str:
    """The sample's code with its entry point (or, for a whole program, its output) made wrong."""
    if row["entry_point"]:
        return row["code"] + f"\n\n{row['entry_point']} = lambda *args, **kwargs: None\n"
    return "print('wrong')\n"


@pytest.mark.parametrize("preset", [p for p, release in RELEASES.items() if release[4] is None])
def test_each_runnable_release_runs_its_tests_in_the_sandbox(preset):
    """As the variants stage runs them: each original against its own tests
    (HumanEval's check, MBPP's asserts made into one, APPS's cases), then a
    wrong solution, which must fail."""
    samples = rows(preset)
    items, originals = [], []
    for row in samples:
        tests, entry_point = sample_tests(row, preset)
        items += [(row["code"], tests, entry_point), (wrong(row), tests, entry_point)]
        originals += [len(items) - 2, len(items) - 1]
    verdicts = validate_variants(items, originals, LIMITS, workers=2)
    assert [v for v, _ in verdicts[0::2]] == [True] * len(samples), verdicts[0::2]
    assert [v for v, _ in verdicts[1::2]] == [False] * len(samples), verdicts[1::2]


# --- a preset reads its release by itself: no `format`, no `fields` ---

# preset -> (file, ids): every shipped preset, each file in its release's layout
PRESET_FILES = {
    "humaneval": ("humaneval.jsonl.gz", ["HumanEval/0", "HumanEval/1"]),
    "humanevalplus": ("humanevalplus.jsonl", ["HumanEval/0", "HumanEval/1"]),
    "humaneval-x": ("humaneval-x.jsonl.gz", ["CPP/0", "Java/0"]),
    "mbpp": ("mbpp.jsonl", ["601", "602"]),
    "mbpp-sanitized": ("mbpp-sanitized.json", ["603", "604"]),
    "mbppplus": ("mbppplus.jsonl", ["605"]),
    "mbppplus-evalplus": ("mbppplus-evalplus.jsonl", ["Mbpp/606", "Mbpp/607"]),
    "cruxeval": ("cruxeval.jsonl", ["sample_0", "sample_1"]),
    "apps": ("apps.jsonl", ["4000", "4001"]),
    "ds1000": ("ds1000.jsonl.gz", ["900"]),
    "classeval": ("classeval.json", ["ClassEval_900"]),
    "codesearchnet": (
        "codesearchnet.jsonl",
        ["https://github.com/example/shop/blob/0000000/shop/tax.py#L1-L3", "example/shop/shop/cart.py:Cart.total"],
    ),
    "codesearchnet-original": (
        "codesearchnet-original.jsonl.gz",
        [
            "https://github.com/example/calc/blob/0000000/src/Calc.java#L3-L5",
            "example/calc/src/Calc.java:Calc.add",
            "example/calc/src/Calc.java:Calc.add#2",
        ],
    ),
    "swe-bench": ("swe-bench.jsonl", ["example__shop-1"]),
    "text": ("text.jsonl", ["note-1", "note-2"]),
}


def test_every_shipped_preset_has_a_release_file_here():
    from leaktrace.data.benchmarks import PRESETS

    assert set(PRESET_FILES) == set(PRESETS)


@pytest.mark.parametrize("preset", PRESET_FILES)
def test_each_preset_reads_its_release_with_only_preset_and_path(preset):
    file, ids = PRESET_FILES[preset]
    samples = load_benchmark(BenchmarkEntry(preset=preset, path=str(FORMATS / file)), preset)
    assert [s.task_id for s in samples] == ids
    assert all(s.code or s.text for s in samples)


def test_the_mbppplus_preset_reads_both_of_its_releases_layouts():
    """The hub's (code, test) and EvalPlus's MbppPlus.jsonl (canonical_solution, assertion, entry_point)."""
    hub = load_benchmark(BenchmarkEntry(preset="mbppplus", path=str(FORMATS / "mbppplus.jsonl")), "m")
    evalplus = load_benchmark(BenchmarkEntry(preset="mbppplus", path=str(FORMATS / "mbppplus-evalplus.jsonl")), "m")
    assert [(s.entry_point, s.solution.startswith("def clamp")) for s in hub] == [("clamp", True)]
    assert [s.entry_point for s in evalplus] == ["reverse_words", "mean"]
    assert evalplus[1].test == "\nimport math\nassert math.isclose(mean([1, 2]), 1.5)\n"
    assert [not_runnable({**vars(s), "code": s.code}) for s in hub + evalplus] == [None] * 3


def test_codesearchnet_reads_its_dumps_with_or_without_urls():
    """Without a url the id is repository/path:function; a repeat (Java overloads) gets #2."""
    found = load_benchmark(
        BenchmarkEntry(preset="codesearchnet-original", path=str(FORMATS / "codesearchnet-original.jsonl.gz")), "c"
    )
    assert [(s.language, s.entry_point, s.text) for s in found] == [
        ("java", "Calc.square", "Square of x."),
        ("java", "Calc.add", "Sum of two ints."),
        ("java", "Calc.add", "Sum of two longs."),
    ]
    hub = load_benchmark(BenchmarkEntry(preset="codesearchnet", path=str(FORMATS / "codesearchnet.jsonl")), "c")
    assert [(s.kind, s.entry_point) for s in hub] == [("both", "add_tax"), ("code", "Cart.total")]


def test_the_preset_implies_the_format_and_format_humaneval_never_hides_a_preset(tmp_path):
    from leaktrace.data.benchmarks import benchmark_format

    assert benchmark_format(BenchmarkEntry()) == "humaneval"  # the shipped HumanEval
    assert benchmark_format(BenchmarkEntry(preset="humaneval", path="h.jsonl.gz")) == "humaneval"
    assert benchmark_format(BenchmarkEntry(preset="humaneval", path="h.parquet")) == "parquet"
    assert benchmark_format(BenchmarkEntry(preset="mbpp", path="m.JSONL")) == "jsonl"
    assert benchmark_format(BenchmarkEntry(preset="classeval", path="ClassEval_data.json")) == "json"
    assert benchmark_format(BenchmarkEntry(preset="swe-bench", path="test-00000-of-00001.parquet")) == "parquet"
    assert benchmark_format(BenchmarkEntry(preset="mbpp", dataset="mbpp")) == "huggingface"
    assert benchmark_format(BenchmarkEntry(preset="mbpp", path="m.txt", format="jsonl")) == "jsonl"
    with pytest.raises(ValueError, match=r"format humaneval reads HumanEval's own file and would ignore preset 'mbpp'"):
        benchmark_format(BenchmarkEntry(preset="mbpp", path="m.jsonl", format="humaneval"))
    with pytest.raises(ValueError, match=r"cannot tell the format of m\.txt from its name: set format"):
        benchmark_format(BenchmarkEntry(preset="mbpp", path="m.txt"))


def test_a_preset_that_does_not_match_its_file_names_the_preset_the_file_and_the_missing_fields():
    from leaktrace.errors import InputError

    path = FORMATS / "mbpp.jsonl"
    with pytest.raises(InputError) as err:
        load_benchmark(BenchmarkEntry(preset="classeval", path=str(path)), "c")
    assert str(err.value).startswith(
        f"{path}, record line 1: the record does not match preset 'classeval': it lacks the field(s) class_name, "
        "skeleton, solution_code, test (it has: challenge_test_list, code, task_id, test_list, test_setup_code, text)"
    )
    with pytest.raises(
        InputError,
        match=r"does not match preset 'mbppplus': it lacks the field\(s\) layout 1: prompt, "
        r"test; layout 2: assertion, canonical_solution, entry_point, prompt \(it has",
    ):
        load_benchmark(BenchmarkEntry(preset="mbppplus", path=str(path)), "m")


def test_ingest_reads_a_preset_with_only_preset_and_path(tmp_path):
    from leaktrace.artifacts import read_records
    from leaktrace.stages.ingest import ingest_benchmark

    ingest_benchmark("mbpp", BenchmarkEntry(preset="mbpp", path=str(FORMATS / "mbpp.jsonl")), tmp_path / "b.parquet")
    rows = read_records(tmp_path / "b.parquet")
    assert [(r["task_id"], r["entry_point"], r["test_format"]) for r in rows] == [
        ("601", "gcd", "script"),
        ("602", "hypotenuse", "script"),
    ]


def test_config_validation_fills_the_implied_format(tmp_path):
    from leaktrace.configuration import imply_benchmark_formats

    config = {
        "benchmarks": {
            "h": {"format": None, "preset": None, "path": None},
            "m": {"format": None, "preset": "mbpp", "path": "mbpp.jsonl"},
        }
    }
    imply_benchmark_formats(config)
    assert {k: v["format"] for k, v in config["benchmarks"].items()} == {"h": "humaneval", "m": "jsonl"}
    with pytest.raises(ValueError, match=r"config benchmarks.x: format humaneval reads"):
        imply_benchmark_formats({"benchmarks": {"x": {"format": "humaneval", "preset": "cruxeval", "path": "c.jsonl"}}})


def test_humaneval_x_tests_are_main_programs_run_with_a_toolchain_or_said_not_to_run():
    """C++ and Java tests are main() programs (test format "main"), not check code: the audit
    says it cannot run them; built with the solution they pass where g++/javac are installed,
    and where not the verdict is None with the reason, never a pass."""
    from leaktrace.mutate.compiled import validate_compiled
    from leaktrace.sandbox import toolchains

    samples = load_benchmark(BenchmarkEntry(preset="humaneval-x", path=str(FORMATS / "humaneval-x.jsonl.gz")), "x")
    assert [(s.language, s.test_format) for s in samples] == [("cpp", "main"), ("java", "main")]
    assert all("its tests are a main() program" in not_runnable({**vars(s), "code": s.code}) for s in samples)
    programs = [(s.language, s.code, s.test) for s in samples]
    programs += [
        (s.language, s.code.replace("a > b ? a : b", "a").replace("Math.max(a, b)", "a"), s.test) for s in samples
    ]
    verdicts = validate_compiled(programs, [0, 1, 2, 3], LIMITS, workers=2)
    for (language, _, _), (ok, why), wrong_one in zip(programs, verdicts, [False, False, True, True], strict=True):
        if toolchains.missing(language) is not None:
            assert ok is None and why.startswith("unvalidated: ")
        else:
            assert ok is (not wrong_one), why


# --- the ingest report: every canonical solution against its own tests ---

# preset -> samples the sandbox runs (the others: text only, C++/Java main() programs, DS-1000's exec tests)
RUN_AT_INGEST = {
    "humaneval": 2,
    "humanevalplus": 2,
    "humaneval-x": 0,
    "mbpp": 2,
    "mbpp-sanitized": 2,
    "mbppplus": 1,
    "mbppplus-evalplus": 2,
    "cruxeval": 2,
    "apps": 2,
    "ds1000": 0,
    "classeval": 1,
    "codesearchnet": 0,
    "codesearchnet-original": 0,
    "swe-bench": 0,
    "text": 0,
}


@pytest.mark.parametrize("preset", PRESET_FILES)
def test_each_presets_canonical_solutions_pass_their_own_tests(preset, full_isolation):
    """Regression test of the fixtures: the ingest runs them all and none fails."""
    from leaktrace.sandbox.sample_runs import solution_failures

    file, _ = PRESET_FILES[preset]
    rows = [
        {**vars(s), "code": s.code}
        for s in load_benchmark(BenchmarkEntry(preset=preset, path=str(FORMATS / file)), preset)
    ]
    assert solution_failures(rows, file) == (RUN_AT_INGEST[preset], [])


def test_the_ingest_log_names_a_canonical_solution_that_fails_its_own_tests(tmp_path, caplog, full_isolation):
    from leaktrace.stages.ingest import ingest_benchmark

    lines = (FORMATS / "mbpp.jsonl").read_text().splitlines()
    broken = json.loads(lines[0])
    broken["code"] = broken["code"].replace("return", "return 1 + ", 1)  # gcd off by one
    bench = tmp_path / "mbpp.jsonl"
    bench.write_text("\n".join([json.dumps(broken), lines[1]]) + "\n")
    with caplog.at_level("INFO", logger="leaktrace.stages.ingest"):
        ingest_benchmark("mine", BenchmarkEntry(preset="mbpp", path=str(bench)), tmp_path / "b.parquet")
    assert "benchmark mine: 1 of 2 canonical solutions pass their own tests in the sandbox" in caplog.text
    assert "benchmark mine: mine/601: the canonical solution fails its own tests: wrong: " in caplog.text
    caplog.clear()
    with caplog.at_level("INFO", logger="leaktrace.stages.ingest"):
        ingest_benchmark(
            "mine", BenchmarkEntry(preset="mbpp", path=str(bench), check_solutions=False), tmp_path / "c.parquet"
        )
    assert "canonical solutions" not in caplog.text


def test_a_solution_whose_test_consumes_its_iterator_or_checks_its_argument_changed_in_place_passes(
    tmp_path, full_isolation
):
    from leaktrace.sandbox.sample_runs import solution_failures

    in_place = ["xs = [3, 1, 2]", "sort_in_place(xs)", "assert xs == [1, 2, 3]"]
    records = [
        {"task_id": 1, "code": "def sort_in_place(xs):\n    xs.sort()\n", "test_list": in_place},
        {
            "task_id": 2,
            "code": "def evens(xs):\n    return filter(lambda x: x % 2 == 0, xs)\n",
            "test_list": ["assert list(evens([1, 2, 4])) == [2, 4]"],
        },
        {"task_id": 3, "code": "def sort_in_place(xs):\n    xs = sorted(xs)\n", "test_list": in_place},
    ]
    bench = tmp_path / "mbpp.jsonl"
    bench.write_text("".join(json.dumps({"text": "", "test_setup_code": "", **r}) + "\n" for r in records))
    rows = [{**vars(s), "code": s.code} for s in load_benchmark(BenchmarkEntry(preset="mbpp", path=str(bench)), "mine")]
    assert solution_failures(rows, "mbpp.jsonl") == (3, [("mine/3", "wrong: AssertionError")])


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("limit", "ten", "config benchmarks.mine.limit: expected an integer, got 'ten'"),
        ("check_solutions", "no", "config benchmarks.mine.check_solutions: expected a boolean, got 'no'"),
        ("fields", {"id": 3}, "config benchmarks.mine.fields.id: expected a string or a list or null, got 3"),
    ],
)
def test_the_ingest_command_names_a_mistyped_benchmark_key(tmp_path, capsys, key, value, message):
    from leaktrace.cli import main
    from leaktrace.configuration import schema_node

    # the release's ingest (rules/watermark.smk) passes no check_solutions: the schema's default, written only there
    assert schema_node("benchmarks", "*", "check_solutions")["default"] is True
    settings = {"preset": "mbpp", "path": str(FORMATS / "mbpp.jsonl"), key: value}
    output = tmp_path / "b.parquet"
    with pytest.raises(SystemExit) as stopped:
        main(["ingest-benchmark", "--name", "mine", "--settings", json.dumps(settings), "--output", str(output)])
    assert stopped.value.code == 2 and message in capsys.readouterr().err
    assert not output.exists()
