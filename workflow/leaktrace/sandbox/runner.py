"""Run untrusted Python in an isolated child and describe what it did.

Variant validation, test-case transformation and clone detection execute code
the pipeline did not write, so every execution goes through `run_python` (run a
program, optionally evaluate an expression in it), `run_calls` (call a
program's functions one job at a time), `run_test` (run a
benchmark's test against a program; `run_unittest` for unittest classes;
`run_whole_test`, `run_whole_unittest` with the test in the program's process, for validation) or `run_stdio` (a whole program on
standard inputs, one fresh process per input). Each run gets (see DESIGN.md, "Executing
untrusted code"):

- its own PID, mount, network, IPC and UTS namespaces (and a user namespace
  when the caller is not root), made with direct system calls;
- a read-only root holding only the interpreter, its standard library and the
  shared libraries they load (`rootfs`), private size-limited tmpfs mounts as
  working directory (/tmp) and /dev/shm, no network but an unconfigured
  loopback, so no host socket of any kind;
- the program under uid 65534 and the trusted harness under 65533 (both
  without privileges, no_new_privs, not dumpable), so neither the caller nor
  the harness can be signalled, traced or read by the program; a caller that
  is not root gets one mapped uid for both, all capabilities dropped, and the
  harness is still safe as the namespace's init;
- a cgroup bounding memory and process count across all its processes
  (`cgroups`), rlimits on CPU time and file size per process, and a wall-clock
  timeout; when the call returns, the namespace's init has exited (the kernel
  kills the rest) and the cgroup has been emptied and removed.

Compiled languages go through `run_build`: the source files written into the
run's /tmp, then each command (compile, run) executed under the program's
uid, with the compiler's own files (`toolchains`) added read-only to the
root; nothing else of the host becomes visible.

The result never raises for anything the child does: status "ok", "wrong" (the
test failed), "error" (the program failed or ended early), "timeout" or
"killed" (a limit or a signal), with its cause in `error`.

Where the platform lacks namespaces or a writable cgroup, `SandboxUnavailable`
names what is missing; `isolation="weak"` runs anyway with what is there
(rlimits per process, a process-group kill at the end, and no defence against
a program that calls setsid or signals the caller's uid), and every result
says which level was used.

What remains, by design or by limit of this approach: code runs on the
host's kernel with no seccomp filter, so a kernel bug reachable from an
unprivileged process escapes (as from any namespace sandbox); the program can
read /dev/urandom, spend `cpu_s` CPU seconds in each of its processes within
the wall-clock timeout, and take its share of the machine's CPU and memory
bandwidth meanwhile; the test itself (written by the benchmark's authors)
runs in the harness process and is trusted to judge. See `harness` for what a
program can and cannot do to the verdict.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import logging
import marshal
import os
import select
import signal
import struct
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from leaktrace import threadsafe_ast
from leaktrace.sandbox import cgroups, harness, isolation, rootfs, values

log = logging.getLogger(__name__)

PROGRAM_UID = 65534  # nobody
HARNESS_UID = 65533
ISOLATION_LEVELS = ("full", "weak")
_HARNESS_PROCESSES = 2  # the child the caller starts and the harness process share the run's cgroup
_MAX_OUTPUT_BYTES = 100_000
_MAX_REPORT_BYTES = 64 * 1024 * 1024
_MAX_ERROR_CHARS = 2_000
_START_UP_S = 10.0  # a stdin run's allowance for starting its sandbox, beyond its cases' limits (at least one case's)
_TRUNCATED = "\n[... output truncated]"
_SPEC_HEADER = struct.Struct(">II")
_ENVIRONMENT = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LC_ALL": "C.UTF-8"}
_CHILD_ENVIRONMENT = {**_ENVIRONMENT, "PYTHONHASHSEED": "0"}  # the same hashes, set orders, in every run
_CHILD_MODULES = (values, isolation, harness)  # in import order
# Builds the child's modules from code compiled here (no path to the project is
# visible in the sandbox) and starts the harness. The spec comes from the
# caller, so marshal is safe for it; nothing the program sends is unmarshalled.
_BOOTSTRAP = """
import marshal, os, sys
header = os.pread(0, 8, 0)
setup_length, trust_length = int.from_bytes(header[:4], "big"), int.from_bytes(header[4:], "big")
setup = marshal.loads(os.pread(0, setup_length, 8))
Module = type(sys)
for package in ("leaktrace", "leaktrace.sandbox"):
    sys.modules[package] = Module(package)
for name, code in setup.pop("modules"):
    module = sys.modules[name] = Module(name)
    exec(marshal.loads(code), module.__dict__)
sys.modules["leaktrace.sandbox.harness"].main(setup, 8 + setup_length, trust_length)
"""


class SandboxUnavailable(RuntimeError):
    """Full isolation was asked for and the platform cannot provide it."""


@dataclass(frozen=True)
class SandboxLimits:
    """Limits for one run, and the isolation it requires.

    `timeout_s` is wall clock; `cpu_s` CPU time and `file_size_mb` the largest
    file, per process; `memory_mb` bounds the whole run (its cgroup, the
    harness included), `max_processes` the program's processes together (the
    program process included); `scratch_mb` is the size of each of its tmpfs mounts (/tmp,
    /dev/shm). `isolation` is "full" (refuse to run without namespaces and a
    cgroup) or "weak" (run with what the platform has).
    """

    timeout_s: float = 10.0
    cpu_s: int = 10
    memory_mb: int = 1024
    file_size_mb: int = 16
    max_processes: int = 64
    scratch_mb: int = 64
    isolation: str = "full"

    def __post_init__(self):
        if self.isolation not in ISOLATION_LEVELS:
            raise ValueError(f"isolation must be one of {ISOLATION_LEVELS}, got {self.isolation!r}")


@dataclass(frozen=True)
class SandboxResult:
    """What a run did. `status` is "ok", "wrong", "error", "timeout" or "killed".

    `return_value` is the expression's value (exact builtin types only);
    `record` the canonical bytes (`values.encode`) of the calls a test made
    and what each returned or raised, and how the test ended: two runs behaved
    alike towards the test iff their records are equal;
    `isolation` the level the run had.
    """

    status: str
    stdout: str
    stderr: str
    error: str | None
    return_value: object | None
    duration_s: float
    record: bytes | None = None
    isolation: str = "full"


@dataclass(frozen=True)
class _Platform:
    namespaces: str | None  # None when available, else why not
    cgroup: str | None
    view: tuple
    user_namespace: bool


def isolation_level(limits: SandboxLimits) -> str:
    """The level runs under `limits` get: "full", or "weak" where that was allowed;
    raises SandboxUnavailable naming what is missing otherwise."""
    platform = _platform()
    missing = [reason for reason in (platform.namespaces, platform.cgroup) if reason is not None]
    if not missing:
        return "full"
    if limits.isolation == "full":
        raise SandboxUnavailable(
            "cannot isolate untrusted code here: "
            + "; ".join(missing)
            + ". Set variants.sandbox.isolation: weak to run with weaker isolation (recorded in the results)."
        )
    return "weak"


def run_python(code: str, limits: SandboxLimits = SandboxLimits(), *, result_expr: str | None = None) -> SandboxResult:
    """Run `code` as a script; if `result_expr` is given, evaluate it in the
    program's namespace afterwards and return its value (exact builtin types)."""
    trust = {"mode": "load"} if result_expr is None else {"mode": "expression", "expression": result_expr}
    return _run(code, trust, limits)


def run_calls(code: str, calls: Sequence[tuple[str, tuple]], limits: SandboxLimits = SandboxLimits()) -> SandboxResult:
    """Run `code`, then call its functions in turn, each (name, arguments) of
    `calls` (exact builtin values) sent to the program only after the one
    before returned: the program process never holds the arguments of any
    call but the one running, nor what the others returned (they stay in the
    harness). A result of status "ok" holds in `return_value` a tuple of the
    calls' return values; the first call that raises makes it an error."""
    trust = {"mode": "calls", "calls": [(name, tuple(arguments)) for name, arguments in calls]}
    return _run(code, trust, limits)


def run_test(code: str, test: str, entry_point: str, limits: SandboxLimits = SandboxLimits()) -> SandboxResult:
    """Run the test's `check` against the program's `entry_point` (HumanEval's
    protocol); the result's `record` holds every call the test made."""
    trust = {"mode": "test", "test": test, "entry_point": entry_point, "names": _names_from_program(test)}
    return _run(code, trust, limits)


def run_whole_test(code: str, test: str, entry_point: str, limits: SandboxLimits = SandboxLimits()) -> SandboxResult:
    """Run the test's `check` against the program's `entry_point` in the
    program's own process, as the benchmark's harness runs it (`harness._whole_test`):
    for checking the benchmark's own solution and what the pipeline made of
    it, whose return values may be of any type and whose effects on their
    arguments the test may check; not for judging code a model wrote, which
    shares the test's process here and could answer for it (`run_test`).
    The result's `record` holds every call the test made of the program."""
    trust = {
        "mode": "whole",
        "form": "check",
        "test": test,
        "entry_point": entry_point,
        "names": _names_from_program(test),
    }
    return _run(code, trust, limits)


def run_whole_unittest(code: str, test: str, limits: SandboxLimits = SandboxLimits()) -> SandboxResult:
    """Run the unittest.TestCase classes of `test` in the program's own
    process, with the program's own objects (`run_whole_test`'s path, and its
    use: not for code a model wrote, which `run_unittest` judges). The
    result's `record` holds every call of a program's function and every
    assertion the tests made, and each test's outcome."""
    trust = {"mode": "whole", "form": "unittest", "test": test, "entry_point": "", "names": _names_from_program(test)}
    return _run(code, trust, limits)


def run_whole_unittests(
    items: Sequence[tuple[str, str]], limits: SandboxLimits = SandboxLimits(), *, workers: int
) -> list[SandboxResult]:
    """`run_whole_unittest` on each (code, test), `workers` at a time; results keep input order."""
    return in_parallel([functools.partial(run_whole_unittest, *item, limits) for item in items], workers)


def run_whole_tests(
    items: Sequence[tuple[str, str, str]], limits: SandboxLimits = SandboxLimits(), *, workers: int
) -> list[SandboxResult]:
    """`run_whole_test` on each (code, test, entry point), `workers` at a time; results keep input order."""
    return in_parallel([functools.partial(run_whole_test, *item, limits) for item in items], workers)


def run_unittest(code: str, test: str, limits: SandboxLimits = SandboxLimits()) -> SandboxResult:
    """Run the unittest.TestCase classes of `test` against the program
    (ClassEval's protocol), the program's objects held by reference
    (`harness.Remote`); the result's `record` holds every request the test
    made and what came back, and each test's outcome."""
    trust = {"mode": "unittest", "test": test, "names": _names_from_program(test)}
    return _run(code, trust, limits)


def run_unittests(
    items: Sequence[tuple[str, str]], limits: SandboxLimits = SandboxLimits(), *, workers: int
) -> list[SandboxResult]:
    """`run_unittest` on each (code, test), `workers` at a time; results keep input order."""
    return in_parallel([functools.partial(run_unittest, *item, limits) for item in items], workers)


def run_stdio(
    code: str,
    inputs: Sequence[str],
    limits: SandboxLimits = SandboxLimits(),
    *,
    max_output_bytes: int = 16 * 1024 * 1024,
) -> SandboxResult:
    """Run `code` as a whole program once per input, each in a process of its
    own with the input as standard input, in one sandbox (namespaces, cgroup,
    root set up once). `limits.timeout_s` bounds each run's wall clock, and
    the sandbox's is the sum of theirs plus its own start-up allowance, so a
    slow case is reported as that case even where starting the sandbox is
    slow (a loaded machine). A result of status "ok" holds in
    `return_value` one tuple per run, up to the first that did not exit with
    status 0: ("code", status, stdout bytes), ("signal", number, stdout
    bytes), ("timeout",) or ("output", why) when the outputs together passed
    `max_output_bytes`. `leaktrace.sandbox.stdio` judges them."""
    trust = {
        "mode": "stdio",
        "inputs": list(inputs),
        "case_timeout_s": limits.timeout_s,
        "max_output_bytes": max_output_bytes,
    }
    whole = dataclasses.replace(limits, timeout_s=limits.timeout_s * len(inputs) + max(limits.timeout_s, _START_UP_S))
    return _run(code, trust, whole)


def run_build(
    files: Mapping[str, str],
    commands: Sequence[Sequence[str]],
    view: tuple,
    limits: SandboxLimits = SandboxLimits(),
    *,
    environment: Mapping[str, str] | None = None,
    max_output_bytes: int = 1024 * 1024,
) -> SandboxResult:
    """Write `files` (name -> text) into the run's working directory and run
    each command (an argv with an absolute program path) in turn, each in a
    process of its own under the program's uid, with `view` (a toolchain's
    files, `toolchains`) added read-only to the interpreter's and `environment`
    added to the run's variables. `limits.timeout_s`
    bounds each command's wall clock. A result of status "ok" holds in
    `return_value` one tuple per command, up to the first that did not exit
    with status 0: ("code", status, stdout bytes, stderr bytes), ("signal",
    number, stdout bytes, stderr bytes) or ("timeout",)."""
    trust = {
        "mode": "build",
        "commands": [list(command) for command in commands],
        "step_timeout_s": limits.timeout_s,
        "max_output_bytes": max_output_bytes,
    }
    whole = dataclasses.replace(limits, timeout_s=limits.timeout_s * len(commands) + max(limits.timeout_s, _START_UP_S))
    return _execute(
        "", trust, whole, _platform(), isolation_level(limits), files=dict(files), view=view, environment=environment
    )


def run_many(
    codes: Sequence[str], limits: SandboxLimits = SandboxLimits(), *, workers: int, result_expr: str | None = None
) -> list[SandboxResult]:
    """`run_python` on each program, `workers` at a time; results keep input order."""
    return in_parallel(
        [functools.partial(run_python, code, limits, result_expr=result_expr) for code in codes], workers
    )


def run_tests(
    items: Sequence[tuple[str, str, str]], limits: SandboxLimits = SandboxLimits(), *, workers: int
) -> list[SandboxResult]:
    """`run_test` on each (code, test, entry point), `workers` at a time; results keep input order."""
    return in_parallel([functools.partial(run_test, *item, limits) for item in items], workers)


def in_parallel(calls: list, workers: int) -> list[SandboxResult]:
    """Each call (a run of the sandbox), `workers` at a time; results keep input order."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda call: call(), calls))


def _names_from_program(test: str) -> list[str]:
    """Names the test reads but neither defines nor gets from builtins: the program's
    (the entry point's helpers, e.g. HumanEval/38's `encode_cyclic`)."""
    try:
        tree = threadsafe_ast.parse(test)
    except (SyntaxError, ValueError):
        return []  # the harness reports the test's syntax error
    loaded, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).partition(".")[0])
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return sorted(loaded - bound - set(dir(builtins)))


@functools.cache
def _compiled_child_modules() -> tuple[tuple[str, bytes], ...]:
    return tuple(
        (module.__name__, marshal.dumps(compile(Path(module.__file__).read_text(), module.__file__, "exec")))
        for module in _CHILD_MODULES
    )


@functools.cache
def _platform() -> _Platform:
    """What this machine can provide, probed once: a cgroup, the interpreter's
    files, then a trial run in namespaces."""
    try:
        cgroups.create(64, 8).remove()
        cgroup = None
    except (cgroups.CgroupUnavailable, OSError) as error:
        cgroup = f"no writable cgroup ({error})"
    user_namespace = os.geteuid() != 0
    try:
        view = rootfs.interpreter_view()
    except rootfs.ViewUnavailable as error:
        view, namespaces = (), f"no read-only view of the interpreter ({error})"
    else:
        trial = _Platform(None, cgroup, view, user_namespace)
        result = _execute("pass", {"mode": "load"}, SandboxLimits(timeout_s=30, isolation="weak"), trial, "full")
        namespaces = None if result.status == "ok" else f"no isolating namespaces ({result.error})"
    platform = _Platform(namespaces, cgroup, view, user_namespace)
    for reason in (namespaces, cgroup):
        if reason is not None:
            log.warning("sandbox: %s", reason)
    return platform


def _run(code: str, trust: dict, limits: SandboxLimits) -> SandboxResult:
    level = isolation_level(limits)
    return _execute(code, trust, limits, _platform(), level)


def _execute(
    code: str,
    trust: dict,
    limits: SandboxLimits,
    platform: _Platform,
    level: str,
    *,
    files: Mapping[str, str] | None = None,
    view: tuple = (),
    environment: Mapping[str, str] | None = None,
) -> SandboxResult:
    namespaces, has_cgroup = platform.namespaces is None, platform.cgroup is None
    user_namespace = namespaces and platform.user_namespace
    switch_uids = os.geteuid() == 0 and not user_namespace  # in a user namespace only one uid is mapped
    group = cgroups.create(limits.memory_mb, limits.max_processes + _HARNESS_PROCESSES) if has_cgroup else None
    with (
        tempfile.TemporaryDirectory(prefix="leaktrace-sandbox-", ignore_cleanup_errors=True) as root,
        tempfile.TemporaryFile() as spec,
        tempfile.TemporaryFile() as stdout,
        tempfile.TemporaryFile() as stderr,
        tempfile.TemporaryFile() as report,
    ):
        setup = {
            "modules": _compiled_child_modules(),
            "code": code,
            "stdio": trust["mode"] == "stdio",
            "build": trust["mode"] == "build",
            "files": tuple((files or {}).items()),
            "report_fd": report.fileno(),
            "namespaces": namespaces,
            "user_namespace": user_namespace,
            "uids": {
                "owner": PROGRAM_UID if namespaces or switch_uids else os.geteuid(),
                "program": PROGRAM_UID if switch_uids else None,
                "harness": HARNESS_UID if switch_uids else None,
            },
            "cgroup_procs": group.procs_files() if group else [],
            "root": root,
            "view": platform.view + tuple(view),
            "scratch_mb": limits.scratch_mb,
            "workdir": "/tmp" if namespaces else root,
            "environment": {
                **(_ENVIRONMENT if namespaces else {**_ENVIRONMENT, "HOME": root, "TMPDIR": root}),
                **(environment or {}),
            },
            "limits": {"cpu_s": limits.cpu_s, "memory_mb": limits.memory_mb, "file_size_mb": limits.file_size_mb},
            "rlimit_memory": not has_cgroup,
            "rlimit_processes": None if has_cgroup else limits.max_processes,
        }
        setup_bytes, trust_bytes = marshal.dumps(setup), marshal.dumps(trust)
        spec.write(_SPEC_HEADER.pack(len(setup_bytes), len(trust_bytes)) + setup_bytes + trust_bytes)
        spec.seek(0)
        started = time.monotonic()
        child = subprocess.Popen(  # no site, no '' on sys.path; not -I, which would ignore PYTHONHASHSEED
            [rootfs.interpreter(), "-S", "-P", "-c", _BOOTSTRAP],
            cwd="/",
            env=_CHILD_ENVIRONMENT,
            stdin=spec,
            stdout=stdout,
            stderr=stderr,
            pass_fds=(report.fileno(),),
            start_new_session=True,
        )
        try:
            timed_out = not _exited_within(child, limits.timeout_s)
        finally:
            try:
                os.killpg(child.pid, signal.SIGKILL)  # weak isolation's only cleanup; harmless otherwise
            except ProcessLookupError:
                pass
            memory_kills = 0
            if group is not None:
                group.kill()
                memory_kills = group.memory_kills()
                group.remove()
            child.wait()
        duration = time.monotonic() - started
        outcome = _read_report(report)
        status, error = _classify(child.returncode, timed_out, memory_kills, limits, outcome)
        value = outcome.get("value") if status == "ok" else None
        return SandboxResult(
            status=status,
            stdout=_read_stream(stdout),
            stderr=_read_stream(stderr),
            error=None if error is None else error[:_MAX_ERROR_CHARS],
            return_value=value[0] if type(value) is tuple and len(value) == 1 else None,
            duration_s=duration,
            record=outcome.get("record") if status in ("ok", "wrong") else None,
            isolation=level,
        )


def _exited_within(child: subprocess.Popen, timeout_s: float) -> bool:
    """Wait for `child` to exit, at most `timeout_s`; woken by a pidfd the moment it
    exits (Popen.wait polls with sleeps of up to 50 ms, a third of a short run)."""
    try:
        pidfd = os.pidfd_open(child.pid)
    except (AttributeError, OSError):  # Linux before 5.3
        try:
            child.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        return bool(select.select([pidfd], [], [], timeout_s)[0])
    finally:
        os.close(pidfd)


def _classify(
    returncode: int, timed_out: bool, memory_kills: int, limits: SandboxLimits, report: dict
) -> tuple[str, str | None]:
    if timed_out:
        return "timeout", f"exceeded the wall-clock limit of {limits.timeout_s:g} s"
    if memory_kills:
        return "killed", f"exceeded the memory limit of {limits.memory_mb} MB"
    if "setup_error" in report:
        return "error", f"sandbox set-up failed: {report['setup_error']}"
    ended = report.get("program_exit")
    if type(ended) is tuple and ended[:1] == ("signal",):
        return "killed", f"the program was {_exit_description(-ended[1])}"
    if report.get("status") in ("ok", "wrong", "error"):
        return report["status"], report.get("error")
    signalled = returncode < 0 or returncode > 128
    return "killed" if signalled else "error", f"the sandbox ended without a verdict ({_exit_description(returncode)})"


def _exit_description(returncode: int) -> str:
    if returncode < 0 or returncode > 128:
        number = -returncode if returncode < 0 else returncode - 128
        try:
            return f"killed by {signal.Signals(number).name}"
        except ValueError:
            return f"killed by signal {number}"
    return f"exit code {returncode}"


def _read_report(report: IO[bytes]) -> dict:
    """The harness's report, or {} if there is none (a process of the run was killed first)."""
    report.seek(0)
    try:
        outcome = values.decode(report.read(_MAX_REPORT_BYTES))
    except ValueError:
        return {}
    return outcome if type(outcome) is dict else {}


def _read_stream(stream: IO[bytes]) -> str:
    stream.seek(0)
    data = stream.read(_MAX_OUTPUT_BYTES + 1)
    text = data[:_MAX_OUTPUT_BYTES].decode("utf-8", errors="replace")
    return text + _TRUNCATED if len(data) > _MAX_OUTPUT_BYTES else text
