"""Two runs of one config from scratch, the second on a busy machine, must
write the same bytes: no outcome may depend on wall-clock or CPU time.

Each run gets a fresh copy of the repository (the files git tracks and the
new ones it does not ignore, as a clone has them, with this interpreter's
virtual environment linked in, and its own code on PYTHONPATH) in a
temporary directory, and runs the README's smoke command there
(``.venv/bin/snakemake --cores all --configfile <config>``). The first runs
on the machine as it is; during the second, ``--busy`` processes spin at the
same priority, competing for the cores. Then every Parquet file (and saved
adapter) of the two result trees is compared byte for byte
(`compare_results.py`). The micro config takes about 10 minutes of two
cores in all.

    .venv/bin/python scripts/check_identical_under_load.py [--configfile config/micro.yaml] [--busy 2] [--keep]
    .venv/bin/python scripts/check_identical_under_load.py --dry-run   # plan both runs (snakemake -n), spin briefly

Exits 1 when a file differs or exists in one tree only, 2 when a run fails.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compare_results import compare, summary

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [".venv/bin/snakemake", "--cores", "all"]


def fresh_copy(destination: Path) -> Path:
    """The repository as a clone has it, with this interpreter's environment as ``.venv``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (destination / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    return destination


@contextlib.contextmanager
def busy(n: int):
    """``n`` processes spinning at this one's priority while the block runs."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def run(copy: Path, configfile: str, dry_run: bool) -> float:
    """The smoke command in ``copy``, with the copy's own package; its wall-clock seconds."""
    environment = {**os.environ, "PYTHONPATH": str(copy / "workflow")}
    command = [*SNAKEMAKE, "--configfile", configfile, *(["-n"] if dry_run else [])]
    started = time.monotonic()
    result = subprocess.run(command, cwd=copy, env=environment, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write((result.stdout + result.stderr)[-4000:])
        raise SystemExit(f"the run in {copy} failed (exit {result.returncode})")
    return time.monotonic() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configfile", default="config/micro.yaml", help="relative to the repository")
    parser.add_argument("--busy", type=int, default=2, help="processes competing for the cores in the second run")
    parser.add_argument("--keep", action="store_true", help="keep both copies (their paths are printed)")
    parser.add_argument("--dry-run", action="store_true", help="plan both runs only; spin for a second")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="leaktrace-identical-"))
    try:
        idle, loaded = fresh_copy(root / "idle"), fresh_copy(root / "busy")
        seconds = run(idle, args.configfile, args.dry_run)
        print(f"run 1 (idle machine): {seconds:.0f} s in {idle}", flush=True)
        with busy(args.busy):
            if args.dry_run:
                time.sleep(1)
            seconds = run(loaded, args.configfile, args.dry_run)
        print(f"run 2 ({args.busy} busy processes): {seconds:.0f} s in {loaded}", flush=True)
        if args.dry_run:
            print("dry run: both runs planned; nothing to compare")
            return 0
        problems = compare(idle / "results", loaded / "results")
        print("\n".join(problems) or summary(idle / "results"))
        return 1 if problems else 0
    except SystemExit as error:
        print(error, file=sys.stderr)
        return 2
    finally:
        if args.keep:
            print(f"copies kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
