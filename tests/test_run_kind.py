"""Which benchmarks a run trains on (leaktrace/run_kind.py): an audit of
models of its own never makes a benchmark a testbed because of its layout,
and says so at planning where a benchmark asks for it; a hub id that cannot
be fetched (offline, in no cache) stops a run at planning with both
readings of the path (leaktrace/models/hub_reach.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaktrace.models.hub_reach import hub_problem
from leaktrace.plan_checks import model_problems
from leaktrace.run_kind import AUDIT, EXPERIMENT, TESTBED, benchmarks_on_testbed, run_kind, training_notice

HUMANEVAL = {"preset": "humaneval", "path": "b.jsonl", "testbed": None}


def config(models: list[dict], **benchmark) -> dict:
    return {"benchmarks": {"b": {**HUMANEVAL, **benchmark}}, "audit": {"benchmarks": ["b"], "models": models}}


@pytest.mark.parametrize(
    ("models", "benchmark", "kind", "trained", "notice"),
    [
        ([{"name": "mine", "path": "m"}], {}, AUDIT, [], False),  # HumanEval's layout: audited, not trained
        ([{"name": "mine", "path": "m"}], {"testbed": True}, AUDIT, ["b"], True),  # asked for: trains, and says so
        ([{"name": "base", "testbed": "reference"}], {}, TESTBED, ["b"], False),  # the default: a testbed model audited
        ([], {}, TESTBED, ["b"], False),
        ([], {"testbed": False}, EXPERIMENT, [], False),
        ([], {"preset": "mbpp"}, EXPERIMENT, [], False),
    ],
)
def test_an_audit_trains_only_where_a_benchmark_says_testbed_true(models, benchmark, kind, trained, notice):
    c = config(models, **benchmark)
    assert (run_kind(c), benchmarks_on_testbed(c)) == (kind, trained)
    assert (training_notice(c) is not None) == notice
    if notice:
        assert "benchmarks.b.testbed is true" in training_notice(c) and "testbed: false" in training_notice(c)


def test_a_hub_id_in_no_cache_is_unreachable_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub_problem("no-such-org/no-such-model", tmp_path).startswith("HF_HUB_OFFLINE is set and it is in no local")
    fetched = tmp_path / "no-such-org--no-such-model@v1"
    fetched.mkdir()
    (fetched / "config.json").write_text("{}")
    assert hub_problem("no-such-org/no-such-model", tmp_path) is None  # the pipeline's own fetched copy


def test_an_unreachable_hub_id_is_named_as_a_missing_directory_too(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    c = {
        "base_model": {"path": "org/base"},
        "score": {"methods": {}},
        "audit": {"models": [{"name": "mine", "path": "models/mine"}]},
    }
    assert model_problems(c) == []  # a dry run: hub ids are left to their fetch jobs
    problems = model_problems(c, hub_problem=lambda repo: "offline" if repo == "models/mine" else None)
    assert problems == [
        f"audit.models[0] (mine).path: models/mine is neither a local directory ({tmp_path}/models/mine does not "
        "exist) nor a reachable hub id: offline"
    ]


@pytest.mark.parametrize("kind", [AUDIT, TESTBED, EXPERIMENT])
def test_each_kind_of_run_has_the_report_opening_text_the_snakefile_names(kind):
    root = Path(__file__).resolve().parents[1]
    assert 'report: f"report/landing/{RUN_KIND}.rst"' in (root / "Snakefile").read_text()
    text = (root / "report" / "landing" / f"{kind}.rst").read_text()
    assert text.startswith("Start with the category **1. Verdict (start here)**") and "**2. Scans**" in text
    assert ("trained nothing" in text) == (kind != TESTBED)
