"""Runs speed scripts as forks of one interpreter that imported the heavy
libraries once: a fresh interpreter that imports PyTorch costs seconds, more
than a script's smoke run (tests/test_benchmark_scripts.py).

Reads one JSON request a line on stdin, ``{"script", "argv", "cwd", "output",
"timeout_s"}``; forks; the child runs the script as ``__main__`` (as
``python script.py argv...`` would, stdout and stderr into ``output``) and
exits with its status; the parent answers one JSON line, ``{"status": N}``
(``-9`` when the timeout killed the child). The parent never runs a model, so
the fork inherits no live thread pool (as leaktrace/forkserver.py)."""

from __future__ import annotations

import importlib
import json
import os
import runpy
import signal
import sys
import time
import traceback

PRELOAD = (
    "pandas",
    "pyarrow.parquet",
    "torch",
    "transformers",
    "peft",
    "sklearn.linear_model",
    "scipy.stats",
    "leaktrace.cli",
)


def run_child(request: dict) -> int:
    fd = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.chdir(request["cwd"])
    os.setpgid(0, 0)  # its own group: a timeout kills what the script started too
    sys.argv = [request["script"], *request["argv"]]
    sys.path[0] = os.path.dirname(os.path.abspath(request["script"]))  # as `python script.py` sets it
    try:
        runpy.run_path(request["script"], run_name="__main__")
        status = 0
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if not isinstance(exit_.code, int | None):
            print(exit_.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - reported as the script's own traceback would be
        traceback.print_exc()
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    return status


def wait(pid: int, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -9
        time.sleep(0.05)


def main() -> None:
    for module in PRELOAD:
        importlib.import_module(module)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            os._exit(run_child(request))
        print(json.dumps({"status": wait(pid, request["timeout_s"])}), flush=True)


if __name__ == "__main__":
    main()
