"""Threads per model job on this machine, measured side by side in one run:
(a) two model jobs one after the other, each with 2 torch threads, against
(b) the same two jobs side by side, each with 1 thread. A job is what a
scoring or generation rule does: load the shipped model, score HumanEval
texts, generate greedy continuations. Prints wall times and the ratio that
`base_model.threads` is chosen by.

    .venv/bin/python benchmarks/model_threads.py [--texts 160] [--new-tokens 32]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

JOB = """
import sys, torch
torch.set_num_threads(int(sys.argv[1]))
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.models.backend import ModelSpec
from leaktrace.models.hf import HFLanguageModel
texts = [s.code for s in load_humaneval(shipped_humaneval_path(), "h")][: int(sys.argv[2])]
lm = HFLanguageModel(ModelSpec("resources/models/leaktrace-tiny"), progress=False)
lm.score(texts)
lm.generate([lm.encode(t) for t in texts[:32]], max_new_tokens=int(sys.argv[3]))
"""


def job(threads: int, args) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", JOB, str(threads), str(args.texts), str(args.new_tokens)],
        env={**os.environ, "OMP_NUM_THREADS": str(threads)},
    )  # as Snakemake sets it


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=160)
    parser.add_argument("--new-tokens", type=int, default=32)
    args = parser.parse_args()

    def serial_two_threads():
        for _ in range(2):
            assert job(2, args).wait() == 0

    def parallel_one_thread():
        jobs = [job(1, args) for _ in range(2)]
        assert all(j.wait() == 0 for j in jobs)

    serial = timed(serial_two_threads)
    parallel = timed(parallel_one_thread)
    print(f"two jobs one after the other, 2 threads each: {serial:6.1f} s")
    print(f"two jobs side by side, 1 thread each:         {parallel:6.1f} s")
    print(f"side by side is {serial / parallel:.2f}x faster")


if __name__ == "__main__":
    main()
