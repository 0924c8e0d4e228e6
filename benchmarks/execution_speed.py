"""Execution similarity's speed: 1,000 (ground truth, generation) pairs from HumanEval.

Each sample of the shipped HumanEval (repeated under new ids, so each repeat
draws its own inputs) is a ground truth with two generations that both run
to the end: its canonical solution (a clone) and the same with its first
comparison or arithmetic operator changed (a near miss). Prints the time to
draw inputs (host) and to execute (sandbox), wall clock and CPU, in all and
per pair, and the outcome counts. CPU time is the figure that carries over
between machines: on a shared machine the wall clock mostly measures the
other processes.

    PYTHONPATH=workflow .venv/bin/python benchmarks/execution_speed.py [--pairs 1000] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import time

from leaktrace.data.functions import function_anatomy
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.similarity.execution import ExecutionSample, coverage, default_execution_settings, execution_scores

_OPERATOR = re.compile(r" (<=|>=|<|>|\+|-) ")
_SWAP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "+": "-", "-": "+"}


def _near_miss(body: str) -> str:
    return _OPERATOR.sub(lambda m: f" {_SWAP[m.group(1)]} ", body, count=1)


def samples(n_samples: int) -> list[ExecutionSample]:
    originals = load_humaneval(shipped_humaneval_path(), "humaneval")
    out = []
    for i in range(n_samples):
        original = originals[i % len(originals)]
        anatomy = function_anatomy(original.code, original.entry_point)
        out.append(
            ExecutionSample(
                f"{original.task_id}#{i // len(originals)}",
                anatomy.context,
                anatomy.signature,
                anatomy.continuation,
                {"target": anatomy.continuation, "reference": _near_miss(anatomy.continuation)},
                original.test,
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    pairs = samples(args.pairs // 2)
    started, cpu_started = time.perf_counter(), _cpu_seconds()
    report = execution_scores(pairs, default_execution_settings(), 0, workers=args.workers)
    wall, host_cpu = time.perf_counter() - started, _cpu_seconds() - cpu_started
    n = len(report.scores)
    print(
        f"{n} pairs ({len(pairs)} ground truths x 2 generations), {args.workers} workers, "
        f"load average before: {LOAD:.1f}, after: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(report.summary())
    cpu = host_cpu + report.sandbox_cpu_s
    print(
        f"in all: {wall:.1f} s wall = {1000 * wall / n:.1f} ms per pair; CPU {cpu:.1f} s (host {host_cpu:.1f} s, "
        f"sandbox {report.sandbox_cpu_s:.1f} s) = {1000 * cpu / n:.1f} ms per pair, "
        f"{cpu / args.workers:.1f} s on {args.workers} idle cores if it parallelises fully"
    )
    for model in ("target", "reference"):
        scores = [score for (_, m), score in report.scores.items() if m == model]
        similar = [score.similarity for score in scores if score.similarity is not None]
        print(
            f"{model}: mean similarity {sum(similar) / max(len(similar), 1):.3f}; "
            f"outcomes {coverage([score.outcome for score in scores])}"
        )


def _cpu_seconds() -> float:
    """This process's CPU time and its reaped children's (the input pool, the sandbox launchers)."""
    return sum(
        u.ru_utime + u.ru_stime for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


LOAD = os.getloadavg()[0]

if __name__ == "__main__":
    main()
