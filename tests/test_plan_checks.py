"""Config mistakes stop at planning: leaktrace/plan_checks.py
checks every user input before any job starts, listing every problem in one
error (the whole path through Snakemake: tests/test_model_identity.py and the
planning tests of tests/test_audit.py)."""

import importlib.util
import json
import shlex
from pathlib import Path

import pytest
import yaml

from leaktrace.leakage.sources import glob_has_match
from leaktrace.plan_checks import (
    PlanError,
    benchmark_problems,
    check_plan,
    control_id_problems,
    corpus_problems,
    model_problems,
    name_problems,
)

REPO = Path(__file__).resolve().parents[1]
TINY, TINY_REF = REPO / "resources/models/leaktrace-tiny", REPO / "resources/models/leaktrace-tiny-ref"
MBPP_AUDIT = REPO / "resources/audit/mbpp-audit.jsonl"


def base_config(tmp_path: Path) -> dict:
    """The smallest config the checks read: the shipped audit's inputs, absolute."""
    return {
        "benchmarks": {
            "mbpp-audit": {"format": "jsonl", "preset": "mbpp", "path": str(MBPP_AUDIT), "limit": None, "testbed": None}
        },
        "corpora": {},
        "base_model": {"path": str(TINY)},
        "reference_model": {"path": str(TINY_REF)},
        "score": {"methods": {"ref": {"model": str(TINY_REF)}}},
        "audit": {"benchmarks": ["mbpp-audit"], "models": [{"name": "model-a", "path": str(TINY)}]},
        "contamination": {"held_out_ids": str(REPO / "resources/audit/control-ids.txt")},
        "counterfactual": {"target": None, "reference": None, "sources": {}},
        "variants": {"natural": {"enabled": False}},
        "leakage": {
            "scans": {
                "my-corpus": {
                    "benchmark": "mbpp-audit",
                    "corpus": {"kind": "files", "root": str(REPO / "resources/audit/corpus"), "glob": "**/*.py"},
                }
            }
        },
    }


def test_the_shipped_audit_inputs_have_no_problem(tmp_path):
    check_plan(base_config(tmp_path))


def test_a_missing_model_path_is_named_with_its_key(tmp_path):
    config = base_config(tmp_path)
    (tmp_path / "not-a-model").mkdir()
    config["audit"]["models"] += [
        {"name": "typo", "path": str(tmp_path / "mdoels/coder")},
        {"name": "empty", "path": str(tmp_path / "not-a-model")},
        {"name": "hub", "path": "bigcode/starcoder2-3b"},
    ]  # a hub id: fetched by its job
    config["score"]["methods"]["ref"]["model"] = str(tmp_path / "ref")
    assert model_problems(config) == [
        f"score.methods.ref.model: {tmp_path}/ref does not exist (a local model directory, or a hub id 'org/name')",
        f"audit.models[1] (typo).path: {tmp_path}/mdoels/coder does not exist (a local model directory, or a hub id "
        "'org/name')",
        f"audit.models[2] (empty).path: {tmp_path}/not-a-model holds no config.json (not a Hugging Face model directory)",
    ]
    # the shipped model a requested target rebuilds may be missing
    config = base_config(tmp_path)
    config["base_model"]["path"] = str(tmp_path / "rebuilt")
    assert model_problems(config, buildable=[str(tmp_path / "rebuilt")]) == []
    assert len(model_problems(config)) == 1


def test_a_control_id_that_is_not_in_the_benchmark_is_named(tmp_path):
    config = base_config(tmp_path)
    ids = tmp_path / "ids.txt"
    ids.write_text("# controls\n12\nmbpp-audit/13\n999\nmbpp-audit/1000\n")
    config["contamination"]["held_out_ids"] = str(ids)
    assert control_id_problems(config) == [
        f"contamination.held_out_ids: 2 of 4 ids in {ids} match no sample of mbpp-audit: '999', 'mbpp-audit/1000' "
        "(ids look like '1' or 'mbpp-audit/1')"
    ]
    config["contamination"]["held_out_ids"] = str(tmp_path / "none.txt")
    assert control_id_problems(config) == [f"contamination.held_out_ids: {tmp_path}/none.txt: id list does not exist"]


def test_an_empty_corpus_and_a_glob_that_matches_nothing_are_named(tmp_path):
    config = base_config(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("x")
    config["leakage"]["scans"] = {
        "empty": {"corpus": {"kind": "files", "root": str(tmp_path / "empty"), "glob": "**/*"}},
        "no-python": {"corpus": {"kind": "files", "root": str(tmp_path / "docs"), "glob": "**/*.py"}},
        "gone": {"corpus": {"kind": "files", "root": str(tmp_path / "gone")}},
        "dump": {"corpus": {"kind": "jsonl", "paths": [str(tmp_path / "docs/*.txt"), str(tmp_path / "dump/*.jsonl")]}},
    }
    assert corpus_problems(config) == [
        f"leakage.scans.empty.corpus: no file under {tmp_path}/empty matches '**/*'",
        f"leakage.scans.no-python.corpus: no file under {tmp_path}/docs matches '**/*.py'",
        f"leakage.scans.gone.corpus.root: {tmp_path}/gone is not a directory",
        f"leakage.scans.dump.corpus.paths: '{tmp_path}/dump/*.jsonl' matches no file",
    ]


def test_a_missing_corpus_a_script_builds_is_named_with_the_command_that_builds_it(tmp_path, monkeypatch):
    """config/experiments/python-corpus.yaml reads Parquet shards that a clone
    lacks until scripts/build_python_corpus.py builds them: planning names the
    glob and the command (with the scan's shards, one file a job), and the
    command builds what the scan reads. A counterfactual source's corpus is
    checked as a scan's is."""
    overlay = yaml.safe_load((REPO / "config" / "experiments" / "python-corpus.yaml").read_text())
    config = base_config(tmp_path)
    config["leakage"]["scans"] = {"python-corpus": overlay["leakage"]["scans"]["python-corpus"]}
    config["counterfactual"]["sources"] = {"sampled": {"corpus": {"kind": "files", "root": str(tmp_path / "gone")}}}
    monkeypatch.chdir(tmp_path)  # a checkout without resources/python-corpus
    problems = corpus_problems(config)
    command = ".venv/bin/python scripts/build_python_corpus.py --out resources/python-corpus --shards 16"
    assert problems == [
        f"leakage.scans.python-corpus.corpus.paths: 'resources/python-corpus/shard-*.parquet' matches no file; "
        f"build it with `{command}`",
        f"counterfactual.sources.sampled.corpus.root: {tmp_path}/gone is not a directory",
    ]
    assert command in (REPO / "config" / "experiments" / "python-corpus.yaml").read_text()  # the header's steps
    spec = importlib.util.spec_from_file_location("build_python_corpus", REPO / "scripts" / "build_python_corpus.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "a.py").write_text("def a():\n    return 1\n")
    trees = ["--site-packages", str(tmp_path / "site"), "--stdlib", str(tmp_path / "site")]
    assert build.main(shlex.split(command)[2:] + trees) == 0
    assert corpus_problems(config) == problems[1:]


def test_glob_has_match_walks_below_the_root_and_not_through_links(tmp_path):
    (tmp_path / "root/a/b").mkdir(parents=True)
    (tmp_path / "root/a/b/x.py").write_text("")
    (tmp_path / "out").mkdir()
    (tmp_path / "out/y.js").write_text("")
    (tmp_path / "root/link").symlink_to(tmp_path / "out")
    assert glob_has_match(tmp_path / "root", "**/*.py") and glob_has_match(tmp_path / "root", "a/*/x.py")
    assert not glob_has_match(tmp_path / "root", "*.py")  # x.py is two levels down
    assert not glob_has_match(tmp_path / "root", "**/*.js")  # only through the link
    assert glob_has_match(None, str(tmp_path / "root/a/b/x.py")) and not glob_has_match(
        None, str(tmp_path / "root/*.py")
    )


def test_a_benchmark_that_does_not_read_with_its_preset_is_named(tmp_path):
    config = base_config(tmp_path)
    wrong = tmp_path / "humaneval-like.jsonl"
    wrong.write_text(
        json.dumps(
            {
                "task_id": "T/0",
                "prompt": "def f():\n",
                "canonical_solution": "    return 1\n",
                "test": "",
                "entry_point": "f",
            }
        )
        + "\n"
    )
    config["benchmarks"]["wrong"] = {"format": "jsonl", "preset": "mbpp", "path": str(wrong)}
    config["benchmarks"]["gone"] = {"format": "jsonl", "preset": "mbpp", "path": str(tmp_path / "gone.jsonl")}
    problems = benchmark_problems(config)
    assert problems[1] == f"benchmarks.gone.path: {tmp_path}/gone.jsonl does not exist"
    assert problems[0].startswith(f"benchmarks.wrong: {wrong}") and "mbpp" in problems[0] and len(problems) == 2


def test_names_that_collide_are_named(tmp_path):
    config = base_config(tmp_path)
    config["benchmarks"].update({"mbpp-audit.raw": {}, "MBPP-audit": {}, "a/b": {}})
    config["leakage"]["scans"]["rq3"] = {}
    config["counterfactual"]["sources"] = {"mbpp-audit": {}}
    config["audit"]["models"] += [{"name": "model-a", "path": str(TINY)}]
    assert name_problems(config) == [
        "benchmarks: name 'a/b' is not a file name of letters, digits, '_', '.', '+', '-'",
        "benchmarks: 'mbpp-audit' and 'MBPP-audit' differ only in case (one file on a case-insensitive file system)",
        "audit.models: 'model-a' is named more than once",
        "benchmarks: 'mbpp-audit.raw' would share its files with the raw copy of a cleaned benchmark of 'mbpp-audit'",
        "counterfactual.sources.mbpp-audit: the name of a benchmark (its outputs would be the benchmark's); choose "
        "another name",
        "leakage.scans.rq3: 'rq3' is the folder of RQ3's runs (results/<run>/leakage/rq3/); choose another name",
    ]


def test_every_problem_is_listed_in_one_error(tmp_path):
    config = base_config(tmp_path)
    ids = tmp_path / "ids.txt"
    ids.write_text("12\n404\n")
    (tmp_path / "empty").mkdir()
    config["contamination"]["held_out_ids"] = str(ids)
    config["leakage"]["scans"]["my-corpus"]["corpus"]["root"] = str(tmp_path / "empty")
    config["audit"]["models"][0]["path"] = str(tmp_path / "typo")
    with pytest.raises(PlanError) as err:
        check_plan(config)
    assert [p.split(":")[0] for p in err.value.problems] == [
        "audit.models[0] (model-a).path",
        "contamination.held_out_ids",
        "leakage.scans.my-corpus.corpus",
    ]
    assert str(err.value).startswith("the config has 3 problems; nothing was run or deleted:\n  - audit.models[0]")
