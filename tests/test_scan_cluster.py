"""The sharded scan's tools (docs/guides/scan-a-corpus.md, "At scale"):
scripts/build_python_corpus.py on a tiny made-up site-packages and standard
library (the same bytes every run, one document per content, the shards and
their round-robin), and scripts/scan_cluster_table.py on hand-made Snakemake
benchmark records and sacct rows."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

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
    from leaktrace.leakage.sources import iter_source

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
