"""Benchmarks in their published layouts (issue 34): each file of
tests/data/formats/ (written for these tests by make_formats.py, in the
layout of one release) is read by its preset alone, with no field mapping,
and each runnable one runs its own tests in the sandbox as the audit's
variants stage does: the solutions pass, a wrong solution fails. Those that
cannot run say why, in the words the planning check prints."""

from pathlib import Path

import pytest
from leaktrace.data.benchmarks import load_benchmark
from leaktrace.data.samples import not_runnable, sample_tests
from leaktrace.sandbox import SandboxLimits
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
    samples = load_benchmark({"format": fmt, "preset": preset, "path": str(FORMATS / file)}, preset)
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
    assert rows("mbpp")[1]["test"] == ("import math\nassert math.isclose(hypotenuse(3, 4), 5.0)\n"
                                       "assert hypotenuse(0, 0) == 0.0")


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
