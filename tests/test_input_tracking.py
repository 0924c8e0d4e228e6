"""Results follow their inputs: a benchmark file, the control ids and the
files of a scanned corpus are inputs by content (rules/inputs.smk,
leaktrace/data/digests.py), so an edit reruns exactly the jobs that read it
and what follows them, and a removed corpus file leaves the scan's outputs.

The Snakemake tests plan a scratch audit with two benchmarks, each scanned
against a corpus folder of its own. The digest and identity files and one
scan (``my-corpus``: its ingest, index, shard and gather) are made for real;
every other output is a stand-in marked up to date with ``--touch``, so a dry
run shows exactly what a rerun would remake, in seconds."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from leaktrace.data import digests
from leaktrace.data.digests import DigestCache, input_digest
from leaktrace.leakage.sources import source_entries
from leaktrace.models.identity import identity_key
from leaktrace.plan_checks import unpinned_datasets

REPO = Path(__file__).resolve().parents[1]
TINY, TINY_REF = REPO / "resources/models/leaktrace-tiny", REPO / "resources/models/leaktrace-tiny-ref"
AUDIT = REPO / "resources/audit"
PLANTED = "utils/text_tools.py"  # a corpus file with a verbatim copy of a benchmark solution


def test_an_unchanged_file_is_hashed_once_and_a_rewrite_with_its_old_mtime_is_seen(tmp_path, monkeypatch):
    reads = []
    real_sha256 = digests._sha256
    monkeypatch.setattr(digests, "_sha256", lambda path: reads.append(path) or real_sha256(path))
    data, cache_file = tmp_path / "b.jsonl", tmp_path / "cache" / "digests.json"
    data.write_text('{"id": 1}\n')
    fresh = DigestCache(cache_file)
    first = fresh.sha256(data)
    assert str(data.resolve()) not in fresh.entries  # just written: hashed again next time (racily clean)
    monkeypatch.setattr(digests, "RACY_SECONDS", -1)  # as if written long ago
    for _ in range(2):  # two plannings
        cache = DigestCache(cache_file)
        assert cache.sha256(data) == first
        cache.save()
    assert len(reads) == 2 and cache_file.exists()  # the second planning read the cache, not the file
    st = data.stat()
    data.write_text('{"id": 2}\n')  # same size, the old mtime put back (cp -p): only the ctime moved
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert DigestCache(cache_file).sha256(data) != first and len(reads) == 3


def test_a_corpus_listing_sees_a_file_added_removed_or_skipped(tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(AUDIT / "corpus", corpus)
    source = {"kind": "files", "root": str(corpus), "glob": "**/*.py"}
    cache = DigestCache()
    before = source_entries(source, cache)
    assert [e["name"] for e in before] == sorted(
        p.relative_to(corpus).as_posix() for p in corpus.rglob("*.py")
    ) and all(len(e["sha256"]) == 64 for e in before)
    (corpus / "utils" / "notes.txt").write_text("not matched by the glob\n")
    assert source_entries(source, cache) == before
    (corpus / "copy.py").write_text("x = 1\n")
    (corpus / "gone.py").symlink_to(corpus / "missing.py")
    (corpus / PLANTED).unlink()
    after = {e["name"]: e for e in source_entries(source, cache)}
    assert (
        PLANTED not in after
        and after["copy.py"]["size"] == 6
        and after["gone.py"]
        == {
            "name": "gone.py",
            "skipped": "dangling_link",
        }
    )
    jsonl = {"kind": "jsonl", "paths": [str(tmp_path / "dump" / "*.jsonl")]}
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "a.jsonl").write_text('{"content": "x"}\n')
    assert [e["name"] for e in source_entries(jsonl, cache)] == [str(tmp_path / "dump" / "a.jsonl")]
    digest = input_digest(before, kind="files")
    assert digest["kind"] == "files" and digest["entries"] == len(before) == 4
    assert input_digest(list(after.values()), kind="files")["sha256"] != digest["sha256"]


def test_hub_datasets_without_a_revision_are_named():
    config = yaml.safe_load((REPO / "config/experiments/lessleak.yaml").read_text())
    config["benchmarks"]["mbpp"]["revision"] = "4bb6404"
    config["corpora"] = {"web": {"source": "records", "format": "huggingface", "dataset": "tiiuae/falcon-refinedweb"}}
    config["benchmarks"]["local"] = {"format": "huggingface", "dataset": "json", "path": "b.jsonl"}  # a builder
    found = unpinned_datasets(config)
    assert "benchmarks.humanevalplus (evalplus/humanevalplus)" in found
    assert "corpora.web (tiiuae/falcon-refinedweb)" in found
    assert not any(key.startswith(("benchmarks.mbpp ", "benchmarks.local")) for key in found)
    assert any(key.startswith("leakage.scans.") and key.endswith("(bigcode/starcoderdata)") for key in found)


# --- the rules: what a rerun remakes ---


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
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
            "2",
            *args,
            "--configfile",  # last: it takes every value that follows
            str(workdir / "audit.yaml"),
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


def planned(workdir: Path) -> tuple[dict[str, int], str]:
    """The dry run's jobs per rule, and its output (each job with its wildcards)."""
    result = snakemake(workdir, "-n")
    return jobs(result), result.stdout


SCAN = "results/audit/leakage/my-corpus"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A scratch audit of mbpp-audit and a second benchmark, ``other``, each
    scanned against a copy of the shipped corpus folder (scans my-corpus and
    other-corpus), every output up to date: my-corpus's scan made for real."""
    workdir = tmp_path_factory.mktemp("inputs")
    (workdir / "config").symlink_to(REPO / "config")  # the Snakefile's default configfile
    for name in ("mbpp-audit", "other"):
        shutil.copy(AUDIT / "mbpp-audit.jsonl", workdir / f"{name}.jsonl")
    shutil.copytree(AUDIT / "corpus", workdir / "corpus-a")
    shutil.copytree(AUDIT / "corpus", workdir / "corpus-b")
    config = yaml.safe_load((REPO / "config/experiments/audit.yaml").read_text())
    config["fork_server"] = False
    config["benchmarks"]["mbpp-audit"].update(path=str(workdir / "mbpp-audit.jsonl"), check_solutions=False)
    config["benchmarks"]["other"] = {**config["benchmarks"]["mbpp-audit"], "path": str(workdir / "other.jsonl")}
    config["base_model"]["path"] = str(TINY)
    config["reference_model"] = {"path": str(TINY_REF)}
    config["audit"]["models"] = [{"name": "model-a", "path": str(TINY)}, {"name": "model-b", "path": str(TINY_REF)}]
    config["contamination"]["held_out_ids"] = str(AUDIT / "control-ids.txt")
    config["score"]["methods"]["ref"]["model"] = str(TINY_REF)
    config["counterfactual"]["sources"] = {}
    scan = config["leakage"]["scans"]["my-corpus"]
    scan["corpus"]["root"] = str(workdir / "corpus-a")
    config["leakage"]["scans"]["other-corpus"] = {**scan, "benchmark": "other", "corpus": {**scan["corpus"]}}
    config["leakage"]["scans"]["other-corpus"]["corpus"]["root"] = str(workdir / "corpus-b")
    (workdir / "audit.yaml").write_text(yaml.safe_dump(config))
    made = snakemake(  # the scan, every digest and identity file, for real
        workdir,
        f"{SCAN}/report.md",
        *(f"results/audit/inputs/{kind}.json" for kind in ("benchmarks/other", "scans/other-corpus")),
        "results/audit/inputs/contamination/held_out_ids.json",
        *(f"results/audit/models/{identity_key(str(path))}.identity.json" for path in (TINY, TINY_REF)),
    )
    assert made.returncode == 0, made.stderr[-3000:]
    summary = [line.split("\t") for line in snakemake(workdir, "-n", "--summary").stdout.splitlines()]
    for row in summary:
        name = row[0]
        if len(row) >= 5 and row[4] == "missing":
            (workdir / name).parent.mkdir(parents=True, exist_ok=True)
            if name.endswith(".parquet"):
                pq.write_table(pa.table({"x": [1]}), workdir / name)  # the job size estimates read it
            else:
                (workdir / name).write_text("stand-in\n")
    assert snakemake(workdir, "--touch").returncode == 0
    assert planned(workdir)[0] == {}  # up to date
    return workdir


# What follows an edit of mbpp-audit's file: its ingest and everything downstream; other's ingest and
# scan, the corpora's ingest and the models' identities stay.
BENCHMARK_EDIT_JOBS = {
    "input_digest": 1,
    "ingest_benchmark": 1,
    "filter_functions": 1,
    "variants": 1,
    "token_stats": 3,
    "blackbox_generations": 2,
    "detector_scores": 2,
    "audit": 1,
    "audit_blind": 1,
    "audit_contamination": 1,
    "audit_exchangeability": 2,  # the order test reads the benchmark's file as published
    "audit_exchangeability_table": 1,
    "leakage_index": 1,
    "leakage_scan": 1,
    "leakage_gather": 1,
    "verdict": 1,
    "all": 1,
}
# What follows a corpus file added to or removed from my-corpus's folder: that scan's shard and gather.
CORPUS_EDIT_JOBS = {"input_digest": 1, "leakage_scan": 1, "leakage_gather": 1, "verdict": 1, "all": 1}


def test_an_edited_benchmark_record_reruns_its_ingest_and_what_follows_only(finished):
    path = finished / "mbpp-audit.jsonl"
    original = path.read_text()
    records = [json.loads(line) for line in original.splitlines()]
    records[3]["text"] = "Write a function to reverse the words of a sentence."
    records[3]["code"] = records[3]["code"].replace("return", "return  ", 1)
    before = planned(finished)[0]  # what another test left to do (the delete test's verdict), in any order
    try:
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        counts, output = planned(finished)
        assert counts == BENCHMARK_EDIT_JOBS
        assert "params have changed since last execution:\n        input_digest" in output
        assert "wildcards: kind=benchmarks, name=mbpp-audit" in output
        assert "scan=other-corpus" not in output and "benchmark=other" not in output
    finally:
        path.write_text(original)
    assert planned(finished)[0] == before  # the same bytes again: nothing more to do, though the file was rewritten


def test_a_file_added_to_a_scanned_corpus_reruns_that_scan_only(finished):
    added = finished / "corpus-a" / "utils" / "planted.py"
    added.write_text((AUDIT / "corpus" / PLANTED).read_text())  # the shipped copy: the delete test may run first
    try:
        counts, output = planned(finished)
        assert counts == CORPUS_EDIT_JOBS
        assert "wildcards: kind=scans, name=my-corpus" in output and "scan=other-corpus" not in output
    finally:
        added.unlink()


def test_a_deleted_corpus_file_reruns_that_scan_and_leaves_its_outputs(finished):
    def locations():
        return set(pq.read_table(finished / SCAN / "sources.parquet").column("location").to_pylist())

    assert any(loc.endswith(PLANTED) for loc in locations())
    (finished / "corpus-a" / PLANTED).unlink()
    counts, _ = planned(finished)
    assert counts == CORPUS_EDIT_JOBS
    rerun = snakemake(finished, f"{SCAN}/report.md")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert not any(loc.endswith(PLANTED) for loc in locations())
    assert PLANTED not in (finished / SCAN / "report.md").read_text()
    listed = json.loads((finished / "results/audit/inputs/scans/my-corpus.json").read_text())
    assert PLANTED not in [entry["name"] for entry in listed["files"]]
    assert planned(finished)[0] == {"verdict": 1, "all": 1}  # what reads the new report
