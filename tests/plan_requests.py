"""``snakemake --dry-run`` whose job sizes read a recorded run's Parquet
shapes instead of the files, so that a dry run prints the request every job
of that run would make on a cluster (tests/test_cluster.py):

    python tests/plan_requests.py tests/data/cluster/default_inputs.tsv --cores 2 --configfile ... -n

leaktrace.jobsize reads every Parquet footer through ``parquet_shape``; here
that function answers from the table (written by scripts/job_use.py), and a
file the table does not hold is "not made yet", as a missing file is.
Snakemake runs in this process, so the Snakefile's ``jobsize`` is this one."""

from __future__ import annotations

import csv
import errno
import os
import re
import sys
from pathlib import Path

from leaktrace import jobsize


def read_tsv(path: Path) -> list[dict]:
    with open(path) as handle:
        return list(csv.DictReader((line for line in handle if not line.startswith("#")), delimiter="\t"))


def recorded_shapes(table: Path):
    shapes = {
        row["path"]: jobsize.TableShape(int(row["rows"]), int(row["bytes"]), int(row["originals"]))
        for row in read_tsv(table)
    }

    def parquet_shape(path):
        key = os.path.normpath(path)
        if key not in shapes:
            raise FileNotFoundError(errno.ENOENT, "not in the recorded run", str(path))
        return shapes[key]

    return parquet_shape


def planned_jobs(output: str) -> list[dict]:
    """Every job of ``snakemake -n`` output: rule, benchmark file (or None) and resources."""
    jobs = []
    for block in re.split(r"\n(?=\s*(?:local)?rule \w+:\n)", output):
        rule = re.match(r"\s*(?:local)?rule (\w+):\n", block)
        if not rule:
            continue
        benchmark = re.search(r"^\s*benchmark: (\S+)$", block, re.MULTILINE)
        resources = re.search(r"^\s*resources: (.*)$", block, re.MULTILINE)
        jobs.append(
            {
                "rule": rule.group(1),
                "benchmark": benchmark.group(1) if benchmark else None,
                "resources": dict(item.split("=", 1) for item in resources.group(1).split(", ")) if resources else {},
            }
        )
    return jobs


if __name__ == "__main__":
    jobsize.parquet_shape = recorded_shapes(Path(sys.argv[1]))
    from snakemake.cli import main

    main(sys.argv[2:])
