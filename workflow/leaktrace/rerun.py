"""No mixed state after a failed rerun: a run removes, before its first job
starts, the old outputs of every job it is about to remake.

Snakemake removes a job's old outputs only when that job starts. A rerun
that fails part way therefore left a downstream job's old output beside the
new or deleted outputs of the jobs before it: a leakage scan whose shard
jobs failed kept its old ``report.md`` beside deleted shard parts, stale and
unmarked. The choice here is "none of the outputs a run remakes stay": at the
start (rules/common.smk, ``onstart``, after the planning checks passed) every
output of every job the run will execute is removed, so after any failure
each output on disk is either one its inputs made (not part of the rerun) or
absent, and the next run remakes exactly what is absent. The other choice,
keeping the previous complete outputs until the new ones are whole, would
need every stage from the first changed job downwards to write aside and
swap at the end, which Snakemake's per-job removal defeats."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable


def withdraw_outputs(paths: Iterable[tuple[str, bool]]) -> list[str]:
    """Remove each existing output ``(path, is_directory)`` (a directory
    output with its contents; a plain file output never as a directory) and
    return the removed paths, sorted. A path that does not exist is skipped."""
    removed = []
    for path, is_directory in paths:
        if os.path.islink(path) or os.path.isfile(path):
            os.remove(path)
        elif is_directory and os.path.isdir(path):
            shutil.rmtree(path)
        else:
            continue
        removed.append(path)
    return sorted(removed)
