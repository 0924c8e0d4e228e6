"""What one ``leakage_scan`` job costs per corpus file: the whole job
(reading, splitting into units, both candidate channels, LSH queries, and
the pairs it writes), not the signature pass alone. HumanEval is indexed; the
standard library's .py files, written to one Parquet file as a corpus shard
would be, are scanned as one part; CPU seconds, files per
CPU second and the process's peak resident memory are printed for each
preset. The figures feed the Stack-v2-sized plan in
docs/guides/scan-a-corpus.md.

    .venv/bin/python benchmarks/scan_cost.py [--presets default lessleak] [--files N]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from leaktrace.artifacts import read_records
from leaktrace.data.corpora import iter_stdlib_code
from leaktrace.data.humaneval import shipped_humaneval_path
from leaktrace.stages.ingest import ingest_benchmark
from leaktrace.stages.leakage import build_index, scan_shard


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", nargs="+", default=["default", "lessleak"])
    ap.add_argument(
        "--files", type=int, default=None, help="only the first FILES standard-library files (default: all)"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        docs = list(iter_stdlib_code())[: args.files]
        pq.write_table(
            pa.table({"content": [d.text for d in docs], "path": [d.doc_id for d in docs]}), tmp / "stdlib.parquet"
        )
        corpus = {
            "kind": "parquet",
            "paths": [str(tmp / "stdlib.parquet")],
            "content": "content",
            "id": "path",
            "location": "path",
        }
        ingest_benchmark("humaneval", {"format": "humaneval", "path": str(shipped_humaneval_path())}, tmp / "b.parquet")
        for preset in args.presets:
            scan = {"name": preset, "benchmark": "humaneval", "preset": preset, "corpus": corpus}
            build_index(tmp / "b.parquet", scan, tmp / f"index-{preset}.parquet")
            t0, c0 = time.perf_counter(), time.process_time()
            scan_shard(
                tmp / f"index-{preset}.parquet",
                tmp / "b.parquet",
                scan["corpus"],
                0,
                1,
                [],
                scan,
                tmp / f"pairs-{preset}.parquet",
                tmp / f"acc-{preset}.parquet",
            )
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            counts = {
                r["reason"]: r["count"] for r in read_records(tmp / f"acc-{preset}.parquet") if r["kind"] == "count"
            }
            files = counts["documents"]
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(
                f"{preset:<9} scan job: {files} files, {counts['units']} units, {counts.get('candidate_units', 0)} candidate units;"
                f" {cpu:.1f} CPU s ({wall:.1f} wall s): {files / cpu:.0f} files per CPU second, {1000 * cpu / files:.2f} ms"
                f" a file; peak RSS so far {rss:.0f} MB"
            )


if __name__ == "__main__":
    main()
