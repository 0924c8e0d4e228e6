"""The `leaktrace-slurm` executor: snakemake-executor-plugin-slurm, with each
SLURM job's Snakemake jobs run as a local run runs them.

The upstream plugin starts, inside every allocation, a Snakemake whose
executor (slurm-jobstep, ``--jobs 1``) runs each job as ``srun`` of yet another
Snakemake. A group job's jobs therefore run one at a time, each in a fresh
interpreter that imports PyTorch and the rest again (about 5 s, more than most
of the micro config's jobs take). Here the Snakemake inside the allocation
runs its jobs with the local executor over the allocation's CPUs: one job
directly; a group's jobs (``cluster.one_job``) in parallel, forked from a fork
server that Snakemake starts (rules/common.smk).

Submission, status and cancellation are the upstream plugin's, and so are its
settings, under this plugin's prefix (``--leaktrace-slurm-status-command`` for
``--slurm-status-command``), plus a cap on its status-check back-off. A
finished run ends at once rather than at the next status check.

Snakemake finds the plugin by its module name; the leaktrace package installs
it beside ``leaktrace`` (pyproject.toml).
"""

import asyncio
import time
from dataclasses import dataclass, field
from typing import Optional

import snakemake_executor_plugin_slurm as slurm
from snakemake_executor_plugin_slurm import common_settings

from leaktrace.forkserver import START_VARIABLE

__all__ = ["Executor", "ExecutorSettings", "common_settings"]

_SHUTDOWN_POLL_S = 0.25


@dataclass
class ExecutorSettings(slurm.ExecutorSettings):
    max_seconds_between_status_checks: Optional[int] = field(
        default=None,
        metadata={
            "help": "The longest wait between two status checks. The slurm plugin waits 10 s longer after "
                    "each check that sees no job finish, up to 180 s, and that wait falls between every "
                    "job and the jobs that need its outputs. Unset: no cap.",
            "env_var": False,
            "required": False,
        },
    )


class Executor(slurm.Executor):
    def additional_general_args(self):
        return "--executor local"

    def get_job_args(self, job):
        # The allocation holds job.threads CPUs (sbatch --cpus-per-task): the
        # local executor inside it runs on those, not on the node's count.
        return f"{super().get_job_args(job)} --cores {job.threads}"

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
