"""Execution similarity's speed: 1,000 (ground truth, generation) pairs from HumanEval.

Each sample of the shipped HumanEval (repeated under new ids, so each repeat
draws its own inputs) is a ground truth with two generations that both run
to the end: its canonical solution (a clone) and the same with its first
comparison or arithmetic operator changed (a near miss). Prints the time to
draw inputs (host), to execute (sandbox), in all and per pair, and the
outcome counts.

    PYTHONPATH=workflow .venv/bin/python benchmarks/execution_speed.py [--pairs 1000] [--workers 2]
"""

from __future__ import annotations

import argparse
import re
import time

from leaktrace.data.functions import function_anatomy
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.similarity import execution
from leaktrace.similarity.execution import ExecutionSettings, Sample, coverage

_OPERATOR = re.compile(r" (<=|>=|<|>|\+|-) ")
_SWAP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "+": "-", "-": "+"}


def _near_miss(body: str) -> str:
    return _OPERATOR.sub(lambda m: f" {_SWAP[m.group(1)]} ", body, count=1)


def samples(n_samples: int) -> list[Sample]:
    originals = load_humaneval(shipped_humaneval_path(), "humaneval")
    out = []
    for i in range(n_samples):
        original = originals[i % len(originals)]
        anatomy = function_anatomy(original.code, original.entry_point)
        out.append(Sample(f"{original.task_id}#{i // len(originals)}", anatomy.context, anatomy.signature,
                          anatomy.continuation,
                          {"target": anatomy.continuation, "reference": _near_miss(anatomy.continuation)},
                          original.test))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    pairs = samples(args.pairs // 2)
    settings = ExecutionSettings()
    started = time.perf_counter()
    execution._plan_all(pairs, settings, 0, args.workers)
    planned = time.perf_counter() - started
    started = time.perf_counter()
    scores = execution.execution_scores(pairs, settings, 0, workers=args.workers)
    total = time.perf_counter() - started
    n = len(scores)
    print(f"{n} pairs ({len(pairs)} ground truths x 2 generations), {args.workers} workers")
    print(f"drawing inputs: {planned:.1f} s; drawing + execution: {total:.1f} s = {1000 * total / n:.1f} ms per pair")
    for model in ("target", "reference"):
        outcomes = [score.outcome for (_, m), score in scores.items() if m == model]
        similar = [score.similarity for (_, m), score in scores.items() if m == model and score.similarity is not None]
        print(f"{model}: mean similarity {sum(similar) / max(len(similar), 1):.3f}; outcomes {coverage(outcomes)}")


if __name__ == "__main__":
    main()
