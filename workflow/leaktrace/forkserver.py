"""A fork server for a local run's jobs: one process imports the heavy libraries
once, and each job is a fork of it.

Every Snakemake job is a fresh ``python -m leaktrace``, and most of them import
PyTorch, transformers and pandas before they do a second's work. On a machine
that keeps little in its page cache that import is tens of seconds a job, more
than the work itself (docs/architecture.md, "The fork server"). On a local run the Snakefile starts
this server (``onstart``); the CLI hands its job to the server when one is
listening, and runs it itself when none is or the server declines.

The server runs a job only where the fork behaves as a fresh interpreter would:
the same interpreter and module path, and the same environment but for the
variables Snakemake sets per job, which the fork applies itself (thread counts,
the temporary directory). Anything else that differs (a rule that goes online
without ``HF_HUB_OFFLINE``, a user's own variables) and the client runs the job
itself. Results are the same bytes either way (tests/test_forkserver.py).

Protocol, over a Unix socket in a directory only this user can enter:

- client to server: a length-prefixed JSON request (argv, cwd, environment,
  interpreter, module path) with the client's stdin, stdout and stderr;
- server to client: the job's pid, or 0 when it declines;
- server to client: the job's exit status when it ends (128 + N if signal N
  ended it).

The job runs in its own process group. The client passes SIGINT, SIGTERM and
SIGHUP on to that group, and the server kills the group if its client goes away,
so stopping Snakemake stops the job as it would a job of its own. The server
exits when the process that started it does.

A socket's path must fit in 107 bytes, and the temporary directory can be long
(a SLURM job's, or pytest's under xdist, whose ``popen-gwN`` made this module's
test directory 109 bytes: the server failed to bind and the test's starter
waited for a socket that never came). Both ends reach a longer path through
``/proc/self/fd`` of its directory instead, and a server that cannot bind says
so, removes its directory and exits.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import pkgutil
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

# The variable that tells a client where the server listens.
SOCKET_VARIABLE = "LEAKTRACE_FORK_SERVER"
# The variable that tells a spawned Snakemake (which runs no `onstart`) to
# start a server for the jobs it runs: set by the leaktrace-slurm executor in
# the SLURM job of a group (rules/common.smk).
START_VARIABLE = "LEAKTRACE_START_FORK_SERVER"
# What the jobs import: the libraries, then every stage module (which imports
# the rest). The server imports them one module at a time, between jobs.
LIBRARIES = (
    "pandas",
    "pyarrow.parquet",
    "torch",
    "transformers",
    "peft",
    "sklearn.linear_model",
    "scipy.stats",
    "leaktrace.cli",
)


def modules_to_preload() -> list[str]:
    import leaktrace.stages

    return [*LIBRARIES, *(f"leaktrace.stages.{m.name}" for m in pkgutil.iter_modules(leaktrace.stages.__path__))]


# Variables Snakemake sets per job that a fork applies itself (`_apply_environment`);
# SHLVL, PWD, OLDPWD and `_` are the shell's own bookkeeping, read by nothing.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
PER_JOB_VARIABLES = frozenset(THREAD_VARIABLES + ("TMPDIR", "TMP", "TEMP", "TEMPDIR", "SHLVL", "PWD", "OLDPWD", "_"))
_HEADER = struct.Struct("!I")
_STATUS = struct.Struct("!i")
_POLL_S = 1.0
# The longest path bind and connect take: Linux's sun_path is 108 bytes with the terminating NUL.
_MAX_SOCKET_PATH = 107


@dataclass(frozen=True)
class Job:
    """What a client asked to run, in the fork that runs it."""

    argv: list[str]
    cwd: str
    env: dict[str, str]


# --- client ------------------------------------------------------------------


def run_in_server(argv: Sequence[str]) -> int | None:
    """The job's exit status when the server ran it; None when there is no
    server or it declined, and the caller runs the job itself."""
    path = os.environ.get(SOCKET_VARIABLE)
    if not path:
        return None
    # A signal that arrives after the job started but before its handler is
    # installed would stop this client and leave the job running: hold the
    # signals until the handler is in place, then take any that came.
    forwarded = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    signal.pthread_sigmask(signal.SIG_BLOCK, forwarded)
    try:
        return _run_in_server(path, argv, forwarded)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, forwarded)


def _run_in_server(path: str, argv: Sequence[str], forwarded: tuple[int, ...]) -> int | None:
    try:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with _socket_address(path) as address:
            connection.connect(address)
        request = json.dumps(
            {
                "argv": list(argv),
                "cwd": os.getcwd(),
                "env": dict(os.environ),
                "executable": sys.executable,
                "path": sys.path,
            }
        ).encode()
        socket.send_fds(connection, [_HEADER.pack(len(request)) + request], [0, 1, 2])
        pid = _STATUS.unpack(_read_exactly(connection, _STATUS.size))[0]
    except (OSError, EOFError):
        return None
    if pid == 0:
        return None
    for number in forwarded:
        signal.signal(number, lambda received, _frame: _signal_group(pid, received))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, forwarded)
    try:
        return _STATUS.unpack(_read_exactly(connection, _STATUS.size))[0]
    except (OSError, EOFError):
        print(f"leaktrace: the fork server stopped while it ran job {pid}", file=sys.stderr)
        return 1


@contextlib.contextmanager
def _socket_address(path: str):
    """An address for the socket at `path` that bind and connect take whatever
    the length of its directory's path: the path itself where it fits, else
    the same file through a descriptor of its directory (held while in use)."""
    if len(os.fsencode(path)) <= _MAX_SOCKET_PATH:
        yield path
        return
    directory = os.open(os.path.dirname(path) or ".", os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{directory}/{os.path.basename(path)}"
    finally:
        os.close(directory)


def _signal_group(pid: int, number: int) -> None:
    try:
        os.killpg(pid, number)
    except ProcessLookupError:
        pass


# --- starting and stopping, from the Snakefile -------------------------------

DIRECTORY_PREFIX = "leaktrace-fork-server-"


@dataclass
class Server:
    """The server process and its private directory, which `stop` removes."""

    process: subprocess.Popen
    directory: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def start(job_environment: dict[str, str]) -> Server:
    """Start a server for jobs whose environment is `job_environment` (what the
    rules' commands run under, less the per-job variables), and point this
    process's children at it. It exits when this process does."""
    directory = Path(tempfile.mkdtemp(prefix=DIRECTORY_PREFIX))  # mode 0700: no other user can connect
    path = str(directory / "socket")
    environment = _shared_part(job_environment) | {SOCKET_VARIABLE: path}
    process = subprocess.Popen(
        [sys.executable, "-m", "leaktrace.forkserver", path, str(os.getpid())],
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    os.environ[SOCKET_VARIABLE] = path
    return Server(process, directory)


# --- server ------------------------------------------------------------------


def serve(path: str, parent_pid: int, preload: Sequence[str]) -> Job | None:
    """Take jobs until the parent exits or a signal stops the server. Returns
    only in a fork, with the job that fork is to run (None in the server)."""
    if not hasattr(os, "pidfd_open"):
        print("leaktrace fork server: needs Linux 5.3 or newer (os.pidfd_open); not serving", file=sys.stderr)
        return None
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with _socket_address(path) as address:
            listener.bind(address)
    except OSError as error:
        print(f"leaktrace fork server: cannot listen at {path} ({error}); not serving", file=sys.stderr)
        listener.close()
        _remove_private_directory(path)
        return None
    listener.listen(128)
    environment, module_path = dict(os.environ), list(sys.path)  # before the imports: what a client is compared with
    compared = _shared_part(environment)
    server_pid = os.getpid()
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    jobs: dict[int, socket.socket] = {}
    stopping: list[int] = []
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, lambda received, _frame: stopping.append(received))
    # One import at a time between jobs: a job that comes early runs at once,
    # with what is imported so far, rather than wait for the rest.
    pending = list(preload)
    try:
        while not stopping and os.getppid() == parent_pid and (jobs or listener.fileno() >= 0):
            for key, _ in selector.select(timeout=0 if pending else _POLL_S):
                if key.data is None:
                    job = _accept(listener, selector, jobs, environment, compared, module_path)
                    if job is not None:  # this is the fork
                        return job
                elif key.data[0] == "exited":
                    _report_exit(key.data[1], key.fileobj, selector, jobs)
                elif key.data[1] in jobs:  # the client closed its end: it is gone, and its job goes too
                    selector.unregister(key.fileobj)
                    _signal_group(key.data[1], signal.SIGKILL)
            if pending:
                importlib.import_module(pending.pop(0))
                # A fork inherits the locks other Python threads hold. The libraries'
                # native threads (OpenBLAS's pool, jemalloc's) have fork handlers of
                # their own, as every fork of a process that imported PyTorch relies on.
                if threading.active_count() != 1 and listener.fileno() >= 0:
                    print(
                        "leaktrace fork server: an import started a Python thread; taking no more jobs", file=sys.stderr
                    )
                    pending.clear()
                    selector.unregister(listener)
                    listener.close()
                    Path(path).unlink(missing_ok=True)
        return None
    finally:
        if os.getpid() == server_pid:
            for pid in jobs:
                _signal_group(pid, signal.SIGKILL)
            listener.close()
            Path(path).unlink(missing_ok=True)
            _remove_private_directory(path)


def _remove_private_directory(path: str) -> None:
    """The private directory `start` made for the socket: removed by the server itself, since a
    client that never calls `Server.stop` (the Snakemake inside a SLURM group allocation runs no
    `onsuccess`) would leave one empty directory in the system temporary directory per allocation."""
    if Path(path).parent.name.startswith(DIRECTORY_PREFIX):
        with contextlib.suppress(OSError):
            Path(path).parent.rmdir()


def _accept(listener, selector, jobs, environment, compared, module_path) -> Job | None:
    connection, _ = listener.accept()
    try:
        connection.settimeout(30)
        header, fds, _flags, _address = socket.recv_fds(connection, _HEADER.size, 3)
        if len(header) < _HEADER.size or len(fds) != 3:
            raise EOFError("incomplete request")
        request = json.loads(_read_exactly(connection, _HEADER.unpack(header)[0]))
        connection.settimeout(None)
    except (OSError, EOFError, ValueError):
        connection.close()
        return None
    if not _runs_as_fresh_interpreter(request, compared, module_path):
        connection.sendall(_STATUS.pack(0))
        connection.close()
        for fd in fds:
            os.close(fd)
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()  # the imports' objects: the fork's collector leaves them, and their pages, alone
    pid = os.fork()
    if pid == 0:
        selector.close()
        listener.close()
        connection.close()
        for other in jobs.values():
            other.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        # What the imports set (scikit-learn sets KMP_* with `setdefault`, PyTorch
        # its inductor cache), a fresh interpreter's imports set where unset.
        imported = {k: v for k, v in os.environ.items() if environment.get(k) != v}
        return Job(request["argv"], request["cwd"], {**imported, **request["env"]})
    try:
        os.setpgid(pid, pid)  # also done in the fork; whichever comes first
    except OSError:
        pass
    for fd in fds:
        os.close(fd)
    jobs[pid] = connection
    connection.sendall(_STATUS.pack(pid))
    selector.register(os.pidfd_open(pid), selectors.EVENT_READ, ("exited", pid))
    selector.register(connection, selectors.EVENT_READ, ("client", pid))
    return None


def _report_exit(pid: int, pidfd: int, selector, jobs) -> None:
    selector.unregister(pidfd)
    os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    connection = jobs.pop(pid)
    try:
        selector.unregister(connection)
    except KeyError:
        pass  # its client had gone already
    try:
        connection.sendall(_STATUS.pack(code if code >= 0 else 128 - code))
    except OSError:
        pass
    connection.close()


def _runs_as_fresh_interpreter(request: dict, compared: dict[str, str], module_path: list[str]) -> bool:
    """Whether a fork runs this job as `python -m leaktrace` would: the same
    interpreter, module path and environment, per-job variables aside."""
    return (
        request.get("executable") == sys.executable
        and request.get("path") == module_path
        and _shared_part(request["env"]) == compared
    )


def _shared_part(environment: dict[str, str]) -> dict[str, str]:
    """The environment less the variables Snakemake sets per job."""
    return {k: v for k, v in environment.items() if k not in PER_JOB_VARIABLES}


# --- in the fork -------------------------------------------------------------


def run_job(job: Job, entry: Callable[[list[str]], int | None]) -> NoReturn:
    """Set the fork up as the client's process, run the job's command, and exit
    as the interpreter would, less its teardown of every module: in a fork of a
    process that imported five thousand, freeing them writes to every page they
    share with the server, which took 28 s a job on a machine with little page
    cache (1 s without). The exit handlers run (logging's flush among them) and
    the standard streams are flushed; a file the job left open unflushed would
    be lost, which the pipeline's writers, all closing what they open, never do."""
    os.setpgid(0, 0)
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(job.cwd)
    _apply_environment(job.env)
    sys.argv = ["leaktrace", *job.argv]
    try:
        status = entry(job.argv) or 0
    except SystemExit as stop:  # as the interpreter: None is 0, a number is the status, anything else is printed
        if stop.code is None or isinstance(stop.code, int):
            status = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            status = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        status = 128 + signal.SIGINT
    except BaseException:  # noqa: B036 - what the interpreter does with an uncaught exception
        traceback.print_exc()
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def _apply_environment(env: dict[str, str]) -> None:
    """The client's environment, and what a fresh interpreter would have made of
    its per-job variables when the libraries were loaded: their thread counts
    (read when a library loads, so the server's defaults hold until set here)
    and the temporary directory (which `tempfile` caches on first use)."""
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None
    threads = env.get("OMP_NUM_THREADS")
    if threads and threads.isdigit() and int(threads) > 0:
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(int(threads))
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=int(threads))


def _read_exactly(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise EOFError("connection closed")
        data += chunk
    return data


def main(argv: Sequence[str] | None = None) -> int:
    path, parent_pid = (argv or sys.argv[1:])[:2]
    job = serve(path, int(parent_pid), modules_to_preload())
    if job is None:
        return 0
    from leaktrace.cli import main as cli_main

    run_job(job, cli_main)


if __name__ == "__main__":
    sys.exit(main())
