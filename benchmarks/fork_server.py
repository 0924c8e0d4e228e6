"""What the fork server saves a local run: the micro config run from scratch in
two fresh copies of the repository, one with the fork server and one with
`fork_server=false`, one after the other; prints each wall time, their ratio,
and whether every artifact of the two runs has the same bytes.

    .venv/bin/python benchmarks/fork_server.py [--config config/micro.yaml] [--first server|plain] [--target FILE]

Each copy holds what git tracks and links the running `.venv` (tests/repo_copy.py). Run it on an
otherwise idle machine: the two runs are sequential, so a change of load between
them shows in the ratio (swap the order with --first to see how much).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from repo_copy import fresh_copy  # noqa: E402 - the tests' fresh copy: tracked files, the running .venv linked


def run(copy: Path, config: str, fork_server: bool, targets: list[str]) -> float:
    (copy / "fork-server.yaml").write_text(f"fork_server: {str(fork_server).lower()}\n")
    started = time.perf_counter()
    result = subprocess.run(
        [".venv/bin/snakemake", *targets, "--cores", "2", "--configfile", config, "fork-server.yaml"],
        cwd=copy,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        sys.exit(f"the run with fork_server={str(fork_server).lower()} failed:\n{result.stderr[-3000:]}")
    return time.perf_counter() - started


def artifacts(copy: Path) -> dict[str, bytes]:
    """Every Parquet, JSON and Markdown output: logs and benchmark timings differ by nature."""
    return {
        str(p.relative_to(copy)): p.read_bytes()
        for p in sorted((copy / "results").rglob("*"))
        if p.suffix in (".parquet", ".json", ".md") and "benchmarks" not in p.parts and "logs" not in p.parts
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/micro.yaml")
    parser.add_argument("--first", choices=("server", "plain"), default="server")
    parser.add_argument(
        "--target",
        action="append",
        default=[],
        help="a file or rule for Snakemake to make, with what it needs (repeat; default: the whole config)",
    )
    args = parser.parse_args()
    order = [True, False] if args.first == "server" else [False, True]
    with tempfile.TemporaryDirectory(prefix="fork-server-bench-") as scratch:
        seconds, outputs = {}, {}
        for fork_server in order:
            copy = Path(scratch) / ("server" if fork_server else "plain")
            copy.mkdir()
            fresh_copy(copy)
            seconds[fork_server] = run(copy, args.config, fork_server, args.target)
            outputs[fork_server] = artifacts(copy)
            print(f"fork_server={str(fork_server).lower()}: {seconds[fork_server]:.0f} s", flush=True)
    print(f"ratio (without / with): {seconds[False] / seconds[True]:.2f}")
    differing = [name for name in outputs[True] if outputs[True][name] != outputs[False].get(name)]
    missing = sorted(set(outputs[True]) ^ set(outputs[False]))
    print(
        f"artifacts compared: {len(outputs[True])}; differing: {differing or 'none'}; in one run only: {missing or 'none'}"
    )
    sys.exit(1 if differing or missing else 0)


if __name__ == "__main__":
    main()
