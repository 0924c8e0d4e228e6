"""How many steps (function calls and loop iterations of the program's own
code, `leaktrace.similarity.execution_driver`) HumanEval's ground truths take
per call on the inputs execution similarity draws for them, against the CPU
time of the same calls: the measurement behind ``similarity.execution.call_steps``.

Each ground truth runs as the pipeline runs it (its sample id as the
default run names it, the config's seed, itself as both generations, so
its own literals guide the second set of draws), with a step budget no call
reaches. Prints the calls with the most steps and the most CPU time, each
sample's largest call, and the steps-per-CPU-second spread.

    PYTHONPATH=workflow .venv/bin/python benchmarks/execution_steps.py [--seed 20261122] [--top 25] [--workers 2] [--call-steps N] [--samples HumanEval/75 ...]
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from leaktrace.data.functions import function_anatomy
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.similarity.execution import ExecutionSample, default_execution_settings, execute, plan_sample


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20261122, help="the run seed (config.yaml's)")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--samples", nargs="*", default=None, help="task ids (HumanEval/75 ...); default: all")
    parser.add_argument("--call-steps", type=int, default=10**9, help="the budget (default: none a call reaches)")
    args = parser.parse_args()
    settings = default_execution_settings(
        call_steps=args.call_steps, function_steps=10**11, call_cpu_s=5.0, function_cpu_s=50.0
    )
    truths, names = [], []
    for original in load_humaneval(shipped_humaneval_path(), "humaneval"):
        if args.samples and original.task_id not in args.samples:
            continue
        anatomy = function_anatomy(original.code, original.entry_point)
        sample = ExecutionSample(
            f"humaneval/{original.task_id}",
            anatomy.context,
            anatomy.signature,
            anatomy.continuation,
            {"target": anatomy.continuation, "reference": anatomy.continuation},
            original.test,
        )
        plan = plan_sample(sample, settings, args.seed)
        if plan.truth is not None:
            truths.append(plan.truth)
            names.append(original.task_id)
    results = execute(truths, replace(settings, batch_size=16), workers=args.workers).results
    calls = []
    for name, result in zip(names, results, strict=True):
        if result.status != "ok":
            print(f"{name}: {result.status}")
            continue
        calls += [(steps, cpu, name) for steps, cpu in zip(result.steps, result.cpu_s, strict=True)]
    print(f"{len(calls)} calls of {len(names)} ground truths")
    print(f"\nby steps (top {args.top}): steps, CPU ms, sample")
    for steps, cpu, name in sorted(calls, reverse=True)[: args.top]:
        print(f"  {steps:>12,} {1000 * cpu:8.1f}  {name}")
    print(f"\nby CPU time (top {args.top}): steps, CPU ms, sample")
    for steps, cpu, name in sorted(calls, key=lambda c: -c[1])[: args.top]:
        print(f"  {steps:>12,} {1000 * cpu:8.1f}  {name}")
    largest = {}
    for steps, cpu, name in calls:
        largest[name] = max(largest.get(name, (0, 0.0)), (steps, cpu))
    print(f"\neach sample's largest call (top {args.top}): steps, CPU ms, sample")
    for name, (steps, cpu) in sorted(largest.items(), key=lambda item: item[1], reverse=True)[: args.top]:
        print(f"  {steps:>12,} {1000 * cpu:8.1f}  {name}")
    totals = {}
    for steps, cpu, name in calls:
        totals[name] = (
            totals.get(name, (0, 0.0, 0))[0] + steps,
            totals.get(name, (0, 0.0, 0))[1] + cpu,
            totals.get(name, (0, 0.0, 0))[2] + 1,
        )
    print(f"\neach sample's calls together (top {args.top}): steps, CPU ms, calls, sample")
    for name, (steps, cpu, n) in sorted(totals.items(), key=lambda item: item[1], reverse=True)[: args.top]:
        print(f"  {steps:>12,} {1000 * cpu:8.1f} {n:4d}  {name}")
    timeouts = [(name, steps) for steps, _, name in calls if steps > settings.call_steps]
    print(f"\ncalls past {settings.call_steps:,} steps: {len(timeouts)}, of {sorted(set(n for n, _ in timeouts))}")
    busy = [steps / cpu for steps, cpu, _ in calls if cpu >= 0.01]
    if busy:
        busy.sort()
        print(
            f"\nsteps per CPU second, calls of 10 ms or more: min {busy[0]:,.0f}, median {busy[len(busy) // 2]:,.0f}, "
            f"max {busy[-1]:,.0f}"
        )


if __name__ == "__main__":
    main()
