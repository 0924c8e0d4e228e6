"""What one ``leakage_scan`` job costs per corpus file: the whole job
(reading, splitting into units, both candidate channels, LSH queries, and
the pairs it writes), not the signature pass alone. HumanEval is indexed; the
standard library's .py files, written to one Parquet file as a corpus shard
would be, are scanned as one part; CPU seconds, files per
CPU second, CPU seconds per MB of source (and the core-hours a TB would
take at that rate) and the process's peak resident memory are printed for
each preset. The figures feed the Stack-v2-sized plan in
docs/guides/scan-a-corpus.md.

With ``--baseline TREE`` (a checkout of another commit, e.g. made with
``git archive <commit> | tar -x -C TREE``) each scan runs in a fresh process
per tree, the two trees alternating ``--repeats`` times on the same corpus and
benchmark table (so the machine's load falls on both alike); the fastest run
of each counts, and the ratio of CPU seconds is printed, with a digest of the
scan's output tables (its pairs and accounting, and everything ``gather``
writes from them) from each tree: equal digests, equal outputs.

    .venv/bin/python benchmarks/scan_cost.py [--presets default lessleak] [--files N] [--baseline TREE] [--repeats 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve()
WARM_FILES = 40  # an untimed scan of this many files first: compiled kernels and caches are loaded in every tree alike


def write_corpus(tmp: Path, files: int | None) -> dict:
    """The standard library as one Parquet corpus shard, and HumanEval ingested, under ``tmp``; the corpus source."""
    from leaktrace.data.corpora import iter_stdlib_code
    from leaktrace.data.humaneval import shipped_humaneval_path
    from leaktrace.settings.ingest import BenchmarkEntry
    from leaktrace.stages.ingest import ingest_benchmark

    docs = list(iter_stdlib_code())[:files]
    table = pa.table({"content": [d.text for d in docs], "path": [d.doc_id for d in docs]})
    pq.write_table(table, tmp / "stdlib.parquet")
    pq.write_table(table.slice(0, WARM_FILES), tmp / "warm.parquet")
    ingest_benchmark(
        "humaneval", BenchmarkEntry(format="humaneval", path=str(shipped_humaneval_path())), tmp / "b.parquet"
    )
    return corpus_source(tmp / "stdlib.parquet")


def corpus_source(path: Path) -> dict:
    return {"kind": "parquet", "paths": [str(path)], "content": "content", "id": "path", "location": "path"}


def digest(paths: list[Path]) -> str:
    """A digest of the rows of Parquet tables (their values, in order) and of text files."""
    h = hashlib.sha256()
    for path in paths:
        if path.suffix == ".parquet":
            for row in pq.read_table(path).to_pylist():
                h.update(repr(sorted(row.items())).encode("utf-8"))
        else:
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def run_scan(tmp: Path, preset: str, out: Path) -> dict:
    """Index HumanEval and scan the corpus as one job (timed), then gather; the job's figures and the outputs' digest."""
    from leaktrace.artifacts import read_records

    out.mkdir(parents=True, exist_ok=True)
    index, bench, pairs, accounting = (
        out / "index.parquet",
        tmp / "b.parquet",
        out / "pairs.parquet",
        out / "accounting.parquet",
    )
    job = _job(preset)
    job("index", corpus_source(tmp / "stdlib.parquet"), bench, index)
    job("scan", corpus_source(tmp / "warm.parquet"), index, bench, out / "wp.parquet", out / "wa.parquet")
    t0, c0 = time.perf_counter(), time.process_time()
    job("scan", corpus_source(tmp / "stdlib.parquet"), index, bench, pairs, accounting)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    counts = {r["reason"]: r["count"] for r in read_records(accounting) if r["kind"] == "count"}
    texts = pq.read_table(tmp / "stdlib.parquet", columns=["content"]).column("content").to_pylist()
    job("gather", corpus_source(tmp / "stdlib.parquet"), index, bench, pairs, accounting, out / "gathered")
    tables = ["pairs.parquet", "summary.parquet", "sources.parquet", "accounting.parquet", "clean.parquet", "report.md"]
    return {
        "preset": preset,
        "cpu": cpu,
        "wall": wall,
        "files": counts["documents"],
        "mb": sum(len(t.encode("utf-8")) for t in texts) / 1e6,
        "units": counts["units"],
        "candidates": counts.get("candidate_units", 0),
        "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "digest": digest([pairs, accounting] + [out / "gathered" / t for t in tables]),
    }


def _job(preset: str):
    """The scan's three stages as ``job(stage, corpus, *paths)``, through the stage functions of the tree on the
    path: their typed signatures (a scan slice, leaktrace.settings.leakage), or, in a tree from before them, the
    signatures that took the scan's config as a dict (so ``--baseline`` may name either)."""
    from leaktrace.stages import leakage

    try:
        from leaktrace.leakage.settings import scan_slice
    except ImportError:  # a tree from before the typed signatures
        scan_slice = None

    def job(stage: str, corpus: dict, *paths: Path) -> None:
        if scan_slice is None:
            scan = {"name": preset, "benchmark": "humaneval", "preset": preset, "corpus": corpus}
            if stage == "index":
                leakage.build_index(paths[0], scan, paths[1])
            elif stage == "scan":
                index, bench, pairs, accounting = paths
                leakage.scan_shard(index, bench, corpus, 0, 1, [], scan, pairs, accounting)
            else:
                index, bench, pairs, accounting, out = paths
                leakage.gather(index, bench, [pairs], [accounting], scan, None, out)
            return
        scan = scan_slice({"preset": preset, "corpus": corpus})
        if stage == "index":
            leakage.build_index(preset, (paths[0],), scan, paths[1])
        elif stage == "scan":
            index, bench, pairs, accounting = paths
            leakage.scan_shard(preset, index, (bench,), scan, 0, 1, pairs, accounting)
        else:
            index, bench, pairs, accounting, out = paths
            leakage.gather(preset, index, {"humaneval": bench}, (pairs,), (accounting,), scan, out)

    return job


def line(r: dict) -> str:
    files, cpu = r["files"], r["cpu"]
    return (
        f"{r['preset']:<9} scan job: {files} files, {r['units']} units, {r['candidates']} candidate units;"
        f" {cpu:.1f} CPU s ({r['wall']:.1f} wall s): {files / cpu:.0f} files per CPU second, {1000 * cpu / files:.2f} ms"
        f" a file; {cpu / r['mb']:.3f} CPU s per MB of source ({cpu / r['mb'] * 1e6 / 3600:.0f} core-hours per TB);"
        f" peak RSS so far {r['rss']:.0f} MB"
    )


def in_tree(tree: Path, args: list[str], script: Path = HERE) -> dict:
    """Run a benchmark script's worker (this tree's script) with ``tree``'s library, in a fresh process; its result."""
    env = {**os.environ, "PYTHONPATH": str(tree / "workflow")}
    done = subprocess.run(
        [sys.executable, str(script), *args], env=env, check=True, stdout=subprocess.PIPE, text=True, cwd=tree
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(tmp: Path, baseline: Path, presets: list[str], repeats: int, worker_args: list[str]) -> None:
    """Each preset's job in the baseline tree and in this one, alternating; the ratio of their best CPU seconds."""
    this = HERE.parents[1]
    for preset in presets:
        runs: dict[str, list[dict]] = {"baseline": [], "this tree": []}
        for r in range(repeats):
            for name, tree in (("baseline", baseline), ("this tree", this)):
                runs[name].append(in_tree(tree, [*worker_args, "--worker", str(tmp), preset, f"{name}-{r}"]))
        best = {name: min(rs, key=lambda x: x["cpu"]) for name, rs in runs.items()}
        for name, r in best.items():
            print(f"{name:<10} {line(r)}; outputs {r['digest']}")
        digests = {r["digest"] for rs in runs.values() for r in rs}
        b, n = best["baseline"], best["this tree"]
        print(
            f"{preset} scan job vs baseline {baseline}: {b['cpu'] / n['cpu']:.2f}x fewer CPU seconds"
            f" ({n['files'] / n['cpu']:.0f} vs {b['files'] / b['cpu']:.0f} files per CPU second, best of {repeats}"
            f" alternating runs each); outputs {'identical' if len(digests) == 1 else 'DIFFERENT: ' + ', '.join(sorted(digests))}"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", nargs="+", default=["default", "lessleak"])
    ap.add_argument(
        "--files", type=int, default=None, help="only the first FILES standard-library files (default: all)"
    )
    ap.add_argument("--baseline", type=Path, help="another tree to compare with, in the same run")
    ap.add_argument("--repeats", type=int, default=2, help="alternating runs per tree with --baseline")
    ap.add_argument("--worker", nargs=3, metavar=("DIR", "PRESET", "NAME"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        tmp, preset, name = args.worker
        print(json.dumps(run_scan(Path(tmp), preset, Path(tmp) / name)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_corpus(tmp, args.files)
        if args.baseline is not None:
            compare(tmp, args.baseline.resolve(), args.presets, args.repeats, [])
            return
        for preset in args.presets:
            print(line(run_scan(tmp, preset, tmp / preset)))


if __name__ == "__main__":
    main()
