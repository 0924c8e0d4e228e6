"""Audit your own model on your own benchmark: config/experiments/audit.yaml
run end to end in a fresh copy of the repository, on the shipped tiny models,
the 20-problem MBPP-format fixture the project wrote (resources/audit/) and a
corpus folder with one verbatim and one renamed copy planted in it; then what
a user meets before and after: planning-time refusals naming the sample, the
control ids as users write them, and a failed job's own error in the console.

The fixture's expected findings are the project's own planting (a regression
test of the whole path); the dataset-level test's numbers are checked
against what the scores give, and its null against its definition."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from repo_copy import REPO, fresh_copy

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.sample_ids import match_ids
from leaktrace.errors import InputError
from leaktrace.stages.audit_contamination import SCHEMA, audit_contamination

AUDIT_CONFIG = "config/experiments/audit.yaml"  # run once for all tests by the audit_run fixture (conftest.py)


def snakemake(workdir: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_scan_finds_both_planted_copies_and_nothing_else(audit_run):
    found = {
        (p["sample_id"], Path(p["location"]).name, p["unit"], p["clone_type"])
        for p in read_records(audit_run / "leakage/my-corpus/pairs.parquet")
        if p["duplicate"]
    }
    assert found == {
        ("mbpp-audit/17", "text_tools.py", "brackets_balanced", "type-1"),  # verbatim
        ("mbpp-audit/6", "numbers.py", "sum_of_digits", "type-2"),
    }  # every name renamed
    accounting = {r["reason"]: r["count"] for r in read_records(audit_run / "leakage/my-corpus/accounting.parquet")}
    assert accounting["renamed_channel_units"] >= 1  # the renamed copy came through the renaming channel


def test_the_audit_table_has_a_rate_per_model_and_detector(audit_run):
    rates = read_records(audit_run / "audit/leakage_rates.parquet")
    assert {(r["model"], r["detector"]) for r in rates} == {
        (m, d) for m in ("model-a", "model-b") for d in ("gray-box", "black-box")
    }
    # the 8 control ids are the null, the other 12 the audited samples
    assert all(r["n_samples"] == 12 and r["rate_low"] <= r["leakage_rate"] <= r["rate_high"] for r in rates)
    assert all((r["null"], r["null_n"]) == ("control set", 8) and 0 <= r["p_value"] <= 1 for r in rates)


def test_each_model_gets_a_dataset_level_p_value_with_its_null(audit_run):
    rows = {r["model"]: r for r in read_records(audit_run / "audit/dataset_inference.parquet")}
    assert set(rows) == {"model-a", "model-b"}
    for row in rows.values():
        # the control ids file names 8 problems, one of them as mbpp-audit/12, the rest as the release writes them
        assert (row["benchmark"], row["n_suspect"], row["n_control"], row["n_control_unscored"]) == (
            "mbpp-audit",
            12,
            8,
            0,
        )
        assert 0 <= row["p_value"] <= 1 and row["null_seeds"] == 20
        assert (
            row["null_rate"] == row["null_rejected"] / 20
            and row["null_rate_low"] <= row["null_rate"] <= row["null_rate_high"]
        )
    # Ref's reference is named where Ref is a feature, and is not computed against itself
    assert (
        "ref" in rows["model-a"]["features"].split(",")
        and rows["model-a"]["ref_model"] == "resources/models/leaktrace-tiny-ref"
    )
    assert "ref" not in rows["model-b"]["features"].split(",") and rows["model-b"]["ref_model"] is None
    report = (audit_run / "audit/dataset_inference.md").read_text()
    assert "random halves of the control set" in report and "resources/models/leaktrace-tiny-ref" in report


VERDICTS = [
    r"suspects score higher than controls \(p = [0-9.e+-]+\): exposure only if the controls were drawn like the "
    r"suspects, which no run can establish",
    r"the control set differs from the suspects in a way models see \(negative control [\w.-]+: .+ p = [0-9.e+-]+\): "
    r"not calibrated",
    r"no evidence; this test would have detected (AUC|flag rate) ≥ [0-9.]+ with 80% power",
    r"inconclusive: too few samples to detect (AUC|flag rate) < [0-9.]+",
    r"control set differs from the suspects \(blind AUC [0-9.]+ \[[0-9.]+, [0-9.]+\], p = [0-9.e+-]+\): not calibrated",
    # the reference contrast under the gate (its assumption failed in the shifted-control experiment)
    r"control set differs from the suspects \(blind AUC [0-9.]+ \[[0-9.]+, [0-9.]+\], p = [0-9.e+-]+\): not calibrated"
    r"; the contrast assumes the shift moves the target's and the reference's scores alike, which the shifted-control "
    r"experiment found false",
]


def test_every_audit_verdict_has_its_power_and_the_blind_baseline_gates_them(audit_run):
    """The verdict table per model × benchmark, its wording, the gate
    and the control ids each test used; the blind baseline ran once."""
    (blind,) = read_records(audit_run / "audit/blind_baseline.parquet")
    assert (blind["benchmark"], blind["n_suspect"], blind["n_control"], blind["n_labellings"]) == (
        "mbpp-audit",
        12,
        8,
        1000,
    )
    assert blind["ci_low"] <= blind["auc"] <= blind["ci_high"] and 1 / 1001 <= blind["p_value"] <= 1
    assert blind["blind_rejected"] == (blind["p_value"] <= 0.05) and "controls_exchangeable" not in blind
    rows = read_records(audit_run / "audit/verdicts.parquet")
    assert {
        "blind_auc",
        "blind_ci_low",
        "blind_ci_high",
        "blind_p",
        "blind_rejected",
        "evidence",
        "detectable_effect",
        "verdict",
        "n_controls_used",
        "n_controls_dropped",
        "controls_dropped",
    } <= set(rows[0])
    tests = {(r["model"], r["test"]) for r in rows}
    for model in ("model-a", "model-b"):
        assert {(model, t) for t in ("blind_baseline", "dataset_inference", "conformal_flags", "leakage_rate")} <= tests
    # the contrast against the declared reference (model-b), for model-a only, its assumption in its row
    (contrast,) = [r for r in rows if r["test"] == "reference_contrast"]
    assert contrast["model"] == "model-a" and "moves the target's and the reference's scores alike" in contrast["note"]
    # every per-sample detector in model-a's scores gets conformal flags, SrDetection's included
    methods = {s["method"] for s in read_records(audit_run / "score/mbpp-audit/audit-model-a/scores.parquet")}
    assert {r["detector"] for r in rows if r["model"] == "model-a" and r["test"] == "conformal_flags"} == methods - {
        "ref_oracle"
    }
    assert {"loss", "zlib", "srdetection_graybox", "srdetection_blackbox"} <= methods
    shift = (
        f"control set differs from the suspects (blind AUC {blind['auc']:.2f} [{blind['ci_low']:.2f}, "
        f"{blind['ci_high']:.2f}], p = {blind['p_value']:.2g}): not calibrated"
    )
    for r in rows:
        assert r["blind_auc"] == blind["auc"] and r["blind_p"] == blind["p_value"]
        assert r["n_controls_used"] + (r["n_controls_dropped"] or 0) == 8 and (r["n_controls_dropped"] == 0) == (
            not r["controls_dropped"]
        )
        if r["test"] == "blind_baseline":
            continue
        assert any(re.fullmatch(v, r["verdict"]) for v in VERDICTS), r["verdict"]
        if r["assumes_exchangeable"] and blind["blind_rejected"]:
            assert r["verdict"] == shift and not r["counted_as_evidence"]
    # 8 controls at alpha = 0.05: floor(0.05 * 9) = 0, so no conformal flag is possible and the verdict says so
    flags = [r for r in rows if r["test"] == "conformal_flags"]
    assert all(r["conformal_rank"] == 0 and r["statistic"] == 0 and r["detectable_effect"] is None for r in flags)
    # the other tables carry the gate too
    for r in read_records(audit_run / "audit/dataset_inference.parquet") + read_records(
        audit_run / "audit/leakage_rates.parquet"
    ):
        assert r["blind_rejected"] == blind["blind_rejected"] and any(re.fullmatch(v, r["verdict"]) for v in VERDICTS)
    report = (audit_run / "audit/verdicts.md").read_text()
    assert "P(FPR > α)" in report and "PAC" in report
    for text in [report, (REPO / "docs/guides/audit-your-model.md").read_text()]:
        assert not re.search(r"not trained|did not see|neither model saw", text)


def test_functional_memorisation_compares_the_two_models(audit_run):
    generations = read_records(audit_run / "counterfactual/mbpp-audit-fm/generations.parquet")
    assert {g["model"] for g in generations} == {"target", "reference"} and len(generations) == 40
    table1 = read_records(audit_run / "aggregate/mbpp-audit-fm/functional/table1.parquet")
    assert {r["metric"] for r in table1} >= {"exact_match", "bleu", "codebleu", "tsed"}
    assert all(
        r["n_samples"] == 20 and 0 < r["n"] <= 20 for r in table1
    )  # complete cases: n of the 20 with the metric defined
    assert (audit_run / "aggregate/mbpp-audit-fm/functional/report.md").exists()


# --- planning: what `snakemake -n` says before any job runs ---


def overlay(tmp_path: Path, extra: dict) -> Path:
    """The shipped audit config with ``extra`` laid over it (absolute paths, run from the repository)."""
    config = yaml.safe_load((REPO / AUDIT_CONFIG).read_text())
    for key, value in extra.items():
        config[key] = value if not isinstance(value, dict) else {**config.get(key, {}), **value}
    path = tmp_path / "audit.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_shipped_audit_plans_the_order_test_for_each_model_and_the_verdict_reads_its_table(tmp_path):
    result = snakemake(REPO, "-n", "--configfile", AUDIT_CONFIG, "--config", "run=plan-order-test", timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = re.findall(r"output: (results/plan-order-test/audit/exchangeability/\S+)", result.stdout)
    assert sorted(rows) == [
        f"results/plan-order-test/audit/exchangeability/mbpp-audit/audit-{m}.parquet" for m in ("model-a", "model-b")
    ]
    verdict = re.search(r"rule verdict:\n    input: (.*)", result.stdout).group(1).split(", ")
    assert {
        "results/plan-order-test/audit/exchangeability.parquet",
        "results/plan-order-test/audit/exchangeability.md",
    } <= set(verdict)
    off = overlay(tmp_path, {"audit": {"exchangeability": {"enabled": False}}})
    result = snakemake(REPO, "-n", "--configfile", str(off), "--config", "run=plan-order-test", timeout=300)
    assert result.returncode == 0 and "audit_exchangeability" not in result.stdout


def test_a_release_named_in_the_audit_plans_the_watermark_test_per_model_and_needs_its_private_part(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    release = tmp_path / "release"
    (release / "private").mkdir(parents=True)
    (release / "commitment.json").write_text("{}")
    config = overlay(tmp_path, {"audit": {"releases": {"mbpp-audit": str(release)}}})
    result = snakemake(REPO, "-n", "--configfile", str(config), "--config", "run=plan-release", timeout=300)
    assert result.returncode != 0
    assert (
        f"audit.releases.mbpp-audit: {release} lacks private/secret.key, private/forms.parquet: the watermark's "
        "test needs the directory `leaktrace publish` wrote, with its private/ part"
    ) in result.stdout + result.stderr
    (release / "private" / "secret.key").write_text("00")
    pq.write_table(pa.table({"text": ["x"]}), release / "private" / "forms.parquet")  # the job's size reads it
    result = snakemake(REPO, "-n", "--configfile", str(config), "--config", "run=plan-release", timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    tested = re.findall(r"output: results/plan-release/audit/watermark/mbpp-audit/(\S+)/tokens.parquet", result.stdout)
    assert sorted(tested) == ["audit-model-a", "audit-model-b"]
    verdict = re.search(r"rule verdict:\n    input: (.*)", result.stdout).group(1).split(", ")
    assert "results/plan-release/audit/watermark.parquet" in verdict


def test_a_benchmark_that_cannot_run_is_refused_at_planning_naming_the_sample(tmp_path):
    issues = tmp_path / "issues.jsonl"
    issues.write_text('{"instance_id": "shop-1", "problem_statement": "Carts lose items."}\n')
    config = overlay(
        tmp_path,
        {
            "benchmarks": {
                "humaneval": None,
                "mbpp-audit": None,
                "issues": {"format": "jsonl", "preset": "swe-bench", "path": str(issues)},
            },
            "audit": {"benchmarks": ["issues"]},
            "counterfactual": {"sources": {}},
            "leakage": {"scans": {"stdlib": None, "training-mix": None}, "rq3": {"enabled": False}},
        },
    )
    result = snakemake(REPO, "-n", "--configfile", str(config), timeout=300)
    assert result.returncode != 0
    assert (
        "benchmarks.issues: the audit runs each sample's tests, and no sample can run: issues/shop-1: it is "
        "problem text only, with no code"
    ) in result.stdout + result.stderr


def test_samples_that_cannot_run_are_named_at_planning(tmp_path):
    bench = tmp_path / "mixed.jsonl"
    lines = (REPO / "resources/audit/mbpp-audit.jsonl").read_text().splitlines()
    bench.write_text(
        "\n".join(lines[:4]) + "\n" + '{"task_id": 99, "text": "t", "code": "def a():\\n    return 1\\n\\n'
        'def b():\\n    return 2\\n", "test_list": ["assert 1 == 1"], "test_setup_code": "", '
        '"challenge_test_list": []}\n'
    )
    config = overlay(
        tmp_path,
        {
            "benchmarks": {"humaneval": None, "mbpp-audit": {"format": "jsonl", "preset": "mbpp", "path": str(bench)}},
            "contamination": {"held_out_ids": None},
        },
    )  # the shipped ids name samples left out here
    result = snakemake(REPO, "-n", "--configfile", str(config), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        "benchmarks.mbpp-audit: 1 of 5 samples cannot run and are left out of the audit and functional "
        "memorisation (mbpp-audit-fm); first: mbpp-audit/99: it has no entry point"
    ) in result.stderr


def test_refs_reference_is_never_silently_the_shipped_one(tmp_path):
    """A model of the user's (not one of the pipeline's own, under resources/models/) with Ref's reference unset."""
    models = yaml.safe_load((REPO / AUDIT_CONFIG).read_text())["audit"]["models"]
    mine = tmp_path / "my-coder"  # a model directory of the user's (the planning checks refuse a missing one)
    mine.mkdir()
    (mine / "config.json").write_text("{}")
    config = overlay(
        tmp_path,
        {
            "score": {"methods": {"ref": {"model": None, "oracle": False}}},
            "audit": {"models": [*models, {"name": "mine", "path": str(mine)}]},
        },
    )
    result = snakemake(REPO, "-n", "--configfile", str(config), timeout=300)
    assert result.returncode != 0
    assert (
        "score.methods.ref: audit model 'mine' would be compared with reference_model.path "
        "(resources/models/leaktrace-tiny-ref), a reference trained for the base model"
    ) in result.stdout + result.stderr


def test_the_contrasts_reference_must_be_an_audited_model(tmp_path):
    config = overlay(tmp_path, {"audit": {"reference": {"model": "model-c", "method": "loss"}}})
    result = snakemake(REPO, "-n", "--configfile", str(config), timeout=300)
    assert result.returncode != 0
    assert (
        "audit.reference.model: 'model-c' is not an audit.models name (configured: model-a, model-b)"
        in result.stdout + result.stderr
    )


def test_negative_controls_and_training_data_must_name_what_the_config_has(tmp_path):
    config = overlay(tmp_path, {"audit": {"negative_controls": ["model-z"], "training_data": ["no-such-scan"]}})
    result = snakemake(REPO, "-n", "--configfile", str(config), timeout=300)
    assert result.returncode != 0
    assert (
        "audit.negative_controls: 'model-z' not audit.models names (configured: model-a, model-b)"
        in result.stdout + result.stderr
    )
    config = overlay(tmp_path, {"audit": {"training_data": ["no-such-scan"]}})
    result = snakemake(REPO, "-n", "--configfile", str(config), timeout=300)
    assert result.returncode != 0 and "audit.training_data: 'no-such-scan' not leakage.scans names" in (
        result.stdout + result.stderr
    )


def test_functional_memorisation_on_a_non_testbed_benchmark_needs_two_models(tmp_path):
    config = overlay(
        tmp_path, {"counterfactual": {"sources": {"fm": {"benchmark": "mbpp-audit", "target": "model-a"}}}}
    )
    result = snakemake(REPO, "-n", "--configfile", str(config), timeout=300)
    assert result.returncode != 0
    assert (
        "counterfactual.sources.fm: benchmark 'mbpp-audit' is not a testbed benchmark, so there is no trained "
        "target; set counterfactual.reference"
    ) in result.stdout + result.stderr


def test_an_empty_benchmarks_mapping_is_one_line_not_the_schema(tmp_path):
    config = overlay(tmp_path, {"benchmarks": {"humaneval": None, "mbpp-audit": None}})
    result = snakemake(REPO, "-n", "--configfile", str(config), timeout=300)
    out = result.stdout + result.stderr
    assert result.returncode != 0 and "config benchmarks: is empty; it needs at least 1 entry" in out
    assert "Failed validating" not in out and len(out) < 3000


def test_a_failed_jobs_own_error_is_in_the_console(tmp_path):
    """A scan of a benchmark with a malformed record past the few that planning
    reads: its ingest fails, and the console ends with the job's error line."""
    bad = tmp_path / "bad.jsonl"
    good = [{"task_id": i, "text": "t", "code": "x = 1\n", "test_list": [], "test_setup_code": ""} for i in (1, 2, 3)]
    bad.write_text("".join(json.dumps(r) + "\n" for r in good) + "{oops\n")
    config = tmp_path / "failing.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "run": "failing",
                "benchmarks": {"humaneval": None, "bad": {"format": "jsonl", "preset": "mbpp", "path": str(bad)}},
                "audit": {"benchmarks": []},
                "leakage": {
                    "scans": {
                        "stdlib": None,
                        "training-mix": None,
                        "s": {
                            "benchmark": "bad",
                            "corpus": {"kind": "files", "root": str(REPO / "resources/audit/corpus")},
                        },
                    },
                    "rq3": {"enabled": False},
                },
            }
        )
    )
    workdir = fresh_copy(tmp_path / "work")
    result = snakemake(workdir, "--configfile", str(config), timeout=300)
    assert result.returncode != 0
    tail = result.stderr[result.stderr.index("leaktrace: 1 job failed") :]
    assert "ingest_benchmark" in tail and f"bad input: {bad}, record line 4: malformed JSON" in tail


# --- control ids as users write them; the test on hand-made scores ---


def test_control_ids_are_matched_as_the_release_or_the_tables_write_them(tmp_path):
    samples = {"mbpp/11", "mbpp/12", "humaneval/HumanEval/0"}
    assert match_ids(["11", "mbpp/12", "HumanEval/0"], samples, "ids.txt") == samples
    with pytest.raises(InputError, match=r"ids\.txt: id '13' matches no sample \(ids look like"):
        match_ids(["11", "13"], samples, "ids.txt")


def scores_table(path: Path, shift: float, n: int = 40, controls: range = range(24, 40)) -> Path:
    """Two detectors for samples b/0..b/{n-1}: the suspect ones shifted by ``shift``, the controls not."""
    rows = [
        {
            "sample_id": f"b/{i}",
            "method": method,
            "score": (i * 7919 % 97) / 97 + (0 if i in controls else shift) + k,
            "decision": None,
            "threshold": None,
        }
        for i in range(n)
        for k, method in enumerate(("loss", "zlib"))
    ]
    import pyarrow as pa

    schema = pa.schema(
        [
            ("sample_id", pa.string()),
            ("method", pa.string()),
            ("score", pa.float64()),
            ("decision", pa.bool_()),
            ("threshold", pa.float64()),
        ]
    )
    write_table(rows, schema, path)
    return path


def test_the_audit_contamination_settings_name_a_missing_or_mistyped_key(tmp_path):
    from leaktrace.config_slice import SliceError

    settings = {
        "dataset_inference": {"n_splits": 7, "exclude_methods": [], "curve_sizes": [8], "curve_draws": 1},
        "calibration": {"seeds": 10},
        "alpha": 0.05,
        "ref_model": None,
        "verdicts": {"pac_delta": 0.05, "inconclusive_auc": 0.7},
        "reference": {"model": None, "method": "loss"},
        "negative_controls": [],
    }
    with pytest.raises(SliceError, match=r"config audit\.inconclusive_rate: missing"):
        audit_contamination({}, {}, tmp_path / "ids.txt", settings, 1, tmp_path / "di.parquet", tmp_path / "di.md")
    settings["verdicts"]["inconclusive_rate"] = 0.5
    settings["calibration"]["seeds"] = "10"
    with pytest.raises(SliceError, match=r"config contamination\.calibration\.seeds: expected an integer, got '10'"):
        audit_contamination({}, {}, tmp_path / "ids.txt", settings, 1, tmp_path / "di.parquet", tmp_path / "di.md")


def test_the_dataset_level_test_rejects_a_shift_and_not_its_absence(tmp_path):
    bench = tmp_path / "b.parquet"
    import pyarrow as pa

    write_table([{"sample_id": f"b/{i}"} for i in range(40)], pa.schema([("sample_id", pa.string())]), bench)
    ids = tmp_path / "ids.txt"
    ids.write_text("# controls\n" + "\n".join(str(i) for i in range(24, 40)) + "\n")
    settings = {
        "dataset_inference": {"n_splits": 7, "exclude_methods": [], "curve_sizes": [8], "curve_draws": 1},
        "calibration": {"seeds": 10},
        "alpha": 0.05,
        "ref_model": None,
        "verdicts": {"pac_delta": 0.05, "inconclusive_auc": 0.7, "inconclusive_rate": 0.5},
        "reference": {"model": None, "method": "loss"},
        "negative_controls": [],
    }
    audit_contamination(
        {
            ("seen", "b"): scores_table(tmp_path / "s.parquet", 2.0),
            ("unseen", "b"): scores_table(tmp_path / "u.parquet", 0.0),
        },
        {"b": bench},
        ids,
        settings,
        1,
        tmp_path / "di.parquet",
        tmp_path / "di.md",
    )
    rows = {r["model"]: r for r in read_records(tmp_path / "di.parquet")}
    assert read_records(tmp_path / "di.parquet") and SCHEMA.names == list(rows["seen"])
    assert (rows["seen"]["n_suspect"], rows["seen"]["n_control"]) == (24, 16)
    assert rows["seen"]["p_value"] < 0.01 < rows["unseen"]["p_value"]
    # the null is the same for both (the controls' scores are the same): halves of 16 controls, 10 seeds
    assert rows["seen"]["null_seeds"] == 10 and rows["seen"]["null_rejected"] == rows["unseen"]["null_rejected"]
    ids.write_text("24\n99\n")
    with pytest.raises(InputError, match="id '99' matches no sample"):
        audit_contamination(
            {("seen", "b"): tmp_path / "s.parquet"},
            {"b": bench},
            ids,
            settings,
            1,
            tmp_path / "x.parquet",
            tmp_path / "x.md",
        )
