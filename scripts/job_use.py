"""What every job of a finished run used, for tests/test_cluster.py, which
checks each job's cluster request against it: wall seconds and peak RSS from
each job's Snakemake benchmark file, and the shape (rows, uncompressed bytes)
of every Parquet file the run made, from which the test recomputes what each
job asks for without the files.

    .venv/bin/python scripts/job_use.py measure [--work DIR]
        the default config in a fresh copy of the repository (in DIR), every job
        a fresh interpreter (fork_server: false), then `extract`
    .venv/bin/python scripts/job_use.py extract DIR --command "..." [--note "..."]
        a finished run in DIR (a copy of the repository), e.g. the SLURM run of
        scripts/slurm-proof.sh

A run through the fork server does not do: a forked job pays no start-up, and
its benchmark measures the client, not the job (about 18 MB). Writes
tests/data/cluster/default_use.tsv and tests/data/cluster/default_inputs.tsv,
each headed by the date, machine, load and command of the run.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from leaktrace.jobsize import parquet_shape

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "data" / "cluster"
CONFIG = "config/config.yaml"
MEASURE = [".venv/bin/snakemake", "--cores", "2", "--configfile", CONFIG, "--config", "fork_server=False"]


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    mem_kb = next(
        int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")
    )
    return f"{os.cpu_count()} CPUs ({cpu}), {mem_kb / 2**20:.0f} GiB, {platform.system()} {platform.release()}"


def load() -> str:
    return "load average " + " ".join(Path("/proc/loadavg").read_text().split()[:3])


def fresh_copy(destination: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(
        ["tar", "--null", "-T", "-", "-cf", str(destination / "copy.tar")], cwd=REPO, input=listed, check=True
    )
    subprocess.run(["tar", "-xf", "copy.tar"], cwd=destination, check=True)
    (destination / "copy.tar").unlink()
    (destination / ".venv").symlink_to(REPO / ".venv", target_is_directory=True)


def head() -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    return f"{commit}{' with uncommitted changes' if dirty else ''}"


def measure(work: Path) -> None:
    commit = head()
    fresh_copy(work)
    before = load()
    start = datetime.datetime.now(datetime.UTC)
    env = {**os.environ, "PYTHONPATH": str(work / "workflow")}
    subprocess.run(MEASURE, cwd=work, env=env, check=True)
    note = f"{before} at the start, {load()} at the end; {start:%Y-%m-%d %H:%M} UTC"
    extract(work, " ".join(MEASURE), note, commit)


def extract(run_dir: Path, command: str, note: str = "", commit: str = "") -> None:
    run = yaml.safe_load((run_dir / CONFIG).read_text()).get("run", "default")
    results = Path("results") / run
    benchmarks = sorted((run_dir / results / "benchmarks").rglob("*.tsv"))
    if not benchmarks:
        sys.exit(f"no benchmark file under {run_dir / results / 'benchmarks'}: not a finished run")
    header = [
        f"# from {run_dir}: {command}",
        f"# measured {note or 'on ' + datetime.date.today().isoformat()}; repository at {commit or head()}",
        f"# machine: {machine()}",
        "# regenerate: .venv/bin/python scripts/job_use.py measure (docs/guides/slurm.md)",
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "default_use.tsv", "w", newline="") as handle:
        handle.write(
            "# Each job's wall seconds and peak RSS (Snakemake's benchmark: s, max_rss), every job a fresh\n"
            "# interpreter as on a cluster.\n" + "\n".join(header) + "\n"
        )
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(["benchmark", "s", "max_rss_mb"])
        for path in benchmarks:
            with open(path) as tsv:
                row = next(csv.DictReader(tsv, delimiter="\t"))
            writer.writerow([str(path.relative_to(run_dir)), row["s"], row["max_rss"]])
    with open(OUT / "default_inputs.tsv", "w", newline="") as handle:
        handle.write(
            "# Rows, uncompressed bytes (Parquet footer) and originals (rows of variant_id 0) of every\n"
            "# Parquet file of the run (leaktrace.jobsize.parquet_shape): what the jobs' requests are\n"
            "# computed from.\n" + "\n".join(header) + "\n"
        )
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(["path", "rows", "bytes", "originals"])
        for path in sorted((run_dir / results).rglob("*.parquet")):
            shape = parquet_shape(path)
            writer.writerow([str(path.relative_to(run_dir)), shape.rows, shape.bytes, shape.originals])
    print(f"{len(benchmarks)} jobs: {OUT / 'default_use.tsv'}, {OUT / 'default_inputs.tsv'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("measure", help="run the default config in a fresh copy, then extract")
    run.add_argument("--work", type=Path, help="where the copy goes (default: a new temporary directory)")
    done = commands.add_parser("extract", help="the tables of a finished run")
    done.add_argument("run_dir", type=Path)
    done.add_argument("--command", required=True, help="the command that made the run")
    done.add_argument("--note", default="", help="when and under what load it ran")
    done.add_argument("--commit", default="", help="the commit the run's copy was made from (default: HEAD)")
    args = parser.parse_args()
    if args.command == "measure":
        work = args.work or Path(tempfile.mkdtemp(prefix="leaktrace-job-use."))
        work.mkdir(parents=True, exist_ok=True)
        measure(work)
    else:
        extract(args.run_dir.resolve(), args.command, args.note, args.commit)


if __name__ == "__main__":
    main()
