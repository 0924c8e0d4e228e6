"""What each partition's nodes offer, as ``sinfo`` reports it, and whether a
job's request fits one of them: a job that fits no node stays PENDING for
ever, without a word from SLURM or Snakemake."""

from __future__ import annotations

import math
import re
import subprocess
from dataclasses import dataclass

# one line per node and partition: partition (the default with a trailing *),
# CPUs, memory (MB), generic resources, the partition's time limit
SINFO = ["sinfo", "--noheader", "--Node", "--format=%P|%c|%m|%G|%l"]


@dataclass(frozen=True)
class Node:
    cpus: int
    mem_mb: int
    gpus: int


@dataclass(frozen=True)
class NodeLimits:
    """A partition's nodes and its time limit (None: unlimited)."""

    partition: str
    nodes: tuple[Node, ...]
    max_minutes: int | None

    @property
    def cpus(self) -> int:
        return max(n.cpus for n in self.nodes)

    @property
    def mem_mb(self) -> int:
        return max(n.mem_mb for n in self.nodes)

    @property
    def gpus(self) -> int:
        return max(n.gpus for n in self.nodes)

    def __str__(self) -> str:
        time = "no time limit" if self.max_minutes is None else f"time limit {self.max_minutes} min"
        return f"{self.cpus} CPUs, {self.mem_mb} MB, {self.gpus} GPUs, {time}"


def minutes(limit: str) -> int | None:
    """A SLURM time limit (``[days-]hours:minutes:seconds``, ``minutes:seconds``,
    ``minutes``, ``days-hours[:minutes]``) in whole minutes; None when unlimited."""
    if limit.lower() in ("infinite", "unlimited"):
        return None
    days, _, clock = limit.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    if days:  # days-hours[:minutes[:seconds]]
        hours, mins, secs = (parts + [0, 0])[:3]
    elif len(parts) == 3:
        hours, mins, secs = parts
    elif len(parts) == 2:
        hours, (mins, secs) = 0, parts
    else:
        hours, mins, secs = 0, parts[0], 0
    return math.ceil(((int(days or 0) * 24 + hours) * 60 + mins) + secs / 60)


def gpu_count(gres: str) -> int:
    """GPUs in an sinfo %G field (``gpu:a100:4(S:0-1),mps:100``, ``gpu:2``, ``(null)``)."""
    total = 0
    for entry in re.sub(r"\([^)]*\)", "", gres).split(","):
        fields = entry.split(":")
        if fields[0] == "gpu" and len(fields) > 1 and fields[-1].isdigit():
            total += int(fields[-1])
    return total


def parse_sinfo(text: str) -> dict[str | None, NodeLimits]:
    """Each partition's limits, keyed by name; the default partition also under None."""
    nodes: dict[str, list[Node]] = {}
    limits: dict[str, int | None] = {}
    default = None
    for line in text.splitlines():
        if not line.strip():
            continue
        partition, cpus, mem, gres, limit = line.strip().split("|")
        if partition.endswith("*"):
            partition = default = partition[:-1]
        nodes.setdefault(partition, []).append(Node(int(cpus.rstrip("+")), int(mem.rstrip("+")), gpu_count(gres)))
        limits[partition] = minutes(limit)
    result: dict[str | None, NodeLimits] = {
        name: NodeLimits(name, tuple(found), limits[name]) for name, found in nodes.items()
    }
    if default is not None:
        result[None] = result[default]
    return result


def read_partitions(logger=None) -> dict[str | None, NodeLimits]:
    """The cluster's partitions ({} when sinfo does not answer)."""
    try:
        return parse_sinfo(subprocess.run(SINFO, capture_output=True, text=True, check=True, timeout=60).stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        if logger is not None:
            logger.warning(f"sinfo did not answer ({error}): job requests are submitted unchecked")
        return {}


def request_problems(request: dict, limits: NodeLimits) -> list[str]:
    """What in ``request`` (cpus, mem_mb, gpus, runtime_min; None: not asked)
    no node of the partition offers; [] when one node offers all of it."""
    wanted = {key: request.get(key) for key in ("cpus", "mem_mb", "gpus")}
    units = {"cpus": "CPUs", "mem_mb": "MB of memory", "gpus": "GPUs"}
    problems = [
        f"it asks for {value} {units[key]}, the partition's largest node has {getattr(limits, key)} (sinfo)"
        for key, value in wanted.items()
        if value and value > getattr(limits, key)
    ]
    if not problems and not any(
        all(not value or value <= getattr(node, key) for key, value in wanted.items()) for node in limits.nodes
    ):
        problems.append(
            "no single node of the partition has "
            + ", ".join(f"{value} {units[key]}" for key, value in wanted.items() if value)
        )
    runtime = request.get("runtime_min")
    if runtime and limits.max_minutes is not None and runtime > limits.max_minutes:
        problems.append(f"it asks for {runtime} min, the partition's time limit is {limits.max_minutes} min (sinfo)")
    return problems
