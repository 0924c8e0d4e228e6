"""The Hugging Face streamed-dataset corpus, with the real ``datasets``
package (pinned in requirements.lock), read from local Parquet shards: no
network. Each scan part streams whole shards, so the parts partition the
corpus, each shard read by one part whatever the number of parts, and a
planted copy in one shard is found by the part that reads it."""

import json
from collections import Counter

import datasets  # noqa: F401  (pinned: the test fails, never skips, without it)
import pyarrow as pa
import pyarrow.parquet as pq

from leaktrace.artifacts import read_records
from leaktrace.leakage.settings import scan_slice
from leaktrace.leakage.sources import iter_source
from leaktrace.settings.ingest import BenchmarkEntry
from leaktrace.stages.ingest import ingest_benchmark
from leaktrace.stages.leakage import build_index, gather, scan_shard

SOLUTION = (
    "def running_max(values):\n    best = None\n    out = []\n    for v in values:\n"
    "        if best is None or v > best:\n            best = v\n        out.append(best)\n    return out\n"
)


def _shards(root, n_shards=4, per_shard=3, planted=None):
    """``n_shards`` Parquet files of ``per_shard`` small functions each (ids s<shard>-<row>); ``planted``: (shard, text)."""
    root.mkdir()
    for s in range(n_shards):
        content = [f"def f{s}_{i}(x):\n    return x * {i} + {s}\n" for i in range(per_shard)]
        if planted and planted[0] == s:
            content[1] = planted[1]
        pq.write_table(
            pa.table(
                {
                    "content": content,
                    "id": [f"s{s}-{i}" for i in range(per_shard)],
                    "path": [f"repo{s}/f{i}.py" for i in range(per_shard)],
                }
            ),
            root / f"train-{s:05d}-of-{n_shards:05d}.parquet",
        )
    return {
        "kind": "huggingface",
        "dataset": "parquet",
        "data_dir": str(root),
        "split": "train",
        "content": "content",
        "id": "id",
        "location": "path",
    }


def test_streamed_parquet_shards_are_partitioned_by_part(tmp_path):
    source = _shards(tmp_path / "shards")
    parts = [list(iter_source(source, p, 2, [], Counter())) for p in range(2)]
    ids = [[d.doc_id for d in docs] for docs in parts]
    # 4 shards over 2 parts: whole shards per part, every document once
    assert ids == [["s0-0", "s0-1", "s0-2", "s2-0", "s2-1", "s2-2"], ["s1-0", "s1-1", "s1-2", "s3-0", "s3-1", "s3-2"]]
    assert parts[1][0].location == "repo1/f0.py" and parts[1][0].data == "def f1_0(x):\n    return x * 0 + 1\n"


def _read_shards(monkeypatch) -> list[str]:
    """The names of the shard files ``datasets`` reads, in order, from now on."""
    from datasets.packaged_modules.parquet.parquet import Parquet

    read = []
    real = Parquet._generate_tables

    def generate_tables(self, files, row_groups_list):
        for file in files:
            read.append(str(file).rsplit("/", 1)[-1])
        yield from real(self, files, row_groups_list)

    monkeypatch.setattr(Parquet, "_generate_tables", generate_tables)
    return read


def test_three_parts_over_four_shards_read_each_shard_once(tmp_path, monkeypatch):
    source = _shards(tmp_path / "shards")
    opened = _read_shards(monkeypatch)
    parts, reads = [], []
    for p in range(3):
        parts.append([d.doc_id for d in iter_source(source, p, 3, [], Counter())])
        reads.append(list(opened))
        opened.clear()
    # shard k goes to part k % 3: whole shards, every document once, every file opened by one part only
    assert parts == [
        ["s0-0", "s0-1", "s0-2", "s3-0", "s3-1", "s3-2"],
        ["s1-0", "s1-1", "s1-2"],
        ["s2-0", "s2-1", "s2-2"],
    ]
    assert reads == [
        ["train-00000-of-00004.parquet", "train-00003-of-00004.parquet"],
        ["train-00001-of-00004.parquet"],
        ["train-00002-of-00004.parquet"],
    ]


def test_more_parts_than_shards_leave_the_last_parts_empty(tmp_path, caplog):
    source = _shards(tmp_path / "shards", n_shards=2)
    parts = [[d.doc_id for d in iter_source(source, p, 3, [], Counter())] for p in range(3)]
    assert parts == [["s0-0", "s0-1", "s0-2"], ["s1-0", "s1-1", "s1-2"], []]
    assert "part 2 has no file to read (at most 2 parts have work)" in caplog.text


def test_a_copy_in_a_streamed_shard_is_found_by_its_part(tmp_path):
    source = _shards(tmp_path / "shards", planted=(3, "import sys\n\n\n" + SOLUTION))
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"id": "1", "text": "Running maximum of a list.", "code": SOLUTION}) + "\n")
    ingest_benchmark(
        "b",
        BenchmarkEntry(format="jsonl", path=str(bench), fields={"id": "id", "text": "text", "solution": "code"}),
        tmp_path / "b.parquet",
    )
    scan = {
        "benchmark": "b",
        "granularity": "function",
        "min_tokens": 5,
        "max_bytes": 1_000_000,
        "huge": "chunk",
        "batch_size": 8,
        "language": "python",
        "corpus": source,
    }
    scan = scan_slice(scan)
    build_index("t", (tmp_path / "b.parquet",), scan, tmp_path / "index.parquet")
    outs = []
    for part in range(2):
        outs.append((tmp_path / f"pairs{part}.parquet", tmp_path / f"acc{part}.parquet"))
        scan_shard("t", tmp_path / "index.parquet", (tmp_path / "b.parquet",), scan, part, 2, *outs[-1])
    per_part = [[p for p in read_records(pairs) if p["duplicate"]] for pairs, _ in outs]
    assert [len(p) for p in per_part] == [0, 1] and per_part[1][0]["location"].startswith("repo3/f1.py")
    documents = [sum(r["count"] for r in read_records(acc) if r["reason"] == "documents") for _, acc in outs]
    assert documents == [6, 6]
    gather(
        "t",
        tmp_path / "index.parquet",
        {"b": tmp_path / "b.parquet"},
        tuple(o[0] for o in outs),
        tuple(o[1] for o in outs),
        scan,
        tmp_path / "out",
    )
    found = [
        (p["sample_id"], p["doc_id"], p["clone_type"])
        for p in read_records(tmp_path / "out" / "pairs.parquet")
        if p["duplicate"]
    ]
    assert found == [("b/1", "s3-1", "type-1")]
