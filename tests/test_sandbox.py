"""The sandbox contains misbehaving programs and always returns a structured result."""

import os
import time
from pathlib import Path

import pytest
from leaktrace.sandbox import SandboxLimits, SandboxResult, run_many, run_python

FAST = SandboxLimits(timeout_s=3.0, cpu_s=5, memory_mb=256, file_size_mb=1, max_processes=8)


def _alive(pid: int) -> bool:
    """True while `pid` runs; a zombie waiting to be reaped counts as dead."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_ok_with_return_value_and_stdout():
    result = run_python("import math\nx = math.factorial(5)\nprint('done')", FAST, result_expr="[x, {'k': x}]")
    assert isinstance(result, SandboxResult)
    assert result.status == "ok"
    assert result.error is None
    assert result.return_value == [120, {"k": 120}]
    assert result.stdout == "done\n"


def test_unserialisable_return_value_comes_back_as_repr():
    result = run_python("class Box:\n    def __repr__(self):\n        return 'Box()'", FAST, result_expr="Box()")
    assert result.return_value == "Box()"


def test_exception_is_an_error_with_its_message():
    result = run_python("assert 1 + 1 == 3, 'arithmetic is broken'", FAST)
    assert result.status == "error"
    assert result.error == "AssertionError: arithmetic is broken"
    assert "Traceback" in result.stderr
    assert result.return_value is None


def test_syntax_error_and_explicit_exit_are_errors():
    assert run_python("def broken(:\n", FAST).error.startswith("SyntaxError")
    exited = run_python("import os\nos._exit(7)", FAST)
    assert (exited.status, exited.error) == ("error", "exited with code 7")


def test_infinite_loop_times_out():
    limits = SandboxLimits(timeout_s=0.5, cpu_s=5, memory_mb=256, file_size_mb=1, max_processes=8)
    result = run_python("while True:\n    pass", limits)
    assert result.status == "timeout"
    assert result.duration_s < 2


def test_cpu_limit_kills():
    limits = SandboxLimits(timeout_s=5.0, cpu_s=1, memory_mb=256, file_size_mb=1, max_processes=8)
    result = run_python("while True:\n    pass", limits)
    assert result.status == "killed"
    assert "SIGXCPU" in result.error or "SIGKILL" in result.error


def test_memory_bomb_is_contained():
    result = run_python("hog = []\nwhile True:\n    hog.append(bytearray(10**7))", FAST)
    assert result.status in {"killed", "error"}
    if result.status == "error":
        assert result.error.startswith("MemoryError")


def test_huge_file_is_stopped():
    code = "with open('big.bin', 'wb') as f:\n    for _ in range(100):\n        f.write(b'0' * 10**6)"
    result = run_python(code, FAST)
    assert result.status in {"killed", "error"}
    if result.status == "error":
        assert "File too large" in result.error


def test_output_is_truncated():
    result = run_python("print('x' * 10**6)", FAST)
    assert result.status == "ok"
    assert len(result.stdout) < 200_000
    assert result.stdout.endswith("truncated]")


def test_runs_in_its_own_removed_temp_dir(tmp_path, monkeypatch):
    (tmp_path / "secret.txt").write_text("caller's file")
    monkeypatch.chdir(tmp_path)
    result = run_python("import os", FAST, result_expr="[os.getcwd(), os.listdir('.'), dict(os.environ)]")
    child_cwd, listing, environment = result.return_value
    assert Path(child_cwd) != tmp_path
    assert "secret.txt" not in listing
    assert "PYTHONPATH" not in environment and "VIRTUAL_ENV" not in environment
    assert not Path(child_cwd).exists()


def test_fork_loop_is_contained():
    code = (
        "import os, time\n"
        "pids = []\n"
        "try:\n"
        "    for _ in range(40):\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            time.sleep(60)\n"
        "            os._exit(0)\n"
        "        pids.append(pid)\n"
        "except OSError:\n"
        "    pass\n"
    )
    started = time.monotonic()
    result = run_python(code, FAST, result_expr="pids")
    assert result.status == "ok"
    assert time.monotonic() - started < 5
    if os.geteuid() != 0:  # Linux does not apply RLIMIT_NPROC to root
        assert len(result.return_value) < FAST.max_processes
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in result.return_value) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in result.return_value)


def test_program_cannot_hang_the_caller_through_the_outcome_file():
    code = "import os\nos.symlink('/dev/zero', '.leaktrace-outcome.json')"
    result = run_python(code, FAST, result_expr="1")
    assert result.return_value is None  # the link is not followed, so no report is read
    assert result.duration_s < 2


def test_no_network():
    expression = "[os.readlink('/proc/self/ns/net'), open('/proc/self/net/dev').read()]"
    result = run_python("import os", FAST, result_expr=expression)
    namespace, devices = result.return_value
    if namespace == os.readlink("/proc/self/ns/net"):
        pytest.skip("this platform does not allow a private network namespace")
    interfaces = {line.split(":")[0].strip() for line in devices.splitlines()[2:]}
    assert interfaces == {"lo"}


def test_run_many_preserves_order():
    codes = [f"import time\ntime.sleep({0.1 * (3 - i)})\nvalue = {i}" for i in range(4)]
    results = run_many(codes, FAST, workers=4, result_expr="value")
    assert [r.return_value for r in results] == [0, 1, 2, 3]


def test_run_many_rejects_zero_workers():
    with pytest.raises(ValueError):
        run_many(["pass"], FAST, workers=0)
