"""Dump the plan of one or more config stacks to text files, to show that a
change to the rule files (rules/*.smk, Snakefile) leaves every plan as it was.

A refactor of the rules (where a path is spelled, which file holds an input
function) must not change any job. Take a snapshot before, one after, and
diff the two folders:

    python scripts/plan_snapshot.py --out /tmp/plans-before            # every shipped config
    ... edit rules/ ...
    python scripts/plan_snapshot.py --out /tmp/plans-after
    diff -r /tmp/plans-before /tmp/plans-after                         # empty: no job changed

A stack is one or more config files laid over config/config.yaml (the
Snakefile's own configfile), joined with ``+``:

    python scripts/plan_snapshot.py --out DIR config/micro.yaml+config/experiments/exposure-dose-micro.yaml

With ``--resources`` each job's resources are written too (``mem_mb``,
``runtime``, partition, ...), to show that a change to what jobs ask for
(rules/cluster.smk, leaktrace/jobsize.py) changes only the jobs it means to.
A job sized from inputs that results/ does not hold yet reads ``<TBD>``, as in
a dry run, so this part depends on what results/ holds: snapshot both trees
over the same results/.

Without stacks it plans SHIPPED below. Each stack is planned with
``--forceall`` in a process of its own (Snakemake keeps state per process),
so the plan does not depend on what results/ already holds. For every job it
writes the rule name, wildcards, sorted outputs, sorted inputs, params, log,
benchmark and the shell command, jobs sorted (normalised: see normalised()); a stack whose plan fails
writes its error instead (a failure is part of the plan too). Uses
Snakemake's Python API (checked with Snakemake 9.27)."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The shipped configs: the default, micro, each experiment overlay on the base
# its header names, and the stacks the headers document.
SHIPPED = [
    "config/config.yaml",
    "config/micro.yaml",
    *(
        f"config/experiments/{name}.yaml"
        for name in (
            "audit",
            "benchmarks",
            "codesnitch",
            "counterfactual-signal",
            "exchangeability",
            "exposure-dose",
            "functional-memorization",
            "lessleak",
            "llm-judges",
            "sensitivity",
            "sham",
            "shifted-controls",
            "srdetection",
            "watermark",
        )
    ),
    "config/experiments/counterfactual-signal.yaml+config/experiments/counterfactual-signal-replication.yaml",
    "config/experiments/exposure-dose.yaml+config/experiments/exposure-dose-gpu.yaml",
    "config/micro.yaml+config/experiments/exposure-dose-micro.yaml",
    "config/experiments/srdetection.yaml+config/experiments/srdetection-llama.yaml",
    "config/experiments/functional-memorization.yaml+config/experiments/llm-judges.yaml",
]


def snapshot_name(stack: str) -> str:
    """The file a stack's plan goes to: its config stems joined with ``+``."""
    return "+".join(Path(path).stem for path in stack.split("+")) + ".plan.txt"


def _sorted_files(files) -> list[str]:
    return sorted(str(f) for f in files)


def _job_text(job, resources: bool = False) -> str:
    lines = [f"rule {job.rule.name}"]
    lines.append(f"  wildcards: {sorted(dict(job.wildcards_dict).items())}")
    lines += [f"  output: {f}" for f in _sorted_files(job.output)]
    lines += [f"  input: {f}" for f in _sorted_files(job.input)]
    params = job.params
    names = dict(params._names) if hasattr(params, "_names") else {}
    named = {name: params[start] if end is None else params[start:end] for name, (start, end) in names.items()}
    lines += [f"  param {name}: {value!r}" for name, value in sorted(named.items())]
    unnamed = [value for i, value in enumerate(params) if not any(s <= i < (e or s + 1) for s, e in names.values())]
    lines += [f"  param: {value!r}" for value in unnamed]
    lines += [f"  log: {f}" for f in _sorted_files(job.log)]
    if job.benchmark:
        lines.append(f"  benchmark: {job.benchmark}")
    if job.rule.shellcmd:
        try:
            lines.append(f"  shell: {job.shellcmd}")
        except Exception as error:  # noqa: BLE001 - a command that cannot be formatted at plan time
            lines.append(f"  shell: <not formatted: {type(error).__name__}>")
    if resources:
        lines += [f"  resource {name}: {value}" for name, value in sorted(job.resources.items())]
    return "\n".join(lines)


def plan_text(configfiles: list[str], resources: bool = False) -> str:
    """The plan of one config stack, every job as _job_text, jobs sorted."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        ResourceSettings,
        StorageSettings,
    )

    with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
        workflow_api = api.workflow(
            resource_settings=ResourceSettings(cores=2),
            config_settings=ConfigSettings(configfiles=[Path(f) for f in configfiles]),
            storage_settings=StorageSettings(),
            snakefile=ROOT / "Snakefile",
            workdir=ROOT,
        )
        dag_api = workflow_api.dag(dag_settings=DAGSettings(forceall=True))
        workflow = dag_api.workflow_api._workflow
        workflow.dag_settings = dag_api.dag_settings
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True, nolock=True)
        workflow._build_dag()
        jobs = sorted(_job_text(job, resources) for job in workflow.dag.jobs)
    return normalised(f"# {len(jobs)} jobs\n" + "\n".join(jobs) + "\n")


def normalised(text: str) -> str:
    """The checkout's own folder (a model's resolved path, the shipped HumanEval file) as <root>, and
    the model files' mtimes in the identity params (rules/identity.smk) as <mtime>: both belong to the
    checkout, not to the plan, so two checkouts of one commit give the same text."""
    return re.sub(r'"mtime_ns": \d+', '"mtime_ns": <mtime>', text.replace(str(ROOT), "<root>"))


def _one(out: Path, stack: str, resources: bool = False) -> None:
    try:
        text = plan_text(stack.split("+"), resources)
    except Exception:  # noqa: BLE001 - the error is the snapshot of a plan that fails
        text = "# plan failed\n" + traceback.format_exc(limit=0)
    (out / snapshot_name(stack)).write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder the .plan.txt files go to")
    parser.add_argument("--resources", action="store_true", help="each job's resources too (<TBD>: not known yet)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # one stack, in this process
    parser.add_argument("stacks", nargs="*", help="config files joined with '+' (default: every shipped config)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.one:
        _one(args.out.resolve(), args.stacks[0], args.resources)
        return
    one = [sys.executable, __file__, "--one", *(["--resources"] if args.resources else []), "--out"]
    for stack in args.stacks or SHIPPED:
        subprocess.run([*one, str(args.out.resolve()), stack], cwd=ROOT, check=True)
        print(f"{snapshot_name(stack)}: {(args.out / snapshot_name(stack)).read_text().splitlines()[0]}")


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
