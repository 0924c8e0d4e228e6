"""Peak memory of a leakage scan job on one huge corpus file.

Two huge-file cases, each a ``files`` source holding one Python file of
generated functions, scanned against HumanEval by the real CLI in its own
process (``python -m leaktrace leakage-scan``); the figure is that process's
peak resident set (``os.wait4``), next to the same job on a one-line file (the
interpreter and the libraries alone):

- ``skip``: a file far above ``max_bytes`` under ``huge: skip`` (512 MB by default);
- ``chunk``: a file above ``max_bytes`` under ``huge: chunk`` at function
  granularity (10 MB by default).

    PYTHONPATH=workflow .venv/bin/python benchmarks/input_memory.py [--skip-mb 512] [--chunk-mb 10]

Point PYTHONPATH at another checkout's ``workflow/`` to measure that code.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from leaktrace.data.benchmarks import BENCHMARK_SCHEMA  # noqa: F401  (fails early if PYTHONPATH is wrong)
from leaktrace.leakage.settings import scan_slice

FUNCTION = (
    "def function_{k}(values, limit={k}):\n    total = 0\n    for v in values:\n        total += v * {k}\n"
    "    return total % limit\n\n"
)


def write_code_file(path: Path, size: int) -> None:
    """Distinct small functions up to ``size`` bytes, written in blocks."""
    written, k = 0, 0
    with path.open("w", encoding="utf-8") as fh:
        while written < size:
            block = "".join(FUNCTION.format(k=k + i) for i in range(1000))
            fh.write(block)
            written += len(block)
            k += 1000


def peak_rss_mb(argv: list[str], env: dict) -> tuple[float, int]:
    """Peak resident set of the process in MB (ru_maxrss is in KiB on Linux), and its exit status."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    stderr = proc.stderr.read().decode("utf-8", "replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.stderr.write(stderr[-3000:])
    return usage.ru_maxrss / 1024, code


def scan(work: Path, name: str, settings: dict, env: dict) -> tuple[float, int]:
    cli = [sys.executable, "-m", "leaktrace"]
    slice_json = json.dumps(
        dataclasses.asdict(scan_slice(settings, name))
    )  # the schema's defaults filled in, as a rule
    args = ["--scan", name, "--benchmark", str(work / "bench.parquet"), "--scan-settings", slice_json]
    index = work / f"{name}.index.parquet"
    subprocess.run(cli + ["leakage-index"] + args + ["--output", str(index)], env=env, check=True, capture_output=True)
    return peak_rss_mb(
        cli
        + ["leakage-scan"]
        + args
        + [
            "--index",
            str(index),
            "--part",
            "0",
            "--parts",
            "1",
            "--pairs",
            str(work / f"{name}.pairs.parquet"),
            "--accounting",
            str(work / f"{name}.acc.parquet"),
        ],
        env,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-mb", type=int, default=512)
    parser.add_argument("--chunk-mb", type=int, default=10)
    parser.add_argument("--max-bytes", type=int, default=1_000_000)
    args = parser.parse_args()
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "leaktrace",
                "ingest-benchmark",
                "--name",
                "humaneval",
                "--settings",
                json.dumps({"format": "humaneval"}),
                "--output",
                str(work / "bench.parquet"),
            ],
            env=env,
            check=True,
            capture_output=True,
        )
        rows = []
        for case, policy, size in (
            ("baseline", "skip", 0),
            ("skip", "skip", args.skip_mb << 20),
            ("chunk", "chunk", args.chunk_mb << 20),
        ):
            root = work / case
            root.mkdir()
            if size:
                write_code_file(root / "huge.py", size)
            else:
                (root / "huge.py").write_text("x = 1\n")
            settings = {
                "benchmark": "humaneval",
                "corpus": {"kind": "files", "root": str(root), "glob": "*.py"},
                "granularity": "function",
                "max_bytes": args.max_bytes,
                "huge": policy,
            }
            peak, code = scan(work, case, settings, env)
            rows.append((case, policy, (root / "huge.py").stat().st_size / 2**20, peak, code))
            (root / "huge.py").unlink()
    print(f"{'case':<9} {'huge':<6} {'file MB':>8} {'peak RSS MB':>12} {'exit':>5}")
    for case, policy, mb, peak, code in rows:
        print(f"{case:<9} {policy:<6} {mb:>8.1f} {peak:>12.0f} {code:>5}")


if __name__ == "__main__":
    main()
