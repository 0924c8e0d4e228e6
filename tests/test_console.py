"""The person-facing commands (leaktrace/console.py): ``leaktrace audit`` and
``leaktrace scan`` from flags to the config overlay they write, planning
errors before Snakemake starts (exit 2, the message naming the key), the
printed answers from verdict.json and the exit codes of the gates. The
pipeline itself is replaced by a stand-in that writes a verdict.json (the
run through Snakemake is the command's shipped-fixture run, documented in
docs/guides/audit-your-model.md); an audit never planning a testbed is
checked on the merged config (leaktrace/run_kind.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from leaktrace import console, snakemake_run
from leaktrace.cli import main, parser
from leaktrace.data.humaneval import shipped_humaneval_path
from leaktrace.overlay import AUDIT_METHODS_OFF, DEFAULT_SCANS_OFF, SRDETECTION
from leaktrace.preflight import check_overlay
from leaktrace.run_kind import AUDIT, benchmarks_on_testbed, run_kind

REPO = Path(__file__).resolve().parents[1]
FIXTURES = [
    "--benchmark",
    "resources/audit/mbpp-audit.jsonl",
    "--preset",
    "mbpp",
    "--controls",
    "resources/audit/control-ids.txt",
]
TWO_MODELS = [
    "--model",
    "model-a=resources/models/leaktrace-tiny",
    "--model",
    "model-b=resources/models/leaktrace-tiny-ref",
]


def request(*argv: str):
    args = parser().parse_args(["audit", *argv])
    return console.audit_request(args, Path.cwd())


@pytest.fixture
def in_repo(monkeypatch, tmp_path):
    """Run from the root of a repository whose results/ is a temporary folder
    (its Snakefile, config and resources are the project's); returns results/."""
    for name in ("Snakefile", "config", "resources"):
        (tmp_path / name).symlink_to(REPO / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "results"


def test_the_flags_make_an_audit_overlay_that_trains_nothing(in_repo):
    overlay = request(*TWO_MODELS, *FIXTURES, "--corpus", "resources/audit/corpus", "--limit", "20").overlay()
    assert overlay["run"] == "audit-mbpp-audit"
    assert overlay["benchmarks"] == {
        "humaneval": None,
        "mbpp-audit": {
            "format": None,
            "path": "resources/audit/mbpp-audit.jsonl",
            "preset": "mbpp",
            "testbed": False,
            "limit": 20,
        },
    }
    assert overlay["audit"]["models"] == [
        {"name": "model-a", "path": "resources/models/leaktrace-tiny"},
        {"name": "model-b", "path": "resources/models/leaktrace-tiny-ref"},
    ]
    assert overlay["leakage"]["scans"]["corpus"] == {
        "benchmark": "mbpp-audit",
        "corpus": {"kind": "files", "root": "resources/audit/corpus", "glob": "**/*.py"},
    }
    config = check_overlay(overlay, Path.cwd(), fetching=False)
    assert run_kind(config) == AUDIT and benchmarks_on_testbed(config) == []


def test_a_hub_benchmark_and_corpus_are_read_as_hub_datasets(in_repo):
    overlay = request(
        *TWO_MODELS[:2], "--benchmark", "openai/openai_humaneval", "--preset", "humaneval", "--controls", "c.txt",
        "--corpus", "bigcode/the-stack-smol",
    ).overlay()  # fmt: skip
    assert overlay["benchmarks"]["openai_humaneval"] == {
        "format": "huggingface",
        "dataset": "openai/openai_humaneval",
        "split": "test",
        "preset": "humaneval",
        "testbed": False,
    }
    assert overlay["leakage"]["scans"]["corpus"]["corpus"] == {
        "kind": "huggingface",
        "dataset": "bigcode/the-stack-smol",
    }


def test_a_humaneval_layout_audit_from_flags_plans_no_testbed(in_repo, tmp_path):
    controls = tmp_path / "controls.txt"
    controls.write_text("".join(f"HumanEval/{i}\n" for i in range(10, 30)))
    overlay = request(
        "--model", "mine=resources/models/leaktrace-tiny-ref", "--benchmark", str(shipped_humaneval_path()),
        "--preset", "humaneval", "--limit", "30", "--controls", str(controls),
    ).overlay()  # fmt: skip
    assert overlay["benchmarks"]["humaneval"] is None and overlay["benchmarks"]["HumanEval"]["testbed"] is False
    config = check_overlay(overlay, Path.cwd(), fetching=False)
    assert config["benchmarks"]["HumanEval"]["format"] == "humaneval" and benchmarks_on_testbed(config) == []
    # one model: no reference contrast, no Ref detector (each needs a second model)
    assert config["audit"]["reference"]["model"] is None and "ref" not in config["score"]["methods"]


def test_the_flags_turn_off_what_the_template_turns_off():
    template = yaml.safe_load((REPO / "config/experiments/audit.yaml").read_text())
    methods = template["score"]["methods"]
    assert {k for k, v in methods.items() if v is None} == set(AUDIT_METHODS_OFF) - {"ref"}
    assert {k: methods[k] for k in SRDETECTION} == SRDETECTION
    assert {k for k, v in template["leakage"]["scans"].items() if v is None} == set(DEFAULT_SCANS_OFF)
    assert template["variants"]["test_cases"] == {"untransformed": 0}
    assert template["leakage"]["rq3"] == {"enabled": False}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "mine"], "--model expects NAME=PATH_OR_HUB_ID, got 'mine'"),
        (["--model", "a=resources/models/leaktrace-tiny", "--negative-control", "b"], "--negative-control b: not a --model name (a)"),
    ],
)  # fmt: skip
def test_a_malformed_flag_exits_2_with_its_message(in_repo, capsys, argv, message):
    assert main(["audit", *argv, *FIXTURES]) == console.CONFIG_ERROR
    assert message in capsys.readouterr().err


def test_a_mistyped_model_path_stops_at_planning_naming_both_readings(in_repo, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ran = []
    monkeypatch.setattr(snakemake_run, "run_pipeline", lambda settings: ran.append(settings) or True)
    status = main(["audit", "--model", "mine=models/leaktrace-tiny-ref", *FIXTURES])
    err = capsys.readouterr().err
    assert status == console.CONFIG_ERROR and ran == []
    assert "audit.models[0] (mine).path: models/leaktrace-tiny-ref is neither a local directory" in err
    assert f"({in_repo.parent}/models/leaktrace-tiny-ref does not exist) nor a reachable hub id: HF_HUB_OFFLINE" in err
    assert not (in_repo / "audit-mbpp-audit").exists()


def test_a_control_id_that_names_no_sample_exits_2_before_any_job(in_repo, capsys, monkeypatch, tmp_path):
    controls = tmp_path / "controls.txt"
    controls.write_text("11\n9999\n")
    monkeypatch.setattr(snakemake_run, "run_pipeline", lambda settings: pytest.fail("ran"))
    status = main(["audit", *TWO_MODELS, *FIXTURES[:4], "--controls", str(controls)])
    assert status == console.CONFIG_ERROR
    assert "contamination.held_out_ids: 1 of 2 ids" in capsys.readouterr().err


def verdict(tier: str, copies: int) -> dict:
    test = {"name": "dataset inference", "p_value": 0.0031}
    return {
        "answers": [{"model": "model-a", "benchmark": "mbpp-audit", "tier": tier, "carried_by": "dataset inference", "tests": [test]}],
        "scans": [
            {
                "scan": "corpus",
                "benchmark": "mbpp-audit",
                "report": "leakage/corpus/report.md",
                "copies": {"type1": copies, "type2": 0, "type3": 0, "input_leaks": 0},
                "total": copies,
            }
        ],
    }  # fmt: skip


def pipeline_writing(record: dict | None, calls: list):
    """A stand-in for the pipeline: records its settings, writes ``record`` as verdict.json (None: it fails)."""

    def run(settings):
        calls.append(settings)
        if record is None:
            return False
        (settings.configfile.parent / "verdict.json").write_text(json.dumps(record))
        return True

    return run


@pytest.mark.parametrize(
    ("tier", "copies", "flags", "status"),
    [
        ("observational finding", 2, [], console.COMPLETED),
        ("inconclusive", 0, ["--fail-on-evidence"], console.COMPLETED),
        ("observational finding", 0, ["--fail-on-evidence"], console.GATE),
        ("design evidence", 0, ["--fail-on-evidence"], console.GATE),
        ("no evidence", 2, ["--fail-on-copies"], console.GATE),
        ("no evidence", 0, ["--fail-on-copies"], console.COMPLETED),
    ],
)
def test_exit_status_is_0_whatever_the_audit_found_unless_a_gate_is_asked(
    in_repo, capsys, monkeypatch, tier, copies, flags, status
):
    calls = []
    monkeypatch.setattr(snakemake_run, "run_pipeline", pipeline_writing(verdict(tier, copies), calls))
    assert main(["audit", *TWO_MODELS, *FIXTURES, "--run", "t", "--cores", "2", *flags]) == status
    assert calls[0].cores == 2 and not calls[0].dry_run
    out = capsys.readouterr().out.splitlines()
    page = "results/t/verdict.md"
    assert out[0] == f"model-a × mbpp-audit: {tier} (dataset inference, p = 0.0031); {page}"
    assert out[1].startswith(
        f"scan corpus × mbpp-audit: {copies} copies (type1 {copies}, type2 0, type3 0, input_leaks 0)"
    )


def test_the_written_config_reproduces_the_run_and_json_prints_verdict_json(in_repo, capsys, monkeypatch):
    calls = []
    record = verdict("inconclusive", 0)
    monkeypatch.setattr(snakemake_run, "run_pipeline", pipeline_writing(record, calls))
    assert main(["audit", *TWO_MODELS, *FIXTURES, "--run", "t", "--json"]) == console.COMPLETED
    assert json.loads(capsys.readouterr().out) == record
    written = calls[0].configfile
    assert written == in_repo / "t" / "config.yaml"
    text = written.read_text()
    assert text.startswith("# Written by: leaktrace audit --model model-a=resources/models/leaktrace-tiny")
    assert yaml.safe_load(text) == request(*TWO_MODELS, *FIXTURES, "--run", "t").overlay()


def test_a_failed_run_exits_1_and_a_dry_run_prints_no_answers(in_repo, capsys, monkeypatch):
    calls = []
    monkeypatch.setattr(snakemake_run, "run_pipeline", pipeline_writing(None, calls))
    assert main(["audit", *TWO_MODELS, *FIXTURES]) == console.FAILED
    assert "the run failed" in capsys.readouterr().err
    monkeypatch.setattr(snakemake_run, "run_pipeline", lambda settings: calls.append(settings) or True)
    assert main(["audit", *TWO_MODELS, *FIXTURES, "--dry-run"]) == console.COMPLETED
    assert calls[-1].dry_run and capsys.readouterr().out.startswith("Dry run: nothing ran.")


def test_scan_plans_no_model_and_gates_on_copies(in_repo, capsys, monkeypatch):
    calls = []
    monkeypatch.setattr(
        snakemake_run, "run_pipeline", pipeline_writing({"answers": [], "scans": verdict("", 1)["scans"]}, calls)
    )
    argv = ["scan", *FIXTURES[:4], "--corpus", "resources/audit/corpus", "--fail-on-copies"]
    assert main(argv) == console.GATE
    overlay = yaml.safe_load(calls[0].configfile.read_text())
    assert overlay["audit"]["models"] == [] and overlay["run"] == "scan-mbpp-audit"
    config = check_overlay(overlay, Path.cwd(), fetching=False)
    assert benchmarks_on_testbed(config) == [] and run_kind(config) == "experiment"
    assert capsys.readouterr().out.startswith("scan corpus × mbpp-audit: 1 copies")


def test_help_lists_the_person_facing_commands_first_and_the_stages_as_internal(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert re.search(r"COMMAND\n\s+audit\s+audit models.*\n\s+scan\s+scan a corpus", out)
    internal = out.index("Internal stage commands")
    assert "ingest-benchmark" not in out[:internal] and "audit-tables" in out[internal:]


def test_a_humaneval_layout_audit_dry_run_through_snakemake_plans_no_training(in_repo, capfd, tmp_path):
    """The whole path through Snakemake's API: the plan it prints has the audit's rules and no training rule."""
    for name in ("rules", "envs", "report"):
        (tmp_path / name).symlink_to(REPO / name)
    controls = tmp_path / "controls.txt"
    controls.write_text("".join(f"HumanEval/{i}\n" for i in range(10, 30)))
    argv = [
        "audit",
        "--model",
        "mine=resources/models/leaktrace-tiny-ref",
        "--benchmark",
        str(shipped_humaneval_path()),
    ]
    argv += ["--preset", "humaneval", "--limit", "30", "--controls", "controls.txt", "--dry-run"]
    assert main(argv) == console.COMPLETED
    out = capfd.readouterr().out
    stats = out[out.index("Job stats:") : out.index("total")]
    planned = {line.split()[0] for line in stats.splitlines()[3:]}
    assert {"audit", "token_stats", "detector_scores", "verdict"} <= planned
    training = {"training_mix", "train_lora", "sham_mix", "twin_split", "train_control", "twin", "pretrain_base_model"}
    assert not planned & training
    assert out.rstrip().endswith("The config it planned: results/audit-HumanEval/config.yaml")


def test_a_one_model_audit_from_the_template_needs_only_its_marked_deletions(in_repo):
    """The template's "delete this block if ..." for one model: the reference contrast and functional
    memorisation deleted, Ref nulled, one model left; it plans without a testbed, as the flags do."""
    template = yaml.safe_load((REPO / "config/experiments/audit.yaml").read_text())
    del template["audit"]["reference"], template["counterfactual"]
    template["score"]["methods"]["ref"] = None
    template["audit"]["models"] = template["audit"]["models"][1:]
    config = check_overlay(template, Path.cwd(), fetching=False)
    assert (
        run_kind(config) == AUDIT and benchmarks_on_testbed(config) == [] and config["counterfactual"]["sources"] == {}
    )
    assert config["audit"]["reference"]["model"] is None and "ref" not in config["score"]["methods"]


def test_a_benchmark_file_named_like_the_default_replaces_its_entry_whole(in_repo, tmp_path):
    (tmp_path / "humaneval.jsonl").write_text((REPO / "resources/audit/mbpp-audit.jsonl").read_text())
    (tmp_path / "controls.txt").write_text("11\n12\n13\n")
    overlay = request(
        *TWO_MODELS, "--benchmark", "humaneval.jsonl", "--preset", "mbpp", "--controls", "controls.txt"
    ).overlay()
    config = check_overlay(overlay, Path.cwd(), fetching=False)  # not the default's format humaneval with preset mbpp
    assert config["benchmarks"]["humaneval"]["format"] == "jsonl" and benchmarks_on_testbed(config) == []
