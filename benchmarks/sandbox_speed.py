"""Per-run cost of the sandbox: runs per second of a trivial program and of a
HumanEval validation run, for the runner before the rebuild (loaded from git)
and the current one, side by side in one run.

The two runners alternate run by run, so a machine whose load changes during
the benchmark slows both alike.

    PYTHONPATH=workflow .venv/bin/python benchmarks/sandbox_speed.py [--runs 40] [--old-rev f83adaf]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.sandbox import SandboxLimits, isolation_level, run_python, run_test

OLD_RUNNER = "workflow/leaktrace/sandbox/runner.py"


def _old_runner(revision: str):
    """The runner as it was at `revision`, imported from a temporary file."""
    source = subprocess.run(["git", "show", f"{revision}:{OLD_RUNNER}"], capture_output=True, text=True, check=True)
    path = Path(tempfile.mkdtemp()) / "old_runner.py"
    path.write_text(source.stdout)
    spec = importlib.util.spec_from_file_location("old_runner", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_runner"] = module
    spec.loader.exec_module(module)
    return module


def _alternate(calls: dict, runs: int) -> dict[str, float]:
    """Runs per second of each call, alternating between them."""
    spent = dict.fromkeys(calls, 0.0)
    for _ in range(runs):
        for name, call in calls.items():
            started = time.perf_counter()
            result = call()
            spent[name] += time.perf_counter() - started
            assert result.status == "ok", (name, result)
    return {name: runs / seconds for name, seconds in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--old-rev", default="f83adaf", help="commit holding the runner before the rebuild")
    args = parser.parse_args()
    old = _old_runner(args.old_rev)
    limits = SandboxLimits()
    old_limits = old.SandboxLimits()
    print(f"isolation: {isolation_level(limits)}")
    samples = load_humaneval(shipped_humaneval_path(), "humaneval")
    sample = next(s for s in samples if s.sample_id == "humaneval/HumanEval/0")
    program = f"{sample.code}\n\n{sample.test}\n\ncheck({sample.entry_point})\n"
    calls = {
        "trivial, old": lambda: old.run_python("pass", old_limits),
        "trivial, new": lambda: run_python("pass", limits),
        "HumanEval/0, old": lambda: old.run_python(program, old_limits),
        "HumanEval/0, new": lambda: run_test(sample.code, sample.test, sample.entry_point, limits),
    }
    for call in calls.values():  # warm-up: the new runner probes the platform once
        call()
    rates = _alternate(calls, args.runs)
    print(f"{'runner':<20} {'runs/s':>8}")
    for name, rate in rates.items():
        print(f"{name:<20} {rate:>8.1f}")
    for what in ("trivial", "HumanEval/0"):
        print(f"{what}: new takes {rates[f'{what}, old'] / rates[f'{what}, new']:.2f}x the old time per run")


if __name__ == "__main__":
    main()
