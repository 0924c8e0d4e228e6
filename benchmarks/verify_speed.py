"""Speed of ``verify-pairs``' library path (execution off, the shipped learned
verifier) on LessLeak-Bench's human-labelled development pairs
(``resources/verify/lessleak-human-pairs-dev.jsonl.gz``, 2,695 pairs, each
with its benchmark's language as ``train-verifier`` reads them).

Prints pairs per second per core (CPU seconds, ``time.process_time``, so a
machine shared with other jobs does not deflate them; wall seconds beside
them) and a digest of every verdict's row. ``--baseline`` measures another
leaktrace source tree (e.g. main's ``workflow`` folder) in a child process,
alternating with this tree round by round in the same run; the digests must
agree (the verdicts are the same values, byte for byte).

    .venv/bin/python benchmarks/verify_speed.py [--pairs N] [--rounds 3] [--baseline ../main/workflow]
        [--profile verify.prof]

A round verifies every pair once with a new :class:`Verifier`: nothing is
carried from one round to the next.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from leaktrace.leakage import combiner
from leaktrace.leakage.labelled import read_labelled
from leaktrace.leakage.pairs import settings_for, verify_records
from leaktrace.leakage.verify import Verifier

DEV = combiner.SHIPPED.parent / "lessleak-human-pairs-dev.jsonl.gz"


def run_once(pairs: list[dict]) -> tuple[float, float, str, int]:
    """(CPU seconds, wall seconds, digest of the verdict rows, duplicates) of one pass over ``pairs``."""
    t0, c0 = time.perf_counter(), time.process_time()
    verifier = Verifier(settings_for("default", False, model="shipped"))
    verdicts = verify_records(pairs, verifier)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    rows = json.dumps([v.as_row() for v in verdicts], sort_keys=True).encode()
    return cpu, wall, hashlib.sha256(rows).hexdigest()[:16], sum(v.duplicate for v in verdicts)


def child(tree: str, n: int | None) -> tuple[float, float, str, int]:
    """:func:`run_once` with the leaktrace package of ``tree`` (a child process, after its own warm-up)."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
    cmd = [sys.executable, __file__, "--only-once"] + (["--pairs", str(n)] if n is not None else [])
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return tuple(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=None, help="only the first PAIRS pairs (default: all)")
    ap.add_argument("--rounds", type=int, default=3, help="timed passes (alternating with --baseline's)")
    ap.add_argument("--baseline", default=None, help="another leaktrace source tree (its workflow/ folder)")
    ap.add_argument("--profile", default=None, help="write a cProfile of one pass to this file (and print its top)")
    ap.add_argument("--only-once", action="store_true", help=argparse.SUPPRESS)  # the child process of --baseline
    args = ap.parse_args()
    pairs = read_labelled(Path(DEV))[: args.pairs]
    run_once(pairs[:50])  # warm-up: the model file, compiled patterns
    if args.only_once:
        print(json.dumps(run_once(pairs)))
        return
    if args.profile:
        import pstats

        prof = cProfile.Profile(time.process_time)  # CPU seconds: the machine may be shared
        prof.runcall(run_once, pairs)
        prof.dump_stats(args.profile)
        pstats.Stats(args.profile).sort_stats("tottime").print_stats(20)
        return
    print(
        f"verify-pairs, execution off, shipped verifier: {len(pairs)} human-labelled dev pairs ({os.cpu_count()} cores)"
    )
    print(
        f"{'tree':<10} {'round':>5} {'cpu s':>7} {'wall s':>7} {'pairs/s/core':>13} {'pairs/s wall':>13} {'dup':>5}  digest"
    )
    best: dict[str, float] = {}
    digests: dict[str, set[str]] = {}
    for r in range(args.rounds):
        trees = [("this", None)] + ([("baseline", args.baseline)] if args.baseline else [])
        for name, tree in trees if r % 2 == 0 else reversed(trees):
            cpu, wall, digest, dup = run_once(pairs) if tree is None else child(tree, args.pairs)
            best[name] = min(best.get(name, cpu), cpu)
            digests.setdefault(name, set()).add(digest)
            print(
                f"{name:<10} {r:>5} {cpu:>7.2f} {wall:>7.2f} {len(pairs) / cpu:>13.0f} {len(pairs) / wall:>13.0f} {dup:>5}  {digest}"
            )
    line = f"best: this tree {len(pairs) / best['this']:.0f} pairs/s/core"
    if args.baseline:
        same = digests["this"] == digests["baseline"] and len(digests["this"]) == 1
        line += (
            f", baseline {len(pairs) / best['baseline']:.0f} pairs/s/core -> this tree is "
            f"{best['baseline'] / best['this']:.2f}x faster; verdicts {'identical' if same else 'DIFFER'}"
        )
    print(line)


if __name__ == "__main__":
    main()
