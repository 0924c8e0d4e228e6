"""Reruns never mix models: leaktrace/models/identity.py
and rules/identity.smk rerun everything a model scored when its path or its
files change, and a model path that does not exist stops a rerun at planning
with every earlier output in place (leaktrace/plan_checks.py).

The Snakemake tests plan the shipped audit config in a scratch directory:
the identity files are written for real (rule model_identity), every other
output is a stand-in marked up to date with ``--touch``, so a dry run shows
exactly what a rerun would remake, in seconds."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from leaktrace.models.identity import EDGE_BYTES, fingerprint, identity_key, model_identity

REPO = Path(__file__).resolve().parents[1]
TINY, TINY_REF = REPO / "resources/models/leaktrace-tiny", REPO / "resources/models/leaktrace-tiny-ref"
MBPP_AUDIT = REPO / "resources/audit/mbpp-audit.jsonl"


def test_the_fingerprint_sees_a_changed_file_copied_over_with_the_old_mtime(tmp_path):
    model = tmp_path / "m"
    shutil.copytree(TINY, model)
    before = model_identity(str(model))
    assert before["path"] == str(model.resolve()) and [f["name"] for f in before["files"]] == sorted(os.listdir(model))
    weights = model / "model.safetensors"
    stat = weights.stat()
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # the tail MiB, same size, mtime put back as `cp -p` would
    weights.write_bytes(data)
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert model_identity(str(model)) != before


def test_the_fingerprint_sees_a_change_in_the_middle_through_the_mtime(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    weights = model / "w.bin"
    weights.write_bytes(bytes(3 * EDGE_BYTES))
    before = fingerprint(model)
    with open(weights, "r+b") as fh:  # a byte the two MiB do not cover
        fh.seek(EDGE_BYTES + 5)
        fh.write(b"\x01")
    os.utime(weights, ns=(0, weights.stat().st_mtime_ns + 1_000_000))
    after = fingerprint(model)
    assert after[0]["edges_sha256"] == before[0]["edges_sha256"] and after != before
    assert fingerprint(tmp_path / "missing") is None
    assert model_identity("org/name", hub=True, revision="abc") == {"hub_id": "org/name", "revision": "abc"}
    assert identity_key("/models/my coder") == "--models--my_coder"


# --- the rules: what a rerun remakes ---


def snakemake(workdir: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--snakefile",
            str(REPO / "Snakefile"),
            "--directory",
            str(workdir),
            "--cores",
            "1",
            "--configfile",
            str(config),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )


def jobs(result: subprocess.CompletedProcess) -> dict[str, int]:
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    if "Job stats:" not in result.stdout:
        return {}
    table = result.stdout.split("Job stats:", 1)[1].split("total", 1)[0]
    rows = [line.split() for line in table.splitlines()[3:] if line.strip()]
    return {row[0]: int(row[1]) for row in rows}


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """A scratch run of the shipped audit (its testbed off, no counterfactual
    source) with model-a a copy of the tiny model: identity files written,
    every other output a stand-in marked up to date."""
    workdir = tmp_path_factory.mktemp("identity")
    (workdir / "config").symlink_to(REPO / "config")  # the Snakefile's default configfile
    shutil.copytree(TINY, workdir / "model-a")
    shutil.copytree(TINY_REF, workdir / "other")
    config = yaml.safe_load((REPO / "config/experiments/audit.yaml").read_text())
    config["fork_server"] = False
    config["benchmarks"]["mbpp-audit"]["path"] = str(MBPP_AUDIT)
    config["base_model"]["path"] = str(TINY)
    config["reference_model"] = {"path": str(TINY_REF)}
    config["audit"]["models"] = [
        {"name": "model-a", "path": str(workdir / "model-a")},
        {"name": "model-b", "path": str(TINY_REF)},
    ]
    config["contamination"]["held_out_ids"] = str(REPO / "resources/audit/control-ids.txt")
    config["score"]["methods"]["ref"]["model"] = str(TINY_REF)
    config["leakage"]["scans"]["my-corpus"]["corpus"]["root"] = str(REPO / "resources/audit/corpus")
    config["counterfactual"]["sources"] = {}
    path = workdir / "audit.yaml"
    path.write_text(yaml.safe_dump(config))
    assert snakemake(workdir, path, "--until", "model_identity").returncode == 0
    summary = [line.split("\t") for line in snakemake(workdir, path, "-n", "--summary").stdout.splitlines()]
    for row in summary:
        name = row[0]
        if len(row) >= 5 and row[4] == "missing":
            (workdir / name).parent.mkdir(parents=True, exist_ok=True)
            if name.endswith(".parquet"):
                pq.write_table(pa.table({"x": [1]}), workdir / name)  # the job size estimates read it
            else:
                (workdir / name).write_text("stand-in\n")
    assert snakemake(workdir, path, "--touch").returncode == 0
    assert jobs(snakemake(workdir, path, "-n")) == {}  # up to date
    return workdir, config


def write(workdir: Path, config: dict, name: str) -> Path:
    path = workdir / name
    path.write_text(yaml.safe_dump(config))
    return path


def outputs(workdir: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in (workdir / "results").rglob("*") if p.is_file()}


MODEL_A_JOBS = {
    "model_identity": 1,
    "token_stats": 1,
    "blackbox_generations": 1,
    "detector_scores": 1,
    "audit": 1,
    "audit_contamination": 1,
    "audit_exchangeability": 1,
    "audit_exchangeability_table": 1,
    "verdict": 1,
    "all": 1,
}  # model-b's scores stay


def test_a_missing_model_path_on_a_rerun_stops_at_planning_and_keeps_every_output(audited):
    workdir, config = audited
    before = outputs(workdir)
    typo = {
        **config,
        "audit": {
            **config["audit"],
            "models": [{"name": "model-a", "path": str(workdir / "model-aa")}, config["audit"]["models"][1]],
        },
    }
    result = snakemake(workdir, write(workdir, typo, "typo.yaml"))  # a real run, not a dry one
    assert result.returncode != 0
    assert f"audit.models[0] (model-a).path: {workdir}/model-aa does not exist" in result.stderr
    assert outputs(workdir) == before


def test_another_model_directory_at_the_path_reruns_what_the_model_scored(audited):
    workdir, config = audited
    moved = {
        **config,
        "audit": {
            **config["audit"],
            "models": [{"name": "model-a", "path": str(workdir / "other")}, config["audit"]["models"][1]],
        },
    }
    assert jobs(snakemake(workdir, write(workdir, moved, "moved.yaml"), "-n")) == MODEL_A_JOBS


def test_changed_files_at_the_same_path_rerun_what_the_model_scored(audited):
    workdir, config = audited
    settings = workdir / "model-a/generation_config.json"
    original = settings.read_text()
    try:
        settings.write_text(original.replace("}", ', "max_new_tokens": 7}', 1))
        result = snakemake(workdir, workdir / "audit.yaml", "-n")
        assert jobs(result) == MODEL_A_JOBS
        assert "params have changed since last execution:\n        model_identity" in result.stdout
    finally:
        settings.write_text(original)
