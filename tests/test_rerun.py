"""No mixed state after a failed rerun: a run removes the
old outputs of every job it will remake before its first job starts
(leaktrace/rerun.py, rules/common.smk's onstart), so a failed rerun never
leaves a gather job's old report beside deleted parts.

The Snakemake test runs a leakage scan of the shipped audit in a scratch
directory, then reruns it on a corpus whose Parquet file lacks the content
column: the checks at planning pass (the file exists), the shard job fails,
and nothing the rerun would have remade is left: no report beside deleted
parts."""

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from leaktrace.rerun import withdraw_outputs

REPO = Path(__file__).resolve().parents[1]


def test_withdraw_outputs_removes_files_links_and_directory_outputs(tmp_path):
    (tmp_path / "a.parquet").write_text("x")
    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "weights").write_text("w")
    (tmp_path / "plain-dir").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "gone")  # a dangling link is removed, not followed
    paths = [
        (str(tmp_path / "a.parquet"), False),
        (str(tmp_path / "adapter"), True),
        (str(tmp_path / "plain-dir"), False),
        (str(tmp_path / "link"), False),
        (str(tmp_path / "missing"), False),
    ]
    assert withdraw_outputs(paths) == sorted(str(tmp_path / n) for n in ("a.parquet", "adapter", "link"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain-dir"]  # a file output is never removed as a directory


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
            *args,
            "--configfile",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_failed_rerun_leaves_no_old_report_beside_deleted_parts(tmp_path):
    (tmp_path / "config").symlink_to(REPO / "config")  # the Snakefile's default configfile
    config = yaml.safe_load((REPO / "config/experiments/audit.yaml").read_text())
    config["fork_server"] = False
    config["benchmarks"]["mbpp-audit"]["path"] = str(REPO / "resources/audit/mbpp-audit.jsonl")
    config["contamination"]["held_out_ids"] = str(REPO / "resources/audit/control-ids.txt")
    config["audit"]["models"] = [{"name": "model-a", "path": str(REPO / "resources/models/leaktrace-tiny")}]
    config["audit"]["reference"]["model"] = None  # its reference, model-b, is not audited here
    config["score"]["methods"]["ref"]["model"] = str(REPO / "resources/models/leaktrace-tiny-ref")
    config["base_model"]["path"] = str(REPO / "resources/models/leaktrace-tiny")
    config["reference_model"] = {"path": str(REPO / "resources/models/leaktrace-tiny-ref")}
    config["leakage"]["scans"]["my-corpus"]["corpus"]["root"] = str(REPO / "resources/audit/corpus")
    config["counterfactual"]["sources"] = {}
    first = tmp_path / "first.yaml"
    first.write_text(yaml.safe_dump(config))
    scan = tmp_path / "results/audit/leakage/my-corpus"
    benchmark = tmp_path / "results/audit/data/benchmarks/mbpp-audit.parquet"
    target = "results/audit/leakage/my-corpus/report.md"
    first_run = snakemake(tmp_path, first, target)  # the scan, for real (seconds: 20 problems, 2 files)
    assert first_run.returncode == 0, first_run.stderr[-3000:]
    assert (scan / "parts/pairs-0.parquet").exists() and (scan / "report.md").exists()
    upstream = benchmark.stat().st_mtime_ns

    dump = tmp_path / "dump.parquet"
    pq.write_table(pa.table({"text": ["def f():\n    return 1\n"]}), dump)  # no `content` column
    config["leakage"]["scans"]["my-corpus"]["corpus"] = {"kind": "parquet", "paths": [str(dump)]}
    second = tmp_path / "second.yaml"
    second.write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, second, target)
    assert (
        result.returncode != 0
        and "no column 'content'" in (tmp_path / "results/audit/logs/leakage_scan/my-corpus-0.log").read_text()
    )
    assert not (scan / "parts").exists() or not any((scan / "parts").iterdir())
    assert sorted(p.name for p in scan.iterdir() if p.is_file()) == [
        "index.parquet"
    ]  # the rerun's index job ran; no report
    assert benchmark.stat().st_mtime_ns == upstream  # what the rerun does not remake stays
