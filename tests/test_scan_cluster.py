"""The sharded scan's tools (docs/guides/scan-a-corpus.md, "At scale"):
scripts/build_python_corpus.py on a tiny made-up site-packages and standard
library (the same bytes every run, one document per content, the shards and
their round-robin), scripts/scan_cluster_table.py on hand-made Snakemake
benchmark records and sacct rows, and what each shard job asks a cluster for:
its own share of the corpus, known before it runs (leaktrace.leakage.sources.part_shares,
rules/cluster.smk's scan_job)."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from helpers import write_config
from plan_requests import planned_jobs

from leaktrace import jobsize
from leaktrace.leakage.settings import PRESETS
from leaktrace.leakage.sources import PartShare, iter_source, part_shares

ROOT = Path(__file__).resolve().parents[1]


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = load("build_python_corpus")
table = load("scan_cluster_table")


@pytest.fixture
def trees(tmp_path):
    site, stdlib = tmp_path / "site", tmp_path / "stdlib"
    files = {
        site / "pkg" / "__init__.py": "",
        site / "pkg" / "a.py": "def a():\n    return 1\n",
        site / "pkg" / "copy.py": "def a():\n    return 1\n",  # the same content as a.py: left out
        site / "pkg" / "__pycache__" / "a.py": "x = 0\n",
        site / "pkg" / "data.txt": "not python\n",
        site / "other" / "b.py": "def b(x):\n    return x * 2\n",
        stdlib / "os.py": "def c():\n    return 'é'\n",
        stdlib / "site-packages" / "pip" / "d.py": "def d():\n    pass\n",  # not the standard library
        stdlib / "json" / "e.py": "def e():\n    return []\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (stdlib / "latin.py").write_bytes(b"# \xe9\n")  # not UTF-8: left out
    (site / "link.py").symlink_to(site / "other" / "b.py")  # a link: not read
    return site, stdlib


def run_build(site, stdlib, out, *extra):
    assert build.main(["--out", str(out), "--site-packages", str(site), "--stdlib", str(stdlib), *extra]) == 0
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_the_corpus_is_deduplicated_sharded_round_robin_and_the_same_bytes_every_run(trees, tmp_path):
    site, stdlib = trees
    first = run_build(site, stdlib, tmp_path / "one", "--shards", "3")
    second = run_build(site, stdlib, tmp_path / "two", "--shards", "3")
    assert first == second  # the shards and the manifest, byte for byte
    shards = sorted(name for name in first if name.endswith(".parquet"))
    assert shards == [f"shard-{k:03d}-of-003.parquet" for k in range(3)]
    rows = {}
    for k, name in enumerate(shards):
        pf = pq.ParquetFile(tmp_path / "one" / name)
        assert pf.num_row_groups == 1 and pf.schema_arrow.names == ["path", "content"]
        rows[k] = pf.read().to_pylist()
    paths = sorted(r["path"] for k in rows for r in rows[k])
    assert paths == [
        "site-packages/other/b.py",
        "site-packages/pkg/__init__.py",
        "site-packages/pkg/a.py",  # copy.py, the same content later in sorted order, is left out
        "stdlib/json/e.py",
        "stdlib/os.py",
    ]
    for k in rows:  # document i of the sorted list goes to shard i mod 3
        assert [r["path"] for r in rows[k]] == paths[k::3]
    manifest = json.loads(first["manifest.json"])
    assert manifest["documents"] == 5
    assert manifest["left_out"] == {"files": 7, "duplicates": 1, "not_utf8": 1, "unreadable": 0}
    assert [s["files"] for s in manifest["shards"]] == [2, 2, 1]
    assert manifest["bytes"] == sum(len(r["content"].encode()) for k in rows for r in rows[k])


def test_limit_keeps_the_first_distinct_files_and_empty_shards_are_still_written(trees, tmp_path):
    site, stdlib = trees
    run_build(site, stdlib, tmp_path / "out", "--shards", "4", "--limit", "2")
    shards = sorted((tmp_path / "out").glob("shard-*.parquet"))
    assert len(shards) == 4
    assert [pq.read_table(p).num_rows for p in shards] == [1, 1, 0, 0]
    run_build(site, stdlib, tmp_path / "out", "--shards", "2")  # a rerun leaves no shard of the last one behind
    assert sorted(p.name for p in (tmp_path / "out").glob("shard-*.parquet")) == [
        "shard-000-of-002.parquet",
        "shard-001-of-002.parquet",
    ]


def test_each_scan_part_reads_one_shard(trees, tmp_path):
    """With `shards` equal to the files, the scan's part k reads shard k (sources.py's round-robin of row groups)."""
    site, stdlib = trees
    run_build(site, stdlib, tmp_path / "c", "--shards", "3")
    source = {"kind": "parquet", "paths": [str(tmp_path / "c" / "shard-*.parquet")], "content": "content", "id": "path"}
    for k in range(3):
        got = [d.doc_id for d in iter_source(source, k, 3, [], Counter())]
        assert got == pq.read_table(tmp_path / "c" / f"shard-{k:03d}-of-003.parquet").column("path").to_pylist()


BENCH_HEAD = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def test_the_table_and_the_cost_model_from_hand_made_records(tmp_path, capsys):
    bench = tmp_path / "results" / "run" / "benchmarks" / "leakage_scan"
    bench.mkdir(parents=True)
    (bench / "s-0.tsv").write_text(BENCH_HEAD + "20.00\t0:00:20\t400.00\t1\t1\t1\t0\t0\t50\t10.00\n")
    (bench / "s-1.tsv").write_text(BENCH_HEAD + "40.00\t0:00:40\t500.00\t1\t1\t1\t0\t0\t50\t30.00\n")
    (bench / "other-0.tsv").write_text(BENCH_HEAD + "1\t0:00:01\t1\t1\t1\t1\t0\t0\t1\t1\n")  # another scan's
    # part 0: 1,000 files, 20 MB; part 1: 3,000 files, 60 MB -> 80 MB in 40 CPU s
    argv = [str(tmp_path / "results" / "run"), "--scan", "s", "--bytes", "0=1000,20000000", "1=3000,60000000"]
    assert table.main(argv) == 0
    out = capsys.readouterr().out
    assert "| 0 | 1,000 | 20.0 | 10.0 | 20.0 | 100 | 2.00 | 400 |" in out
    assert "| 1 | 3,000 | 60.0 | 30.0 | 40.0 | 100 | 2.00 | 500 |" in out
    assert "| all 2 | 4,000 | 80.0 | 40.0 | 60.0 | 100 | 2.00 | 500 (most) |" in out
    # 0.5 CPU s per MB: 0.5e6 CPU s per TB = 139 core-hours
    assert "0.500 CPU s per MB (2.00 MB per CPU second), 139 CPU core-hours per TB of source" in out
    assert out.startswith("$ .venv/bin/python scripts/scan_cluster_table.py ")


def test_sacct_rows_give_each_part_its_slurm_job():
    text = "\n".join(
        [
            "101|rule_leakage_scan_wildcards_s_0|00:12.500|00:00:30||COMPLETED",
            "101.batch||00:12.500|00:00:30|512000K|COMPLETED",
            "102|rule_leakage_scan_wildcards_s_1|01:02:03|01:05:00||FAILED",  # the failed try: its retry counts
            "103|rule_leakage_scan_wildcards_s_1|1-00:00:01|1-00:00:02||COMPLETED",
            "103.batch||1-00:00:01|1-00:00:02|1.5G|COMPLETED",
            "104|rule_leakage_gather_wildcards_s|00:01.000|00:00:01||COMPLETED",
        ]
    )
    got = table.parse_sacct(text, "s")
    assert got == {
        0: {"job": "101", "total_cpu": 12.5, "elapsed": 30.0, "max_rss": 500.0},
        1: {"job": "103", "total_cpu": 86401.0, "elapsed": 86402.0, "max_rss": 1536.0},
    }


def test_each_scan_jobs_share_of_the_corpus_is_known_before_it_runs(trees, tmp_path):
    """part_shares, from file sizes and Parquet footers, against what each part
    reads when streamed (scan_cluster_table.part_sizes): a files job's bytes
    exactly; a Parquet job's as the content column's uncompressed bytes (the
    text, and a few bytes a row and a page of encoding); a JSONL job an equal share."""
    site, stdlib = trees
    files = {"kind": "files", "root": str(site), "glob": "**/*"}
    streamed = table.part_sizes(files, 3)
    assert [s.bytes for s in part_shares(files, 3)] == [streamed[k][1] for k in range(3)]
    assert all(s.held == 0 for s in part_shares(files, 3))

    run_build(site, stdlib, tmp_path / "c", "--shards", "2")
    parquet = {
        "kind": "parquet",
        "paths": [str(tmp_path / "c" / "shard-*.parquet")],
        "content": "content",
        "id": "path",
    }
    streamed, shares = table.part_sizes(parquet, 2), part_shares(parquet, 2)
    for k, share in enumerate(shares):
        docs, text = streamed[k]
        assert text <= share.bytes <= text + 16 * docs + 512  # offsets, dictionary indices and page headers
        assert share.held > 0  # the row group's compressed column chunks and a batch, held while it is read
    (tmp_path / "c" / "shard-000-not.parquet").write_text("not Parquet")  # skipped, as the scan skips it
    assert part_shares(parquet, 2) == shares

    lines = tmp_path / "dump.jsonl"
    lines.write_text("".join(json.dumps({"text": "x" * k}) + "\n" for k in range(10)))
    jsonl = {"kind": "jsonl", "paths": [str(lines)], "content": "text"}
    size = lines.stat().st_size
    assert part_shares(jsonl, 4) == [PartShare(math.ceil(size / 4), 0)] * 4
    assert part_shares({"kind": "huggingface", "dataset": "x/y"}, 4) is None  # not known offline


def test_the_scan_rates_cover_every_preset():
    cluster = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["cluster"]
    assert set(jobsize.Rates.from_config(cluster).scan_s_per_mb) == set(PRESETS)


def _parquet_corpus(folder: Path, files: int, rows: int) -> None:
    folder.mkdir()
    for k in range(files):
        texts = [f"def f_{k}_{i}():\n    return {i}\n" + "#" * 1000 for i in range(rows)]
        pq.write_table(pa.table({"content": texts}), folder / f"{k}.parquet", row_group_size=rows)


def test_a_scan_jobs_runtime_grows_with_its_share_of_the_corpus(tmp_path):
    """A dry run's request of each leakage_scan job (rules/cluster.smk's
    scan_job): two Parquet corpora, one ten times the other, two jobs each;
    each job asks for start-up, its inputs and its own share of the corpus
    at the preset's cluster.scan_s_per_mb, times cluster.safety, in whole
    minutes; its memory has the Parquet it holds while reading on top.
    The benchmark and the index are answered from a table
    (tests/plan_requests.py), as the recorded run's are."""
    _parquet_corpus(tmp_path / "small", 2, 200)
    _parquet_corpus(tmp_path / "big", 2, 2000)
    rate = 600.0  # CPU s per MB: the small corpus's jobs above the 1-minute floor
    scans = {
        name: {
            "benchmark": "humaneval",
            "corpus": {"kind": "parquet", "paths": [str(tmp_path / name / "*.parquet")], "content": "content"},
            "shards": 2,
        }
        for name in ("small", "big")
    }
    config = write_config(
        tmp_path,
        {
            "run": "sizing",
            "fork_server": False,
            "benchmarks": {"humaneval": {"testbed": False}},
            "audit": {"benchmarks": []},
            "leakage": {"scans": {"stdlib": None, "training-mix": None, **scans}},
            "cluster": {"scan_s_per_mb": {"default": rate}},
        },
        base="config.yaml",
    )
    inputs = tmp_path / "inputs.tsv"
    made = {"results/sizing/data/benchmarks/humaneval.parquet": (164, 200_000)}
    made.update({f"results/sizing/leakage/{name}/index.parquet": (164, 300_000) for name in scans})
    inputs.write_text("path\trows\tbytes\toriginals\n" + "".join(f"{p}\t{r}\t{b}\t{r}\n" for p, (r, b) in made.items()))
    argv = [str(inputs), "--snakefile", str(ROOT / "Snakefile"), "--directory", str(tmp_path), "--cores", "2"]
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "plan_requests.py"), *argv, "--configfile", str(config), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    asks = {
        Path(job["benchmark"]).stem: job["resources"]
        for job in planned_jobs(result.stdout)
        if job["rule"] == "leakage_scan"
    }
    assert sorted(asks) == ["big-0", "big-1", "small-0", "small-1"]
    rates = jobsize.Rates.from_config(yaml.safe_load(config.read_text())["cluster"])
    for name in scans:
        shares = part_shares(scans[name]["corpus"], 2)
        inputs_s = (200_000 + 300_000) / rates.cpu_bytes_per_s
        for part, share in enumerate(shares):
            minutes = math.ceil((rates.start_s + inputs_s + share.bytes / 1e6 * rate) * rates.safety / 60)
            assert int(asks[f"{name}-{part}"]["runtime"]) == minutes
            memory = rates.base_mb + (500_000 * rates.data_copies + 1_000_000 * rates.data_copies + share.held) / 1e6
            assert int(asks[f"{name}-{part}"]["mem_mb"]) == math.ceil(memory / 100) * 100
    small, big = (int(asks[f"{name}-0"]["runtime"]) for name in ("small", "big"))
    assert small > rates.min_runtime and big > 5 * small  # ten times the corpus: about ten times the time
