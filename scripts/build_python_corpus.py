"""A corpus of real Python code built offline from what the machine has: every
``.py`` file of the environment's site-packages and of the interpreter's
standard library (its own ``site-packages``/``dist-packages`` left out),
deduplicated by content (SHA-256: the first path in sorted order keeps a
content), written as Parquet shards for a ``kind: parquet`` scan
(config/experiments/python-corpus.yaml).

Each shard is one Parquet file of one row group with the columns ``path``
(``site-packages/<relative path>`` or ``stdlib/<relative path>``: no
machine's prefix) and ``content`` (the file's text; a file that is not UTF-8
is left out and counted). Files go round-robin to the shards in sorted path
order (file *i* to shard *i* mod ``--shards``), so the shards are alike in
size and mix; a scan with ``shards`` equal to ``--shards`` reads one file per
job (its row group; sources.py gives row group *k* of the glob to job *k* mod
n). The same inputs give the same bytes every run (sorted, fixed compression,
no timestamps). ``manifest.json`` beside the shards lists each shard's files,
bytes and SHA-256.

    .venv/bin/python scripts/build_python_corpus.py --out resources/python-corpus --shards 16
    .venv/bin/python scripts/build_python_corpus.py --out /tmp/small --shards 4 --limit 200
    (--site-packages DIR, --stdlib DIR: other trees than this interpreter's)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import sysconfig
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

EXCLUDED_DIRS = {"site-packages", "dist-packages", "__pycache__"}  # under the stdlib: not the standard library


def python_files(root: Path, label: str, skip_dirs: set[str]) -> list[tuple[str, Path]]:
    """``(label/relative path, path)`` of every regular ``.py`` file under ``root``
    (links neither followed nor read), sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip_dirs)
        for name in filenames:
            path = Path(dirpath, name)
            if name.endswith(".py") and not path.is_symlink() and path.is_file():
                found.append((f"{label}/{path.relative_to(root).as_posix()}", path))
    return sorted(found)


def collect(roots: list[tuple[str, Path, set[str]]], limit: int | None) -> tuple[list[tuple[str, str]], dict]:
    """The corpus's documents, ``(path, content)`` sorted by path, one per
    distinct content, and the counts of what was left out."""
    candidates = sorted(entry for label, root, skip in roots for entry in python_files(root, label, skip))
    seen: set[bytes] = set()
    docs, counts = [], {"files": len(candidates), "duplicates": 0, "not_utf8": 0, "unreadable": 0}
    for name, path in candidates:
        if limit is not None and len(docs) >= limit:
            break
        try:
            data = path.read_bytes()
        except OSError:
            counts["unreadable"] += 1
            continue
        digest = hashlib.sha256(data).digest()
        if digest in seen:
            counts["duplicates"] += 1
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            counts["not_utf8"] += 1
            continue
        seen.add(digest)
        docs.append((name, text))
    return docs, counts


def write_shards(docs: list[tuple[str, str]], out: Path, shards: int) -> list[dict]:
    """Shard *k* (``shard-00k-of-0n.parquet``) holds documents *k*, *k* + n, ...; one row group a file."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("shard-*.parquet"):  # a rerun with fewer shards leaves none of the last run's behind
        old.unlink()
    written = []
    for k in range(shards):
        mine = docs[k::shards]
        table = pa.table(
            {
                "path": pa.array([p for p, _ in mine], pa.string()),
                "content": pa.array([t for _, t in mine], pa.string()),
            }
        )
        path = out / f"shard-{k:03d}-of-{shards:03d}.parquet"
        pq.write_table(table, path, row_group_size=max(len(mine), 1), compression="zstd", compression_level=3)
        written.append(
            {
                "file": path.name,
                "files": len(mine),
                "bytes": sum(len(t.encode("utf-8")) for _, t in mine),
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            }
        )
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="directory of the shards (created; old shards removed)")
    parser.add_argument("--shards", type=int, default=16, help="Parquet files, one row group each (default 16)")
    parser.add_argument("--limit", type=int, default=None, help="keep the first N distinct files only (a small test)")
    parser.add_argument(
        "--site-packages",
        type=Path,
        default=Path(sysconfig.get_paths()["purelib"]),
        help="default: this interpreter's (the venv's) site-packages",
    )
    parser.add_argument(
        "--stdlib",
        type=Path,
        default=Path(sysconfig.get_paths()["stdlib"]),
        help="default: this interpreter's standard library",
    )
    args = parser.parse_args(argv)
    if args.shards < 1:
        parser.error("--shards must be at least 1")
    roots = [("site-packages", args.site_packages, {"__pycache__"}), ("stdlib", args.stdlib, EXCLUDED_DIRS)]
    for _, root, _ in roots:
        if not root.is_dir():
            parser.error(f"{root} is not a directory")
    docs, counts = collect(roots, args.limit)
    shards = write_shards(docs, args.out, args.shards)
    total = sum(s["bytes"] for s in shards)
    manifest = {
        "documents": len(docs),
        "bytes": total,
        "left_out": counts,
        "python": sys.version.split()[0],
        "shards": shards,
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(
        f"{len(docs):,} distinct .py files, {total / 1e6:.1f} MB, in {args.shards} shards under {args.out} "
        f"({counts['files']:,} files seen: {counts['duplicates']:,} duplicates, {counts['not_utf8']} not UTF-8, "
        f"{counts['unreadable']} unreadable left out)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
