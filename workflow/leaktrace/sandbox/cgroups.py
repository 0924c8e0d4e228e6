"""A cgroup per sandboxed run: total memory and process count across every
process the run starts, a count of the kills the memory limit caused, and a
way to kill whatever is left.

cgroup v2 is used where the caller's cgroup has (or can be given) the
`memory` and `pids` controllers in its `cgroup.subtree_control`; otherwise the
v1 `memory` and `pids` hierarchies (as on hybrid systems). The run's cgroups
are created below the caller's own, so whatever bounds the caller also bounds
its runs. On a v2 system, v2's rule that a cgroup with processes cannot
enable controllers for its children means the caller must run in a cgroup
prepared for it (root's, or a container's delegated one); elsewhere
`CgroupUnavailable` says so and the sandbox needs `isolation: weak`.
"""

from __future__ import annotations

import functools
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CONTROLLERS = ("memory", "pids")
_KILL_DEADLINE_S = 5.0
_counter = itertools.count()


class CgroupUnavailable(RuntimeError):
    """No writable cgroup with the memory and pids controllers."""


@dataclass(frozen=True)
class RunCgroup:
    """The run's cgroup directories: one (v2) or one per controller (v1)."""

    version: int
    memory: Path
    pids: Path

    @property
    def directories(self) -> tuple[Path, ...]:
        return (self.memory,) if self.memory == self.pids else (self.memory, self.pids)

    def procs_files(self) -> list[str]:
        return [str(directory / "cgroup.procs") for directory in self.directories]

    def memory_kills(self) -> int:
        """How many processes of the run the memory limit killed."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        return _counter_value(self.memory / name, "oom_kill")

    def kill(self) -> None:
        """SIGKILL everything still in the cgroup and wait until it is empty."""
        deadline = time.monotonic() + _KILL_DEADLINE_S
        kill_switch = self.memory / "cgroup.kill"
        for directory in self.directories:
            while True:
                pids = _read(directory / "cgroup.procs").split()
                if not pids:
                    break
                if self.version == 2 and kill_switch.exists():
                    kill_switch.write_text("1")
                for pid in pids:
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"processes of a sandboxed run survive in {directory}: {pids}")
                time.sleep(0.001)

    def remove(self) -> None:
        """Remove the (empty) cgroup."""
        deadline = time.monotonic() + _KILL_DEADLINE_S
        for directory in self.directories:
            while True:
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY while the last exiting task is released
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.001)


def create(memory_mb: int, max_processes: int) -> RunCgroup:
    """A new cgroup bounding memory (swap included) and process count."""
    version, parents = controller_parents()
    name = f"leaktrace-{os.getpid()}-{next(_counter)}"
    made = []
    try:
        for parent in dict.fromkeys(parents.values()):
            (parent / name).mkdir()
            made.append(parent / name)
        group = RunCgroup(version, parents["memory"] / name, parents["pids"] / name)
        limit = str(memory_mb * 1024 * 1024)
        if version == 2:
            (group.memory / "memory.max").write_text(limit)
            if (group.memory / "memory.swap.max").exists():
                (group.memory / "memory.swap.max").write_text("0")
        else:
            (group.memory / "memory.limit_in_bytes").write_text(limit)
            if (group.memory / "memory.memsw.limit_in_bytes").exists():
                (group.memory / "memory.memsw.limit_in_bytes").write_text(limit)
        (group.pids / "pids.max").write_text(str(max_processes))
    except OSError:
        for directory in made:
            directory.rmdir()
        raise
    return group


@functools.cache
def controller_parents() -> tuple[int, dict[str, Path]]:
    """The cgroup version in use and, per controller, the caller's cgroup directory
    under which runs are created; raises CgroupUnavailable naming what is missing."""
    mounts = _cgroup_mounts()
    membership = _membership()
    unified = mounts.get("cgroup2")
    if unified is not None and "" in membership:
        parent = unified / membership[""].lstrip("/")
        enabled = _read(parent / "cgroup.subtree_control").split()
        if not set(CONTROLLERS) <= set(enabled):
            try:
                (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in CONTROLLERS))
            except OSError:
                pass
            enabled = _read(parent / "cgroup.subtree_control").split()
        if set(CONTROLLERS) <= set(enabled) and os.access(parent, os.W_OK):
            return 2, {controller: parent for controller in CONTROLLERS}
    parents, missing = {}, []
    for controller in CONTROLLERS:
        mount, path = mounts.get(controller), membership.get(controller)
        if mount is None or path is None:
            missing.append(f"no {controller} controller (cgroup v1 hierarchy or delegated in v2)")
            continue
        parent = mount / path.lstrip("/")
        if not os.access(parent, os.W_OK):
            missing.append(f"{parent} is not writable")
            continue
        parents[controller] = parent
    if missing:
        raise CgroupUnavailable("; ".join(missing))
    return 1, parents


def _cgroup_mounts() -> dict[str, Path]:
    """Mount point per v1 controller, and of the v2 hierarchy under the key 'cgroup2'."""
    mounts = {}
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        fields = line.split()
        separator = fields.index("-")
        fstype, options = fields[separator + 1], fields[separator + 3].split(",")
        if fstype == "cgroup2":
            mounts.setdefault("cgroup2", Path(fields[4]))
        elif fstype == "cgroup":
            for controller in CONTROLLERS:
                if controller in options:
                    mounts.setdefault(controller, Path(fields[4]))
    return mounts


def _membership() -> dict[str, str]:
    """The caller's cgroup path per v1 controller, and its v2 path under the key ''."""
    membership = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            membership[controller] = path
    return membership


def _counter_value(path: Path, key: str) -> int:
    for line in _read(path).splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
