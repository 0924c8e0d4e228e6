"""Speed of the leakage scan's signature + query path on the standard library.

Prints, side by side in one run, files per second per core for
(a) our batched signatures + LSH query (default scheme, and the lessleak preset),
(b) the naive loop: a new ``datasketch.MinHash()`` per file and ``update()`` per
    shingle, then ``MinHashLSH.query``, on the same files,
(c) datasketch as its documentation uses it, on every file: the same
    shingles (Python tokenising, as the naive loop) hashed by its default
    hash (SHA-1, 32 bits) and added with one ``update_batch`` per file, then
    ``MinHashLSH.query``,
(d) rensa on every file (Rust MinHash, an optional benchmark dependency, not in
    requirements.lock: ``pip install rensa``; left out with a message when
    absent): ``RMinHash.update`` with the same shingle strings per file, then
    ``RMinHashLSH.query`` with the preset's number of bands,
the scaling of (a) from 1 to 2 worker processes, and (a) with one benchmark
indexed against (a) with ``--benchmarks`` indexed at once (a scan of several
benchmarks streams the corpus once through one index; here HumanEval's
signatures repeated under new ids, the worst case: every hit is a hit on all).

    .venv/bin/python benchmarks/leakage_speed.py [--naive-files 300] [--benchmarks 10] [--files N]
        [--baseline ../main/workflow]

Files per second per core are counted on CPU seconds (``time.process_time``),
so a machine shared with other jobs does not deflate them; the wall-clock
seconds are printed beside them. ``--baseline`` measures the batched path of
another leaktrace source tree (e.g. main's ``workflow`` folder) in a child
process of the same run, on the same files, for a before/after line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from datasketch import MinHash, MinHashLSH

from leaktrace.data.corpora import iter_stdlib_code
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.leakage.lsh import BandIndex
from leaktrace.leakage.minhash import Signer
from leaktrace.leakage.settings import resolve
from leaktrace.leakage.tokens import tokenizer_shingles


def preset_settings(preset: str):
    """A scan of ``preset`` with nothing overridden, resolved (in a tree from before the typed scan slice too: ``--baseline``)."""
    try:
        from leaktrace.leakage.settings import scan_slice
    except ImportError:
        return resolve(preset, {"preset": preset})
    return resolve(preset, scan_slice({"preset": preset, "corpus": {"kind": "files", "root": "."}}))


def _texts() -> list[str]:
    return [d.text for d in iter_stdlib_code()]


def _index(settings, signer, copies: int = 1):
    bench = [s.code for s in load_humaneval(shipped_humaneval_path(), "humaneval")]
    sigs = signer.signatures([signer.shingle_hashes(t)[1] for t in bench])
    index = BandIndex(settings.bands, settings.rows)
    index.insert(list(range(len(bench) * copies)), np.tile(sigs, (copies, 1)))
    return index, bench


def fast(preset: str, texts: list[str], batch: int = 256, benchmarks: int = 1) -> tuple[float, int, float]:
    """CPU seconds for signatures + queries of ``texts`` against ``benchmarks``
    copies of HumanEval in one index, the number of candidate pairs, and the
    wall-clock seconds."""
    s = preset_settings(preset)
    signer = Signer(s.minhash)
    index, _ = _index(s, signer, benchmarks)
    t0, c0 = time.perf_counter(), time.process_time()
    found = 0
    for i in range(0, len(texts), batch):
        chunk = texts[i : i + batch]
        sigs = signer.signatures([signer.shingle_hashes(t)[1] for t in chunk])
        found += sum(len(c) for c in index.query(sigs))
    return time.process_time() - c0, found, time.perf_counter() - t0


def baseline(tree: str, preset: str, files: int | None, sample: int | None) -> tuple[float, int, float]:
    """:func:`fast` run with the leaktrace package of ``tree`` (a child process)."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
    cmd = [sys.executable, __file__, "--only-fast", preset, "--naive-files", str(sample or 0)]
    cmd += ["--files", str(files)] if files is not None else []
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return tuple(json.loads(out.strip().splitlines()[-1]))


def naive(preset: str, texts: list[str]) -> tuple[float, int, float]:
    s = preset_settings(preset)
    signer = Signer(s.minhash)
    _, bench = _index(s, signer)
    lsh = MinHashLSH(num_perm=s.minhash.num_perm, params=(s.bands, s.rows))
    for k, t in enumerate(bench):
        lsh.insert(k, s.minhash.datasketch_minhash(t))
    t0, c0 = time.perf_counter(), time.process_time()
    found = 0
    for t in texts:
        m = s.minhash
        mh = MinHash(num_perm=m.num_perm, seed=m.seed, scheme=m.scheme, hashfunc=m.hashfunc())
        for value in m.datasketch_values(t):
            mh.update(value)
        found += len(lsh.query(mh))
    return time.process_time() - c0, found, time.perf_counter() - t0


def _shingle_strings(preset: str, texts: list[str]) -> list[list[str]]:
    m = preset_settings(preset).minhash
    return [tokenizer_shingles(t, m.tokenizer, m.ngram) for t in texts]


def datasketch_batched(preset: str, texts: list[str]) -> tuple[float, int, float]:
    """datasketch's ordinary use: its default hash, one ``update_batch`` per file (shingling in Python included)."""
    s = preset_settings(preset)
    m = s.minhash
    lsh = MinHashLSH(num_perm=m.num_perm, params=(s.bands, s.rows))
    for k, shingles in enumerate(_shingle_strings(preset, [b.code for b in _bench()])):
        mh = MinHash(num_perm=m.num_perm, seed=m.seed, scheme=m.scheme)
        mh.update_batch([x.encode("utf-8") for x in shingles])
        lsh.insert(k, mh)
    t0, c0 = time.perf_counter(), time.process_time()
    found = 0
    for t in texts:
        mh = MinHash(num_perm=m.num_perm, seed=m.seed, scheme=m.scheme)
        mh.update_batch([x.encode("utf-8") for x in tokenizer_shingles(t, m.tokenizer, m.ngram)])
        found += len(lsh.query(mh))
    return time.process_time() - c0, found, time.perf_counter() - t0


def rensa_loop(preset: str, texts: list[str]) -> tuple[float, int, float] | None:
    """rensa's MinHash and LSH on the same shingle strings (None: rensa is not installed); its bands must
    divide its permutations, so it computes the ones the bands read (lessleak: 250 of 256)."""
    try:
        from rensa import RMinHash, RMinHashLSH
    except ImportError:
        return None
    s = preset_settings(preset)
    m = s.minhash
    perms = s.bands * s.rows
    lsh = RMinHashLSH(threshold=s.verify.jaccard, num_perm=perms, num_bands=s.bands)
    for k, shingles in enumerate(_shingle_strings(preset, [b.code for b in _bench()])):
        rm = RMinHash(num_perm=perms, seed=m.seed)
        rm.update(shingles)
        lsh.insert(k, rm)
    t0, c0 = time.perf_counter(), time.process_time()
    found = 0
    for t in texts:
        rm = RMinHash(num_perm=perms, seed=m.seed)
        rm.update(tokenizer_shingles(t, m.tokenizer, m.ngram))
        found += len(lsh.query(rm))
    return time.process_time() - c0, found, time.perf_counter() - t0


def _bench():
    return load_humaneval(shipped_humaneval_path(), "humaneval")


def _worker(args):
    preset, texts = args
    return fast(preset, texts)[2]


def parallel(preset: str, texts: list[str], workers: int) -> float:
    """Wall seconds for ``texts`` split over ``workers`` processes (round-robin)."""
    parts = [(preset, texts[i::workers]) for i in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        t0 = time.perf_counter()
        list(pool.map(_worker, parts))
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--naive-files", type=int, default=300, help="files for the (slow) naive loop")
    ap.add_argument("--benchmarks", type=int, default=10, help="benchmarks indexed at once for the one-pass line")
    ap.add_argument(
        "--files", type=int, default=None, help="only the first FILES standard-library files (default: all)"
    )
    ap.add_argument(
        "--baseline", default=None, help="another leaktrace source tree (its workflow/ folder) to measure too"
    )
    ap.add_argument("--only-fast", default=None, help=argparse.SUPPRESS)  # the child process of --baseline
    ap.add_argument("--skip-scaling", action="store_true", help="leave out the index-size and worker-scaling lines")
    args = ap.parse_args()
    texts = _texts()[: args.files]
    if args.only_fast:
        fast(args.only_fast, texts[:20])  # warm-up (permutations, powers, compiled code)
        print(json.dumps(fast(args.only_fast, texts)))
        return
    sample = texts[:: max(1, len(texts) // args.naive_files)][: args.naive_files]
    print(
        f"standard library: {len(texts)} .py files, {sum(map(len, texts)) / 1e6:.1f} MB; naive loop on {len(sample)} of them"
        f" ({os.cpu_count()} cores; files/s/core on CPU seconds, wall seconds beside them)"
    )
    print(f"{'scheme':<10} {'path':<28} {'files':>6} {'cpu s':>8} {'wall s':>8} {'files/s/core':>13}")

    def line(preset: str, path: str, n: int, cpu: float, wall: float, extra: str = "") -> None:
        print(f"{preset:<10} {path:<28} {n:>6} {cpu:>8.2f} {wall:>8.2f} {n / cpu:>13.0f}{extra}")

    for preset in ("default", "lessleak"):
        fast(preset, texts[:20])  # warm-up (permutations, powers, compiled code)
        cpu, _, wall = fast(preset, texts)
        line(preset, "ours: batched + band query", len(texts), cpu, wall)
        if args.baseline:
            cpu_b, _, wall_b = baseline(args.baseline, preset, args.files, None)
            line(
                preset,
                "baseline tree, same path",
                len(texts),
                cpu_b,
                wall_b,
                f"   -> ours is {cpu_b / cpu:.1f}x faster",
            )
        cpu_s, _, wall_s = fast(preset, sample)
        cpu_n, _, wall_n = naive(preset, sample)
        line(preset, "ours, same files as naive", len(sample), cpu_s, wall_s)
        line(
            preset, "naive MinHash()+update()", len(sample), cpu_n, wall_n, f"   -> ours is {cpu_n / cpu_s:.1f}x faster"
        )
        # the batched anchors are fast enough for every file: their ratios are against ours on every file
        cpu_d, _, wall_d = datasketch_batched(preset, texts)
        line(preset, "datasketch update_batch", len(texts), cpu_d, wall_d, f"   -> ours is {cpu_d / cpu:.1f}x faster")
        rensa = rensa_loop(preset, texts)
        if rensa is None:
            print(f"{preset:<10} rensa: not installed (an optional benchmark dependency: pip install rensa); left out")
        else:
            cpu_r, _, wall_r = rensa
            line(preset, "rensa RMinHash + LSH", len(texts), cpu_r, wall_r, f"   -> ours is {cpu_r / cpu:.1f}x faster")
    if args.skip_scaling:
        return
    for n in (1, args.benchmarks):
        cpu, found, _ = fast("default", texts, benchmarks=n)
        print(f"default, {n:>2} benchmark(s) indexed: {len(texts) / cpu:.0f} files/s/core ({found} candidate pairs)")
    one = parallel("default", texts, 1)
    two = parallel("default", texts, 2)
    print(
        f"default scaling (wall): 1 worker {len(texts) / one:.0f} files/s, 2 workers {len(texts) / two:.0f} files/s "
        f"(speed-up {one / two:.2f}x)"
    )


if __name__ == "__main__":
    np.seterr(over="ignore")
    main()
