"""What a SLURM run would submit, printed without a cluster.

``snakemake -n --workflow-profile config/profiles/slurm`` does not show it:
a job whose inputs do not exist yet shows ``runtime=<TBD>`` (its size is
read from them, leaktrace/jobsize.py), a dry run caps every job's threads at
``--cores`` (1 unless given), and nothing says which jobs run on the submit
host or what a group (cluster.one_job) asks for. This command plans the
workflow as the dry run does, in this process, and prints per job: where it
runs (``submit host``, or the SLURM partition), its CPUs (the rule's
threads, uncapped), memory, GPUs and minutes; per group, its request as the
leaktrace-slurm executor computes it (Snakemake's layered group resources,
runtime summed over the group's layers). A job sized from inputs this run
makes is ``sized at submission``, and a group holding one asks for its
partition's time limit; ``--shapes TSV`` (a recorded run's Parquet shapes,
written by scripts/job_use.py) sizes those too.

    python -m leaktrace.cluster_requests [--shapes TSV] [--node CPUS,MEM_MB,GPUS] -- SNAKEMAKE ARGS

The Snakemake arguments are those of the run (``--configfile``, targets);
the SLURM profile and a dry run are added."""

from __future__ import annotations

import argparse
import contextlib
import csv
import errno
import os
import sys
from collections.abc import Sequence

PROFILE = "config/profiles/slurm"
UNCAPPED_CORES = "1000000"  # a dry run caps threads at --cores; a SLURM job asks for the rule's own


def recorded_shapes(table: str):
    """``jobsize.parquet_shape`` answering from a recorded run's table
    (path, rows, bytes, originals); a file it lacks is not made yet."""
    from leaktrace import jobsize

    with open(table) as handle:
        rows = list(csv.DictReader((line for line in handle if not line.startswith("#")), delimiter="\t"))
    shapes = {
        row["path"]: jobsize.TableShape(int(row["rows"]), int(row["bytes"]), int(row["originals"])) for row in rows
    }

    def parquet_shape(path):
        key = os.path.normpath(path)
        if key not in shapes:
            raise FileNotFoundError(errno.ENOENT, "not in the recorded run", str(path))
        return shapes[key]

    return parquet_shape


def _planned_workflow(snakemake_args: Sequence[str]):
    """The Snakemake workflow object of a dry run of ``snakemake_args`` with the SLURM profile."""
    from snakemake import api, cli

    captured = {}
    original = api.DAGApi.execute_workflow

    def capture(self, *args, **kwargs):
        captured["workflow"] = self.workflow_api._workflow
        return original(self, *args, **kwargs)

    api.DAGApi.execute_workflow = capture
    try:
        parser, args = cli.parse_args(
            ["--workflow-profile", PROFILE, "--dry-run", "--quiet", "all", "--cores", UNCAPPED_CORES, *snakemake_args]
        )
        with contextlib.redirect_stdout(sys.stderr):  # Snakemake's own lines: stdout is the table's
            planned = cli.args_to_api(args, parser)
        if not planned:
            raise SystemExit("leaktrace: the dry run failed (its message is above)")
    finally:
        api.DAGApi.execute_workflow = original
    return captured["workflow"]


def _value(resources, name):
    value = resources.get(name)
    return value if isinstance(value, int) else None


def _row(job, submit_host: bool) -> dict:
    resources = job.resources
    wildcards = ",".join(f"{k}={v}" for k, v in sorted(job.wildcards_dict.items()))
    runtime = _value(resources, "runtime")
    return {
        "job": job.rule.name + (f"[{wildcards}]" if wildcards else ""),
        "where": "submit host" if submit_host else (resources.get("slurm_partition") or "default partition"),
        "cpus": job.threads,
        "mem_mb": _value(resources, "mem_mb"),
        "gpus": _value(resources, "gpu") or 0,
        "runtime_min": runtime,
        "group": job.group,
    }


def _format(value, unknown: str = "sized at submission") -> str:
    return unknown if value is None else str(value)


def group_request(jobs: list, node: tuple[int, int, int] | None) -> dict:
    """A group's request as the leaktrace-slurm executor computes it
    (``_fit_group``): Snakemake's layered group resources within one node
    (``node``: cpus, mem_mb, gpus; None: unbounded), runtime summed over
    layers; the partition's time limit where a member cannot be sized yet."""
    from snakemake.common.tbdstring import TBDString
    from snakemake.resources import GroupResources, Resources

    cpus, mem_mb, gpus = node or (10**9, 10**12, 10**6)
    constraints = Resources.from_mapping({"_cores": cpus, "mem_mb": mem_mb, "gpu": gpus})
    by_job = {job: job for job in jobs}
    layers, placed = [], set()
    while len(placed) < len(jobs):  # topological layers: a job after every member it reads from
        layer = [
            j
            for j in jobs
            if j not in placed and not any(d in by_job and d not in placed for d in j.dag.dependencies[j])
        ]
        layers.append(layer)
        placed.update(layer)
    sized = GroupResources.basic_layered(
        toposorted_jobs=layers,
        constraints=constraints,
        run_local=False,
        additive_resources=["runtime"],
        sortby=["runtime"],
    )
    open_ended = any(isinstance(j.resources.get("runtime"), TBDString) for j in jobs)
    return {
        "cpus": sized.get("_cores"),
        "mem_mb": sized.get("mem_mb") if isinstance(sized.get("mem_mb"), int) else None,
        "gpus": sized.get("gpu") or 0,
        "runtime_min": None if open_ended else sized.get("runtime"),
    }


def _submit_host(workflow, rule) -> bool:
    """Whether a rule runs on the submit host under a cluster executor (a
    dry run's workflow counts every rule local)."""
    return rule.group is None and (rule.name in workflow._localrules or rule.norun)


def requests(snakemake_args: Sequence[str], node: tuple[int, int, int] | None = None) -> tuple[list[dict], list[dict]]:
    """(a row per planned job, a row per group) of a dry run with the SLURM profile."""
    workflow = _planned_workflow(snakemake_args)
    dag = workflow.dag
    jobs = sorted(
        dag.needrun_jobs(exclude_finished=False), key=lambda j: (j.rule.name, sorted(j.wildcards_dict.items()))
    )
    rows = [_row(job, _submit_host(workflow, job.rule)) for job in jobs if job.rule.name != "all"]
    groups: dict[str, list] = {}
    for job in jobs:
        if job.group is not None:
            groups.setdefault(job.group, []).append(job)
    group_rows = [
        {
            "group": name,
            "jobs": len(members),
            "where": members[0].resources.get("slurm_partition") or "default partition",
            **group_request(members, node),
        }
        for name, members in sorted(groups.items())
    ]
    return rows, group_rows


def render(rows: list[dict], group_rows: list[dict]) -> str:
    lines = ["job\twhere\tcpus\tmem_mb\tgpus\truntime_min"]
    lines += [
        f"{r['job']}\t{r['where']}\t{r['cpus']}\t{_format(r['mem_mb'])}\t{r['gpus']}\t{_format(r['runtime_min'])}"
        for r in rows
    ]
    if group_rows:
        lines += ["", "group\tjobs\twhere\tcpus\tmem_mb\tgpus\truntime_min"]
        lines += [
            f"{g['group']}\t{g['jobs']}\t{g['where']}\t{g['cpus']}\t{_format(g['mem_mb'])}\t{g['gpus']}\t"
            f"{_format(g['runtime_min'], 'the partition time limit')}"
            for g in group_rows
        ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m leaktrace.cluster_requests", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", help="a recorded run's Parquet shapes (TSV: path, rows, bytes, originals)")
    parser.add_argument("--node", help="one node's CPUS,MEM_MB,GPUS, bounding a group's request (default: unbounded)")
    parser.add_argument("snakemake", nargs=argparse.REMAINDER, help="-- then the run's Snakemake arguments")
    args = parser.parse_args(argv)
    if args.shapes:
        from leaktrace import jobsize

        jobsize.parquet_shape = recorded_shapes(args.shapes)
    node = tuple(int(x) for x in args.node.split(",")) if args.node else None
    snakemake_args = args.snakemake[1:] if args.snakemake[:1] == ["--"] else args.snakemake
    rows, group_rows = requests(snakemake_args, node)
    sys.stdout.write(render(rows, group_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
