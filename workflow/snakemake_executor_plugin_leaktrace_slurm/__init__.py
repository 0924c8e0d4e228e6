"""The `leaktrace-slurm` executor: snakemake-executor-plugin-slurm, with each
SLURM job's Snakemake jobs run as a local run runs them, and every request
checked against the partition it goes to.

The upstream plugin starts, inside every allocation, a Snakemake whose
executor (slurm-jobstep, ``--jobs 1``) runs each job as ``srun`` of yet another
Snakemake. A group job's jobs therefore run one at a time, each in a fresh
interpreter that imports PyTorch and the rest again (about 5 s, more than most
of the micro config's jobs take). Here the Snakemake inside the allocation
runs its jobs with the local executor over the allocation's CPUs and memory:
one job directly; a group's jobs (``cluster.one_job``) in parallel, forked
from a fork server that Snakemake starts (rules/common.smk).

Before a job is submitted, its request is compared with what ``sinfo``
reports for its partition (``partitions.py``): a job that asks for more CPUs,
memory, GPUs or time than any node of the partition offers stops the run
with a message naming both, where SLURM would leave it PENDING for ever. A
group is sized to fit one node of its partition (Snakemake sizes it by
``--cores`` and ``--resources``, which a user may not give), and a group some
of whose jobs cannot be sized yet (their inputs are made inside it) asks
for the partition's time limit rather than the sum of the few it can size.

SLURM job names carry the rule (``<rule>-<run id>``, ``<group>-<run id>``;
upstream names every job with the run's UUID), and status queries ask for
every name the run can give. ``no_account`` skips the upstream plugin's
account guess, which 2.8.0 runs as ``sacct ... | tail -1`` through
``shlex.split``: sacct receives the pipe as arguments and answers "invalid
option -- '1'" on every run.

Submission, status and cancellation are otherwise the upstream plugin's, and
so are its settings, under this plugin's prefix
(``--leaktrace-slurm-status-command`` for ``--slurm-status-command``), plus a
cap on its status-check back-off. A finished run ends at once rather than at
the next status check.

Snakemake finds the plugin by its module name; the leaktrace package installs
it beside ``leaktrace`` (pyproject.toml).
"""

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

import snakemake_executor_plugin_slurm as slurm
from snakemake.common.tbdstring import TBDString
from snakemake.resources import GroupResources, Resources
from snakemake_executor_plugin_slurm import common_settings
from snakemake_interface_common.exceptions import WorkflowError

from leaktrace.forkserver import START_VARIABLE

from .partitions import NodeLimits, read_partitions, request_problems

__all__ = ["Executor", "ExecutorSettings", "common_settings"]

_SHUTDOWN_POLL_S = 0.25


@dataclass
class ExecutorSettings(slurm.ExecutorSettings):
    max_seconds_between_status_checks: Optional[int] = field(  # noqa: UP045 (Snakemake's CLI reads Optional[...], not X | None)
        default=None,
        metadata={
            "help": "The longest wait between two status checks. The slurm plugin waits 10 s longer after "
            "each check that sees no job finish, up to 180 s, and that wait falls between every "
            "job and the jobs that need its outputs. Unset: no cap.",
            "env_var": False,
            "required": False,
        },
    )


def job_name(job, run_id: str) -> str:
    """The SLURM job name: the rule (a group: its id) and the run's short id."""
    return f"{job.groupid if job.is_group() else job.name}-{run_id[:8]}"


class Executor(slurm.Executor):
    def __post_init__(self, test_mode: bool = False):
        self._submitting = threading.local()
        self._run_id = None
        self._status_names = ""
        super().__post_init__(test_mode)
        rules = list(self.workflow.rules)
        names = {each.name for each in rules} | {each.group for each in rules if each.group}
        self._status_names = ",".join(sorted(f"{name}-{self._run_id[:8]}" for name in names))
        self._node_limits = None

    # The upstream plugin reads ``run_uuid`` both as the job name it submits
    # and as the name its status queries ask for: in a submitting thread it is
    # that job's name, anywhere else the comma-separated names of every rule
    # and group of the run (squeue and sacct take a list).
    @property
    def run_uuid(self):
        job = getattr(self._submitting, "job", None)
        if job is not None:
            return job_name(job, self._run_id)
        return self._status_names or self._run_id

    @run_uuid.setter
    def run_uuid(self, value):
        self._run_id = value

    def run_job(self, job):
        self._submitting.job = job
        try:
            super().run_job(job)
        finally:
            self._submitting.job = None

    def run_array_jobs(self, jobs):
        self._submitting.job = jobs[0]
        try:
            super().run_array_jobs(jobs)
        finally:
            self._submitting.job = None

    def get_account_arg(self, job):
        # upstream 2.8.0 declares no_account but never reads it
        if self.workflow.executor_settings.no_account and not job.resources.get("slurm_account"):
            yield ""
            return
        yield from super().get_account_arg(job)

    def run_jobs(self, jobs):
        """Size each group to its partition, and stop the run on a request no
        node of its partition can meet (here, before the submission thread,
        so that the run ends with the message rather than retrying it)."""
        for job in jobs:
            limits = self._limits(job)
            if limits is None:
                continue
            if job.is_group():
                self._fit_group(job, limits)
            problems = request_problems(self._request(job), limits)
            if problems:
                raise WorkflowError(
                    f"{self._describe(job)} cannot run on partition {limits.partition!r}: "
                    + "; ".join(problems)
                    + ". SLURM would leave it PENDING for ever: set "
                    "cluster.cpu_partition / cluster.gpu_partition to a partition with larger "
                    "nodes, or lower what the config asks of the job (docs/guides/slurm.md)."
                )
        super().run_jobs(jobs)

    def _limits(self, job) -> NodeLimits | None:
        if self._node_limits is None:
            self._node_limits = read_partitions(self.logger)
        if not self._node_limits:
            return None  # sinfo did not answer: submit unchecked, as upstream does
        return self._node_limits.get(job.resources.get("slurm_partition") or None)

    @staticmethod
    def _request(job) -> dict:
        def number(name):
            value = job.resources.get(name)
            return value if isinstance(value, int) else None

        return {
            "cpus": job.threads,
            "mem_mb": number("mem_mb"),
            "gpus": number("gpu"),
            "runtime_min": number("runtime"),
        }

    @staticmethod
    def _describe(job) -> str:
        if job.is_group():
            return f"group {job.groupid!r} ({len(job.jobs)} jobs)"
        wildcards = ", ".join(f"{k}={v}" for k, v in job.wildcards_dict.items())
        return f"rule {job.name}" + (f" ({wildcards})" if wildcards else "")

    def _fit_group(self, job, limits: NodeLimits) -> None:
        """A group's request, computed as Snakemake computes it but bounded by
        one node of its partition instead of --cores / --resources; without
        a time limit of its own when one of its jobs cannot be sized yet."""
        for member in job.jobs:
            problems = request_problems({**self._request(member), "runtime_min": None}, limits)
            if problems:
                raise WorkflowError(
                    f"{self._describe(job)} cannot run on partition {limits.partition!r}: its "
                    f"{self._describe(member)}: " + "; ".join(problems)
                )
        constraints = Resources.from_mapping({"_cores": limits.cpus, "mem_mb": limits.mem_mb, "gpu": limits.gpus})
        sized = GroupResources.basic_layered(
            toposorted_jobs=job.toposorted,
            constraints=constraints,
            run_local=False,
            additive_resources=["runtime"],
            sortby=["runtime"],
        )
        if any(isinstance(member.resources.get("runtime"), TBDString) for member in job.jobs):
            sized["runtime"] = "infinite" if limits.max_minutes is None else limits.max_minutes  # sbatch -t
            limit = "none" if limits.max_minutes is None else f"{limits.max_minutes} min"
            self.logger.info(
                f"{self._describe(job)}: some of its jobs read inputs made inside it, so it asks for "
                f"partition {limits.partition!r}'s time limit ({limit})"
            )
        job._resources = sized  # what GroupJob.resources caches (snakemake 9.27, pinned)

    def get_job_args(self, job):
        # The allocation holds job.threads CPUs (sbatch --cpus-per-task) and
        # its mem_mb: the local executor inside it runs on those, not on the
        # node's.
        args = f"{super().get_job_args(job)} --cores {job.threads}"
        mem_mb = job.resources.get("mem_mb")
        if job.is_group() and isinstance(mem_mb, int):
            args += f" --resources mem_mb={mem_mb}"
        return args

    def additional_general_args(self):
        return "--executor local"

    def get_job_exec_prefix(self, job):
        # A spawned Snakemake runs no `onstart`: this tells the one that runs
        # a group to start its fork server as it reads the Snakefile.
        return f"export {START_VARIABLE}=1" if job.is_group() else ""

    async def sleep(self):
        """The wait before the next status check, capped, and cut short when
        Snakemake shuts the executor down: it waits for this wait to end, so
        a finished run would otherwise linger for up to one more interval."""
        seconds = self.next_seconds_between_status_checks
        cap = self.workflow.executor_settings.max_seconds_between_status_checks
        if cap is not None:
            seconds = min(seconds, cap)
        end = time.monotonic() + seconds
        while self.wait and (left := end - time.monotonic()) > 0:
            await asyncio.sleep(min(left, _SHUTDOWN_POLL_S))
