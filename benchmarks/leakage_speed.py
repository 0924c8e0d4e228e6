"""Speed of the leakage scan's signature + query path on the standard library.

Prints, side by side in one run, files per second per core for
(a) our batched signatures + LSH query (default scheme, and the lessleak preset),
(b) the naive loop: a new ``datasketch.MinHash()`` per file and ``update()`` per
    shingle, then ``MinHashLSH.query``, on the same files,
the scaling of (a) from 1 to 2 worker processes, and (a) with one benchmark
indexed against (a) with ``--benchmarks`` indexed at once (a scan of several
benchmarks streams the corpus once through one index; here HumanEval's
signatures repeated under new ids, the worst case: every hit is a hit on all).

    .venv/bin/python benchmarks/leakage_speed.py [--naive-files 300] [--benchmarks 10] [--files N]
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from datasketch import MinHash, MinHashLSH
from leaktrace.data.corpora import iter_stdlib_code
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.leakage.lsh import BandIndex
from leaktrace.leakage.minhash import Signer
from leaktrace.leakage.settings import resolve


def _texts() -> list[str]:
    return [d.text for d in iter_stdlib_code()]


def _index(settings, signer, copies: int = 1):
    bench = [s.code for s in load_humaneval(shipped_humaneval_path(), "humaneval")]
    sigs = signer.signatures([signer.shingle_hashes(t)[1] for t in bench])
    index = BandIndex(settings.bands, settings.rows)
    index.insert(list(range(len(bench) * copies)), np.tile(sigs, (copies, 1)))
    return index, bench


def fast(preset: str, texts: list[str], batch: int = 256, benchmarks: int = 1) -> tuple[float, int]:
    """Seconds for signatures + queries of ``texts`` against ``benchmarks``
    copies of HumanEval in one index, and the number of candidate pairs."""
    s = resolve(preset, {"preset": preset})
    signer = Signer(s.minhash)
    index, _ = _index(s, signer, benchmarks)
    t0 = time.perf_counter()
    found = 0
    for i in range(0, len(texts), batch):
        chunk = texts[i : i + batch]
        sigs = signer.signatures([signer.shingle_hashes(t)[1] for t in chunk])
        found += sum(len(c) for c in index.query(sigs))
    return time.perf_counter() - t0, found


def naive(preset: str, texts: list[str]) -> tuple[float, int]:
    s = resolve(preset, {"preset": preset})
    signer = Signer(s.minhash)
    _, bench = _index(s, signer)
    lsh = MinHashLSH(num_perm=s.minhash.num_perm, params=(s.bands, s.rows))
    for k, t in enumerate(bench):
        lsh.insert(k, s.minhash.datasketch_minhash(t))
    t0 = time.perf_counter()
    found = 0
    for t in texts:
        m = s.minhash
        mh = MinHash(num_perm=m.num_perm, seed=m.seed, scheme=m.scheme, hashfunc=m.hashfunc())
        for value in m.datasketch_values(t):
            mh.update(value)
        found += len(lsh.query(mh))
    return time.perf_counter() - t0, found


def _worker(args):
    preset, texts = args
    return fast(preset, texts)[0]


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
    ap.add_argument("--files", type=int, default=None, help="only the first FILES standard-library files (default: all)")
    args = ap.parse_args()
    texts = _texts()[: args.files]
    sample = texts[:: max(1, len(texts) // args.naive_files)][: args.naive_files]
    print(f"standard library: {len(texts)} .py files, {sum(map(len, texts)) / 1e6:.1f} MB; naive loop on {len(sample)} of them"
          f" ({os.cpu_count()} cores)")
    print(f"{'scheme':<10} {'path':<28} {'files':>6} {'seconds':>8} {'files/s/core':>13}")
    results = {}
    for preset in ("default", "lessleak"):
        fast(preset, texts[:20])  # warm-up (permutations, powers)
        secs, _ = fast(preset, texts)
        results[(preset, "fast")] = len(texts) / secs
        print(f"{preset:<10} {'ours: batched + band query':<28} {len(texts):>6} {secs:>8.2f} {len(texts) / secs:>13.0f}")
        secs_s, _ = fast(preset, sample)
        secs_n, _ = naive(preset, sample)
        results[(preset, "naive")] = len(sample) / secs_n
        print(f"{preset:<10} {'ours, same files as naive':<28} {len(sample):>6} {secs_s:>8.2f} {len(sample) / secs_s:>13.0f}")
        print(f"{preset:<10} {'naive MinHash()+update()':<28} {len(sample):>6} {secs_n:>8.2f} {len(sample) / secs_n:>13.0f}"
              f"   -> ours is {secs_n / len(sample) / (secs_s / len(sample)):.1f}x faster")
    for n in (1, args.benchmarks):
        secs, found = fast("default", texts, benchmarks=n)
        print(f"default, {n:>2} benchmark(s) indexed: {len(texts) / secs:.0f} files/s/core ({found} candidate pairs)")
    one = parallel("default", texts, 1)
    two = parallel("default", texts, 2)
    print(f"default scaling: 1 worker {len(texts) / one:.0f} files/s, 2 workers {len(texts) / two:.0f} files/s "
          f"(speed-up {one / two:.2f}x)")


if __name__ == "__main__":
    np.seterr(over="ignore")
    main()
