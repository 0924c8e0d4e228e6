"""Cost of judging a whole program on standard input: all of a problem's
cases in one sandbox run (one fork per case, as `sandbox.stdio` runs them)
against one sandbox run per case, alternating run by run so that a change
of machine load slows both alike.

    PYTHONPATH=workflow .venv/bin/python benchmarks/stdio_speed.py [--cases 10] [--runs 10]
"""

from __future__ import annotations

import argparse
import time

from leaktrace.data.io_tests import IoTests
from leaktrace.sandbox import SandboxLimits, isolation_level
from leaktrace.sandbox.stdio import run_io_tests

PROGRAM = "import sys\nvalues = list(map(int, sys.stdin.read().split()))\nprint(sum(values))\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10, help="cases of the problem (variants.io_cases)")
    parser.add_argument("--runs", type=int, default=10, help="problems judged each way")
    args = parser.parse_args()
    limits = SandboxLimits()
    print(f"isolation: {isolation_level(limits)}")
    tests = IoTests(
        tuple(f"{k} {k + 1}\n" for k in range(args.cases)), tuple(f"{2 * k + 1}\n" for k in range(args.cases))
    )
    spent = {"one run, a fork per case": 0.0, "a run per case": 0.0}
    for _ in range(args.runs):
        started = time.perf_counter()
        assert run_io_tests(PROGRAM, tests, limits).status == "ok"
        spent["one run, a fork per case"] += time.perf_counter() - started
        started = time.perf_counter()
        for case in zip(tests.inputs, tests.outputs, strict=True):
            assert run_io_tests(PROGRAM, IoTests((case[0],), (case[1],)), limits).status == "ok"
        spent["a run per case"] += time.perf_counter() - started
    for name, seconds in spent.items():
        print(
            f"{name}: {1000 * seconds / args.runs:.0f} ms a problem of {args.cases} cases "
            f"({1000 * seconds / (args.runs * args.cases):.1f} ms a case)"
        )


if __name__ == "__main__":
    main()
