"""The fork server: a job it runs has the client's streams, directory,
environment and exit status, writes the same bytes as a fresh interpreter, and
stops when its client is stopped; a job whose environment differs is left to
the client. The server here preloads only the CLI (the pipeline's preloads
PyTorch too) and a module that sets a variable when imported, and its entry
adds two commands that only a test needs."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leaktrace import forkserver
from leaktrace.data.humaneval import shipped_humaneval_path
from leaktrace.forkserver import SOCKET_VARIABLE

# Started with `python -c`, as the clients are, so that both have the same module path.
SERVER = """
import json, os, sys, tempfile, time
from leaktrace import forkserver

def entry(argv):
    if argv[0] == "describe":
        Path = __import__("pathlib").Path
        Path(argv[1]).write_text(json.dumps({"cwd": os.getcwd(), "env": dict(os.environ),
                                             "tmp": tempfile.gettempdir(), "pid": os.getpid(), "ppid": os.getppid()}))
        return 0
    if argv[0] == "raise":
        raise RuntimeError("the job failed")
    if argv[0] == "at-exit":
        import atexit
        atexit.register(lambda: open(argv[1], "w").write("ran"))
        return 0
    if argv[0] == "sleep":
        open(argv[1], "w").write(str(os.getpid()))
        time.sleep(600)
    from leaktrace.cli import main
    return main(argv)

job = forkserver.serve(sys.argv[1], int(sys.argv[2]), preload=["leaktrace.cli", "sets_a_variable"])
if job is not None:
    forkserver.run_job(job, entry)
"""
CLIENT = """
import sys
from leaktrace.forkserver import run_in_server
status = run_in_server(sys.argv[1:])
print("declined" if status is None else f"served {status}", file=sys.stderr)
sys.exit(0 if status is None else status)
"""

# A client that is slow to install its signal handlers once the job has started:
# the moment a SIGTERM from a scheduler can land in.
SLOW_CLIENT = (
    """
import signal, time
_install = signal.signal
def _slowly(number, handler):
    time.sleep(2)
    return _install(number, handler)
signal.signal = _slowly
"""
    + CLIENT
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fork-server")
    with _serving_at(directory, directory / "socket") as started:
        yield started


@contextlib.contextmanager
def _serving_at(directory, socket_path):
    # A module that sets a variable when imported, as scikit-learn and PyTorch do.
    (directory / "sets_a_variable.py").write_text("import os\nos.environ.setdefault('SET_ON_IMPORT', 'yes')\n")
    environment = {**os.environ, SOCKET_VARIABLE: str(socket_path)}
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(socket_path), str(os.getpid())],
        cwd=directory,
        env=environment,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not socket_path.exists():
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    try:
        yield directory, environment, process
    finally:
        process.terminate()
        process.wait(timeout=30)


def client(server, *argv, cwd=None, extra_env=None, script=CLIENT, **kwargs):
    directory, environment, _ = server
    return subprocess.Popen(
        [sys.executable, "-c", script, *argv],
        cwd=cwd or directory,
        env={**environment, **(extra_env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def finish(process):
    stdout, stderr = process.communicate(timeout=120)
    return process.returncode, stdout, stderr.splitlines()


def test_a_job_runs_with_the_clients_streams_and_exit_status(server):
    status, stdout, stderr = finish(client(server, "--help"))
    assert (status, stderr[-1]) == (0, "served 0")
    assert stdout.startswith("usage: leaktrace")
    status, _, stderr = finish(client(server, "no-such-command"))
    assert (status, stderr[-1]) == (2, "served 2")
    assert "invalid choice: 'no-such-command'" in "\n".join(stderr)


def test_a_failing_job_prints_its_traceback_and_exit_handlers_run(server, tmp_path):
    status, _, stderr = finish(client(server, "raise"))
    assert (status, stderr[-1]) == (1, "served 1")
    assert "Traceback" in stderr[0] and stderr[-2] == "RuntimeError: the job failed"
    status, _, stderr = finish(client(server, "at-exit", str(tmp_path / "ran")))
    assert (status, stderr[-1]) == (0, "served 0")
    assert (tmp_path / "ran").read_text() == "ran"


def test_a_job_runs_in_the_clients_directory_environment_and_temporary_directory(server, tmp_path):
    (tmp_path / "scratch").mkdir()
    per_job = {"OMP_NUM_THREADS": "1", "TMPDIR": str(tmp_path / "scratch")}
    status, _, stderr = finish(client(server, "describe", "out.json", cwd=tmp_path, extra_env=per_job))
    assert (status, stderr[-1]) == (0, "served 0")
    described = json.loads((tmp_path / "out.json").read_text())
    assert described["cwd"] == str(tmp_path)
    assert described["tmp"] == str(tmp_path / "scratch")
    assert described["env"]["OMP_NUM_THREADS"] == "1"
    assert described["env"]["SET_ON_IMPORT"] == "yes"  # as a fresh interpreter's import would have set it
    assert described["ppid"] == server[2].pid  # a fork of the server, not of the client


def test_a_job_whose_environment_differs_is_left_to_the_client(server):
    status, _, stderr = finish(client(server, "--help", extra_env={"HF_HUB_OFFLINE": "0"}))
    assert stderr[-1] == "declined"


def test_a_job_writes_the_bytes_a_fresh_interpreter_writes(server, tmp_path):
    settings = json.dumps({"format": "humaneval", "path": str(shipped_humaneval_path())})
    argv = ["ingest-benchmark", "--name", "humaneval", "--settings", settings, "--output"]
    status, _, stderr = finish(client(server, *argv, str(tmp_path / "served.parquet")))
    assert (status, stderr[-1]) == (0, "served 0")
    fresh = subprocess.run(
        [sys.executable, "-m", "leaktrace", *argv, str(tmp_path / "fresh.parquet")],
        env={k: v for k, v in os.environ.items() if k != SOCKET_VARIABLE},
        timeout=120,
    )
    assert fresh.returncode == 0
    assert (tmp_path / "served.parquet").read_bytes() == (tmp_path / "fresh.parquet").read_bytes()


def _wait_for(path: Path) -> int:
    deadline = time.monotonic() + 60
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return int(path.read_text())


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_signal_to_the_client_stops_its_job(server, tmp_path):
    running = client(server, "sleep", str(tmp_path / "pid"))
    job = _wait_for(tmp_path / "pid")
    running.send_signal(signal.SIGTERM)
    status, _, stderr = finish(running)
    assert (status, stderr[-1]) == (128 + signal.SIGTERM, f"served {128 + signal.SIGTERM}")
    assert _gone(job)


def test_a_signal_before_the_clients_handler_is_installed_still_stops_its_job(server, tmp_path):
    running = client(server, "sleep", str(tmp_path / "pid"), script=SLOW_CLIENT)
    job = _wait_for(tmp_path / "pid")
    running.send_signal(signal.SIGTERM)
    status, _, stderr = finish(running)
    assert (status, stderr[-1]) == (128 + signal.SIGTERM, f"served {128 + signal.SIGTERM}")
    assert _gone(job)


def test_a_killed_client_takes_its_job_with_it(server, tmp_path):
    running = client(server, "sleep", str(tmp_path / "pid"))
    job = _wait_for(tmp_path / "pid")
    running.kill()
    running.wait(timeout=30)
    assert _gone(job)


def test_a_server_whose_socket_path_is_longer_than_a_socket_address_serves(tmp_path):
    """A socket address holds 107 bytes; a deep temporary directory (SLURM's, pytest's under xdist) is longer."""
    socket_path = tmp_path.joinpath(*["a-deep-directory"] * 6) / "socket"
    socket_path.parent.mkdir(parents=True)
    assert len(os.fsencode(socket_path)) > 107
    with _serving_at(tmp_path, socket_path) as server:
        status, stdout, stderr = finish(client(server, "--help"))
    assert (status, stderr[-1]) == (0, "served 0") and stdout.startswith("usage: leaktrace")


def test_a_server_that_cannot_listen_says_so_and_removes_its_directory(tmp_path, capsys):
    directory = tmp_path / f"{forkserver.DIRECTORY_PREFIX}private"
    directory.mkdir()
    unaddressable = directory / ("s" * 120)  # too long a name even through its directory's descriptor
    assert forkserver.serve(str(unaddressable), os.getpid(), preload=[]) is None
    assert "cannot listen at" in capsys.readouterr().err and not directory.exists()


def test_a_server_whose_client_never_stops_it_leaves_no_directory(tmp_path):
    """The Snakemake inside a SLURM group allocation starts a server and runs no
    `onsuccess` (no Server.stop): the server removes its private directory when
    its parent exits."""
    starter = (
        "import os, sys, time\nfrom leaktrace import forkserver\n"
        "server = forkserver.start(dict(os.environ))\n"
        "while not (server.directory / 'socket').exists():\n"
        "    assert server.process.poll() is None, 'the server exited'\n"
        "    time.sleep(0.05)\n"
        "print(server.directory, flush=True)\nos._exit(0)\n"
    )  # no stop, no atexit
    started = subprocess.run(
        [sys.executable, "-c", starter],
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    directory = Path(started.stdout.strip())
    assert (
        started.returncode == 0 and directory.parent == tmp_path and directory.name.startswith("leaktrace-fork-server-")
    )
    deadline = time.monotonic() + 120  # the server sees its parent gone between imports or within its poll
    while directory.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not directory.exists() and list(tmp_path.iterdir()) == []
