"""What a failed run prints last: each failed job's own error, where the user
looks. Snakemake's console names a failed job's log file and says "check log
file(s)"; the error line itself (``leaktrace: bad input: FILE, record N:
...``) is only in that file. The Snakefile's ``onerror`` handler reads
Snakemake's own log of the run for the failed jobs and prints the last
lines of each job's log under one heading."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_ERROR = re.compile(r"^Error in rule (?P<rule>\S+):\s*$")
_LOG = re.compile(r"^\s+log: (?P<paths>.+?)(?: \(check log file\(s\) for error details\))?\s*$")
_WILDCARDS = re.compile(r"^\s+wildcards: (?P<wildcards>.+?)\s*$")


@dataclass(frozen=True)
class FailedJob:
    rule: str
    wildcards: str | None
    logs: tuple[str, ...]


def failed_jobs(snakemake_log: str) -> list[FailedJob]:
    """The failed jobs an ``Error in rule`` block of Snakemake's log names, in order."""
    jobs: list[FailedJob] = []
    rule, wildcards, logs = None, None, ()
    for line in snakemake_log.splitlines() + [""]:
        if rule is not None and not line.startswith((" ", "\t")):
            jobs.append(FailedJob(rule, wildcards, logs))
            rule = None
        if match := _ERROR.match(line):
            rule, wildcards, logs = match["rule"], None, ()
        elif rule is not None and (match := _LOG.match(line)):
            logs = tuple(p.strip() for p in match["paths"].split(",") if p.strip())
        elif rule is not None and (match := _WILDCARDS.match(line)):
            wildcards = match["wildcards"]
    return list(dict.fromkeys(jobs))


def last_lines(path: Path, n: int) -> list[str]:
    """The last ``n`` non-blank lines of a job's log (progress bars' carriage returns dropped)."""
    try:
        text = path.read_text(errors="replace")
    except OSError as err:
        return [f"(its log {path} cannot be read: {err.strerror})"]
    lines = [line.rsplit("\r", 1)[-1].rstrip() for line in text.splitlines()]
    lines = [line for line in lines if line.strip()]
    return lines[-n:] if lines else ["(its log is empty)"]


def failure_summary(snakemake_logs: Path | str | list | None, n_lines: int = 5) -> str:
    """The heading and each failed job's last log lines, or "" when the logs
    name none. ``snakemake_logs``: the run's log file(s), as ``onerror`` gets them."""
    paths = [snakemake_logs] if isinstance(snakemake_logs, (str, Path)) else list(snakemake_logs or [])
    jobs: list[FailedJob] = []
    for path in paths:
        try:
            jobs += failed_jobs(Path(path).read_text(errors="replace"))
        except OSError:
            continue
    jobs = list(dict.fromkeys(jobs))
    if not jobs:
        return ""
    out = [f"leaktrace: {len(jobs)} job{'s' if len(jobs) > 1 else ''} failed; the end of each job's log:"]
    for job in jobs:
        out.append(f"  {job.rule}" + (f" ({job.wildcards})" if job.wildcards else ""))
        if not job.logs:
            out.append("    (no log file: see the job's message above)")
        for log in job.logs:
            out += [f"    {log}:"] + [f"      {line}" for line in last_lines(Path(log), n_lines)]
    return "\n".join(out)
