"""The pipeline as a researcher meets it: config validation, the DAG of the
default config, and an end-to-end run of the micro config, after which a
scoring-only config change re-runs only scoring and aggregation."""

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
BASE_MODEL = REPO / "resources" / "models" / "leaktrace-tiny"


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir), "--cores", "2", *args],
        capture_output=True,
        text=True,
        timeout=900,
    )


def write_config(workdir: Path, overrides: dict, base: str = "micro.yaml") -> Path:
    config = yaml.safe_load((REPO / "config" / base).read_text())
    config["base_model"]["path"] = str(BASE_MODEL)
    _merge(config, overrides)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _merge(into: dict, update: dict) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def test_unknown_key_stops_the_run_naming_it(tmp_path):
    config = write_config(tmp_path, {"score": {"methods": {"min_k": {"ratio": [0.2]}}}})
    result = snakemake(tmp_path, "-n", "--configfile", str(config))
    assert result.returncode != 0
    assert "'ratio' was unexpected" in result.stdout + result.stderr


def test_wrong_type_stops_the_run_naming_it(tmp_path):
    config = write_config(tmp_path, {"train": {"epochs": "five"}})
    result = snakemake(tmp_path, "-n", "--configfile", str(config))
    assert result.returncode != 0
    assert "'five' is not of type 'array'" in result.stdout + result.stderr


def test_default_config_dry_run_plans_every_stage(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["base_model"]["path"] = str(BASE_MODEL)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, "-n", "--configfile", str(tmp_path / "config.yaml"))
    assert result.returncode == 0, result.stderr
    for rule in ("ingest_benchmark", "variants", "split_samples", "train_lora", "token_stats", "detector_scores", "counterfactual", "aggregate"):
        assert rule in result.stdout
    assert "pretrain_base_model" not in result.stdout  # the shipped model is never retrained by accident


@pytest.fixture(scope="module")
def micro_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("micro")
    config = write_config(workdir, {})
    result = snakemake(workdir, "--configfile", str(config))
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir, config


def test_micro_run_writes_every_artifact(micro_run):
    workdir, _ = micro_run
    out = workdir / "results" / "micro"
    samples = pq.read_table(out / "filter" / "humaneval.samples.parquet").to_pylist()
    assert len(samples) == 12
    kept = [s for s in samples if s["kept"]]
    assert {s["split"] for s in kept} == {"member", "non-member"}
    assert all(s["reason"] for s in samples if not s["kept"])
    variants = pq.read_table(out / "variants" / "humaneval.parquet").to_pylist()
    assert {v["variant_id"] for v in variants} == {0, 1, 2, 3}
    scores = pq.read_table(out / "score" / "humaneval" / "target-e1" / "scores.parquet").to_pylist()
    assert {s["method"] for s in scores} == {"loss", "zlib", "lowercase", "min_k_20", "min_k_pp_20", "srdetection_graybox"}
    detection = pq.read_table(out / "aggregate" / "humaneval" / "detection.parquet").to_pylist()
    assert {d["model"] for d in detection} == {"reference", "target-e1"}
    assert (out / "train" / "humaneval" / "adapter" / "epoch-1" / "adapter_config.json").exists()
    assert (out / "aggregate" / "humaneval" / "roc.png").stat().st_size > 1000
    assert "## Detection" in (out / "aggregate" / "humaneval" / "report.md").read_text()


def test_scoring_only_change_reruns_only_scoring_and_aggregation(micro_run):
    workdir, config = micro_run
    changed = yaml.safe_load(config.read_text())
    changed["score"]["methods"]["min_k"]["ratios"] = [0.1]
    other = workdir / "changed.yaml"
    other.write_text(yaml.safe_dump(changed))
    result = snakemake(workdir, "-n", "--configfile", str(other))
    assert result.returncode == 0, result.stderr
    planned = {line.split()[0] for line in result.stdout.split("Job stats:")[1].split("Reasons:")[0].splitlines()[3:] if line.strip() and not line.startswith("total")}
    assert planned == {"detector_scores", "aggregate", "all"}
    assert "params changed" in result.stdout.lower() or "params" in result.stdout.lower()
