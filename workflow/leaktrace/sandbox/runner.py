"""Run untrusted Python in a resource-limited child process.

Variant validation, test-case transformation and clone detection execute code
the pipeline did not write, so every execution goes through `run_python`: a
fresh temporary directory, its own process session, resource limits, no
network where the platform allows it, and a structured result that never
raises for anything the child does.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO

_MAX_OUTPUT_BYTES = 100_000
_MAX_ERROR_CHARS = 2_000
_TRUNCATED = "\n[... output truncated]"
_PROGRAM_NAME = "program.py"
_OUTCOME_NAME = ".leaktrace-outcome.json"

# Runs inside the child interpreter before the program. Limits are applied here
# rather than through `preexec_fn`, which is unsafe when `run_many` drives
# several children from threads. A new user namespace is tried first: it lets
# an unprivileged user drop the network, and it makes RLIMIT_NPROC count only
# the sandbox's own processes. Modules the report needs are imported only when
# there is something to report, since interpreter start-up dominates short runs.
_BOOTSTRAP = r"""
import ctypes, resource, sys

program, outcome_path, cpu_s, memory_mb, file_size_mb, max_processes, *expr = sys.argv[1:]
CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
MB = 1024 * 1024

def isolate_network():
    try:
        unshare = ctypes.CDLL(None, use_errno=True).unshare  # Linux only
    except (OSError, AttributeError):
        return
    for flags in (CLONE_NEWUSER | CLONE_NEWNET, CLONE_NEWNET):
        if unshare(flags) == 0:
            return

def limit(kind, soft, hard=None):
    hard = soft if hard is None else hard
    _, ceiling = resource.getrlimit(kind)
    if ceiling != resource.RLIM_INFINITY:
        soft, hard = min(soft, ceiling), min(hard, ceiling)
    resource.setrlimit(kind, (soft, hard))

def describe(exc):
    try:
        message = str(exc)
    except Exception:
        message = "<unprintable message>"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__

def report(**outcome):
    import json
    try:
        text = json.dumps(outcome)
    except (TypeError, ValueError, RecursionError):
        text = json.dumps({key: repr(value) for key, value in outcome.items()})
    with open(outcome_path, "w", encoding="utf-8") as sink:
        sink.write(text)

isolate_network()
limit(resource.RLIMIT_CPU, int(cpu_s), int(cpu_s) + 1)
limit(resource.RLIMIT_AS, int(memory_mb) * MB)
limit(resource.RLIMIT_FSIZE, int(file_size_mb) * MB)
limit(resource.RLIMIT_NPROC, int(max_processes))
limit(resource.RLIMIT_CORE, 0)

# The program gets a fresh __main__ module, so pickle and doctest find what it defines.
main = type(sys)("__main__")
main.__file__ = program
sys.modules["__main__"], sys.argv = main, [program]
namespace = main.__dict__
try:
    with open(program, encoding="utf-8") as source:
        exec(compile(source.read(), program, "exec"), namespace)
    if expr:
        report(value=eval(expr[0], namespace))
except Exception as exc:
    namespace.clear()  # frees what a memory bomb holds, so reporting can allocate
    import traceback
    traceback.print_exc()
    report(error=describe(exc))
    sys.exit(1)
"""


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits for one child; `timeout_s` is wall clock, `cpu_s` CPU time.

    `max_processes` is RLIMIT_NPROC: it counts only the sandbox's processes where
    a user namespace can be created, all of the user's processes otherwise, and
    Linux does not apply it to root, for whom the group kill at the end remains.
    """

    timeout_s: float = 10.0
    cpu_s: int = 10
    memory_mb: int = 1024
    file_size_mb: int = 16
    max_processes: int = 64


@dataclass(frozen=True)
class SandboxResult:
    """What a child did. `status` is "ok", "error", "timeout" or "killed"."""

    status: str
    stdout: str
    stderr: str
    error: str | None
    return_value: object | None
    duration_s: float


def run_python(
    code: str,
    limits: SandboxLimits = SandboxLimits(),
    *,
    result_expr: str | None = None,
) -> SandboxResult:
    """Run `code` as a script in a sandboxed child and describe the outcome.

    If `result_expr` is given it is evaluated in the program's namespace after
    the program ran; its value (JSON-serialisable values as such, others as
    `repr`) comes back as `return_value` through a file, so the program's own
    printing cannot forge it.
    """
    with (
        tempfile.TemporaryDirectory(prefix="leaktrace-sandbox-", ignore_cleanup_errors=True) as workdir,
        tempfile.TemporaryFile() as stdout,
        tempfile.TemporaryFile() as stderr,
    ):
        program = Path(workdir) / _PROGRAM_NAME
        program.write_text(code, encoding="utf-8")
        outcome_path = Path(workdir) / _OUTCOME_NAME
        limit_args = [limits.cpu_s, limits.memory_mb, limits.file_size_mb, limits.max_processes]
        expression = [] if result_expr is None else [result_expr]
        started = time.monotonic()
        child = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOTSTRAP, program, outcome_path, *map(str, limit_args), *expression],
            cwd=workdir,
            env=_child_environment(workdir),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        try:
            child.wait(timeout=limits.timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            # Also ends processes the program forked and left behind.
            _kill_group(child.pid)
            child.wait()
        duration = time.monotonic() - started
        outcome = _read_outcome(outcome_path, limits.file_size_mb * 1024 * 1024)
        status, error = _classify(child.returncode, timed_out, limits, outcome)
        return SandboxResult(
            status=status,
            stdout=_read_stream(stdout),
            stderr=_read_stream(stderr),
            error=error,
            return_value=outcome.get("value") if status == "ok" else None,
            duration_s=duration,
        )


def run_many(
    codes: Sequence[str],
    limits: SandboxLimits = SandboxLimits(),
    *,
    workers: int,
    result_expr: str | None = None,
) -> list[SandboxResult]:
    """Run each program with `run_python`, `workers` at a time; results keep input order."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    run_one = partial(run_python, limits=limits, result_expr=result_expr)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(run_one, codes))


def _child_environment(workdir: str) -> dict[str, str]:
    """A minimal environment: nothing of the caller's leaks into the child."""
    return {"PATH": os.defpath, "HOME": workdir, "TMPDIR": workdir, "LC_ALL": "C.UTF-8"}


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _classify(returncode: int, timed_out: bool, limits: SandboxLimits, outcome: dict) -> tuple[str, str | None]:
    if timed_out:
        return "timeout", f"exceeded the wall-clock limit of {limits.timeout_s:g} s"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return "killed", f"killed by {name}"
    if returncode == 0:
        return "ok", None
    error = outcome.get("error")
    if not isinstance(error, str):
        error = f"exited with code {returncode}"
    return "error", error[:_MAX_ERROR_CHARS]


def _read_outcome(path: Path, limit_bytes: int) -> dict:
    """The bootstrap's report, or {} if there is no valid one.

    Opened without following links and read only if it is a regular file, so a
    program that puts a FIFO or a link to /dev/zero in its place cannot hang the caller.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}
    with open(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return {}
        data = handle.read(limit_bytes)
    try:
        outcome = json.loads(data.decode("utf-8"))
    except ValueError:
        return {}
    return outcome if isinstance(outcome, dict) else {}


def _read_stream(stream: IO[bytes]) -> str:
    stream.seek(0)
    data = stream.read(_MAX_OUTPUT_BYTES + 1)
    text = data[:_MAX_OUTPUT_BYTES].decode("utf-8", errors="replace")
    return text + _TRUNCATED if len(data) > _MAX_OUTPUT_BYTES else text
