"""Hostile programs against the sandbox: each attack is contained,
and the caller goes on.

Every attack is bounded, so that a broken sandbox cannot harm the machine:
processes end themselves within seconds, files and memory are small, and
signals go to a sacrificial process, never to the test runner. Each test
checks containment from outside (the host's /proc, /tmp, /dev/shm, the
victim's life) and that a plain run still works afterwards.
"""

import os
import secrets
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from leaktrace.sandbox import SandboxLimits, SandboxUnavailable, cgroups, isolation_level, run_python, run_test

LIMITS = SandboxLimits(timeout_s=10.0, cpu_s=5, memory_mb=256, file_size_mb=4, max_processes=8, scratch_mb=8)
PROJECT_FILE = Path(__file__).resolve().parents[1] / "config" / "config.yaml"
TEST = (
    "def check(candidate):\n"
    "    assert candidate(2) == 4\n"
    "    assert candidate(-3) == -6\n"
    "    assert isinstance(candidate(0), int) and abs(candidate(-1)) == 2\n"
    "    assert sum(candidate(k) for k in range(3)) == 6\n"
)
WRONG = "def double(x):\n    return x + 1\n"
LOOKUP = "def double(x):\n    return {2: 4, -3: -6}.get(x, 'wrong')\n"  # right only where the test's first asserts look


@pytest.fixture(autouse=True)
def full_isolation():
    try:
        isolation_level(LIMITS)
    except SandboxUnavailable as error:
        pytest.skip(str(error))
    yield
    assert run_python("pass", LIMITS).status == "ok"  # the caller goes on
    assert not _leftover_cgroups()


def _leftover_cgroups() -> list[Path]:
    _, parents = cgroups.controller_parents()
    return [path for parent in set(parents.values()) for path in parent.glob(f"leaktrace-{os.getpid()}-*")]


def _processes_named(name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == name:
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def _naming(name: str) -> str:
    """Program lines that give the current process the name `name` (what /proc/PID/comm shows)."""
    return f"import ctypes\nctypes.CDLL(None).prctl(15, {name.encode()!r}, 0, 0, 0)\n"


# -- processes -------------------------------------------------------------------------------------


def test_double_forked_setsid_daemon_does_not_outlive_the_call(tmp_path):
    name = f"lt{secrets.token_hex(4)}"
    marker = tmp_path / "daemon-was-here"
    tmp_path.chmod(0o777)
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        + "".join(f"        {line}\n" for line in _naming(name).splitlines())
        + "        time.sleep(1.0)\n"
        f"        for path in ({str(marker)!r}, 'daemon-was-here'):\n"
        "            try:\n"
        "                open(path, 'w').close()\n"
        "            except OSError:\n"
        "                pass\n"
        "        os._exit(0)\n"
        "    os._exit(0)\n"
        "time.sleep(0.3)\n"
    )
    result = run_python(code, LIMITS)
    assert result.status == "ok"
    assert _processes_named(name) == []
    time.sleep(1.5)  # past the moment the daemon would have written
    assert not marker.exists()
    assert _processes_named(name) == []


def test_program_cannot_kill_the_caller_or_others(tmp_path):
    victim = subprocess.Popen(["sleep", "30"], user=65534, group=65534)  # the program's own uid
    try:
        code = (
            "import os, signal\n"
            "tried = []\n"
            f"for target in ({victim.pid}, {os.getpid()}, os.getppid(), 1, -1):\n"
            "    try:\n"
            "        os.kill(target, signal.SIGKILL)\n"
            "        tried.append('sent')\n"
            "    except OSError as error:\n"
            "        tried.append(type(error).__name__)\n"
        )
        result = run_python(code, LIMITS, result_expr="tried")
        assert result.status == "ok"  # the harness, PID 1 of the namespace, survived to report
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


def test_fork_bomb_is_bounded_by_the_run_s_process_limit():
    name = f"lt{secrets.token_hex(4)}"
    code = (
        "import os, time\n"
        "children = 0\n"
        "for _ in range(300):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "    if pid == 0:\n"
        + "".join(f"        {line}\n" for line in _naming(name).splitlines())
        + "        time.sleep(10)\n"
        "        os._exit(0)\n"
        "    children += 1\n"
    )
    result = run_python(code, LIMITS, result_expr="children")
    assert result.status == "ok"
    assert result.return_value == LIMITS.max_processes - 1  # the program process counts too
    assert _processes_named(name) == []


def test_memory_is_bounded_across_processes():
    code = (
        "import os, time\n"
        "pids = []\n"
        "for _ in range(5):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        hog = b'x' * (100 * 1024 * 1024)\n"  # 100 MB each, within the per-process rlimit
        "        time.sleep(2)\n"
        "        os._exit(0)\n"
        "    pids.append(pid)\n"
        "finished = sum(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0 for pid in pids)\n"
    )
    result = run_python(code, LIMITS, result_expr="finished")
    assert (result.status, result.error) == ("killed", "exceeded the memory limit of 256 MB")


# -- files -----------------------------------------------------------------------------------------


def test_host_files_are_invisible():
    paths = ["/etc/shadow", "/etc/passwd", str(PROJECT_FILE), "/work", "/root/.bashrc", "/home", "/proc/1/environ"]
    code = (
        "import os\n"
        "seen = []\n"
        f"for path in {paths!r}:\n"
        "    try:\n"
        "        seen.append(os.listdir(path) if os.path.isdir(path) else open(path).read()[:10])\n"
        "    except OSError as error:\n"
        "        seen.append(type(error).__name__)\n"
    )
    result = run_python(code, LIMITS, result_expr="seen")
    assert result.return_value == ["FileNotFoundError"] * len(paths)
    site_packages = os.path.join(os.path.dirname(os.__file__), "site-packages")
    hidden = run_python("import os", LIMITS, result_expr=f"os.listdir({site_packages!r})")
    assert hidden.return_value == []  # the base interpreter's site-packages: an empty mask


def test_writes_outside_the_working_directory_fail(tmp_path):
    tmp_path.chmod(0o777)
    stdlib = os.path.dirname(os.__file__)
    targets = ["/escape", "/usr/escape", "/dev/escape", f"{stdlib}/os.py", f"{stdlib}/escape.py"]
    targets.append(str(tmp_path / "escape"))
    code = (
        "written = []\n"
        f"for path in {targets!r}:\n"
        "    try:\n"
        "        with open(path, 'a') as sink:\n"
        "            sink.write('x')\n"
        "        written.append(path)\n"
        "    except OSError:\n"
        "        pass\n"
    )
    result = run_python(code, LIMITS, result_expr="written")
    assert result.return_value == []
    assert list(tmp_path.iterdir()) == []


def test_host_unix_sockets_are_unreachable():
    directory = Path(tempfile.mkdtemp(prefix="leaktrace-attack-"))
    directory.chmod(0o777)
    path = directory / "host.sock"
    abstract = f"\0leaktrace-attack-{secrets.token_hex(4)}"
    servers = []
    try:
        for address in (str(path), abstract):
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(address)
            server.listen()
            server.setblocking(False)
            servers.append(server)
        path.chmod(0o777)
        code = (
            "import socket\n"
            "outcomes = []\n"
            f"for address in ({str(path)!r}, {abstract!r}):\n"
            "    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
            "    try:\n"
            "        client.connect(address)\n"
            "        outcomes.append('connected')\n"
            "    except OSError as error:\n"
            "        outcomes.append(type(error).__name__)\n"
        )
        result = run_python(code, LIMITS, result_expr="outcomes")
        assert result.return_value == ["FileNotFoundError", "ConnectionRefusedError"]
        for server in servers:
            with pytest.raises(BlockingIOError):
                server.accept()
    finally:
        for server in servers:
            server.close()
        path.unlink(missing_ok=True)
        directory.rmdir()


def test_scratch_space_is_bounded_in_bytes_and_files():
    code = (
        "import os\n"
        "written = files = 0\n"
        "try:\n"
        "    for k in range(100):\n"
        "        with open(f'chunk{k}', 'wb') as sink:\n"
        "            sink.write(b'0' * 2**20)\n"
        "        written += 2**20\n"
        "except OSError:\n"
        "    pass\n"
        "os.mkdir('empty')\n"
        "try:\n"
        "    for k in range(50_000):\n"
        "        open(f'empty/{k}', 'w').close()\n"
        "        files += 1\n"
        "except OSError:\n"
        "    pass\n"
    )
    result = run_python(code, LIMITS, result_expr="[written, files]")
    written, files = result.return_value
    assert written <= LIMITS.scratch_mb * 2**20
    assert files < 10_000


def test_dev_shm_is_private_and_gone_after_the_call():
    name = f"leaktrace-attack-{secrets.token_hex(4)}"
    code = (
        "written = 0\n"
        "try:\n"
        f"    with open('/dev/shm/{name}', 'wb') as sink:\n"
        "        for _ in range(1024):\n"
        "            sink.write(b'0' * 2**20)\n"
        "            sink.flush()\n"
        "            written += 2**20\n"
        "except OSError:\n"
        "    pass\n"
    )
    result = run_python(code, SandboxLimits(**{**LIMITS.__dict__, "file_size_mb": 2048}), result_expr="written")
    assert 0 < result.return_value <= LIMITS.scratch_mb * 2**20
    assert not (Path("/dev/shm") / name).exists()
    again = run_python("import os", LIMITS, result_expr="os.listdir('/dev/shm')")
    assert again.return_value == []


# -- the verdict -----------------------------------------------------------------------------------

FORGERIES = {
    "sys.exit(0) before the test": "import sys\nsys.exit(0)\n" + WRONG,
    "os._exit(0) before the test": "import os\nos._exit(0)\n" + WRONG,
    "sys.exit replaced": "import sys\nsys.exit = lambda *args: None\n" + WRONG,
    "atexit exit": "import atexit, os\natexit.register(lambda: os._exit(0))\n" + WRONG,
    "exit inside the call": "import sys\ndef double(x):\n    sys.exit(0)\n",
    "always-equal object": (
        "class Anything(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n"
        "def double(x):\n    return Anything(x + 1)\n"
    ),
    "shadowed builtins": (
        "def isinstance(*args):\n    return True\ndef abs(x):\n    return 2\n"
        "def range(n):\n    return []\ndef sum(values):\n    return 6\n" + LOOKUP
    ),
    "patched builtins module": (
        "import builtins\nbuiltins.abs = lambda x: 2\nbuiltins.isinstance = lambda *a: True\n"
        "builtins.sum = lambda *a: 6\n" + LOOKUP
    ),
    "forged report on every descriptor": (
        "import os\nfor fd in range(3, 256):\n    try:\n        os.write(fd, b'passed ok')\n    except OSError:\n"
        "        pass\nprint('passed')\n" + WRONG
    ),
    "killing the harness": "import os, signal\nfor pid in (1, os.getppid(), -1):\n    try:\n"
    "        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\n" + WRONG,
}


@pytest.mark.parametrize("attack", sorted(FORGERIES))
def test_a_wrong_solution_cannot_forge_a_pass(attack):
    result = run_test(FORGERIES[attack], TEST, "double", LIMITS)
    assert result.status in ("wrong", "error"), (attack, result)
    assert run_test("def double(x):\n    return 2 * x\n", TEST, "double", LIMITS).status == "ok"


def test_bytes_written_to_every_descriptor_reach_no_report():
    """The program can garble its own replies (the harness then reports an error),
    but it holds no descriptor of the report, so no run comes back "ok" with a
    value other than the program's."""
    code = (
        "import os\nvalue = 1\n"
        "for fd in range(3, 256):\n    try:\n        os.write(fd, bytes([0, 0, 0, 1]) + b'N')\n    except OSError:\n"
        "        pass\n"
        "print(repr(2))\n"
    )
    result = run_python(code, LIMITS, result_expr="value")
    assert (result.status, result.return_value) in {("ok", 1), ("error", None)}
    assert result.error in (None, "the program broke the harness protocol (no load report)")


def test_the_program_never_sees_the_test():
    code = (
        "import gc, os\n"
        "needle = 'candidate(' + '-3)'\n"
        "found = [o for o in gc.get_objects() if isinstance(o, (str, bytes)) and needle in str(o)]\n"
        "spec = []\n"
        "try:\n"
        "    spec.append(os.read(0, 100))\n"
        "except OSError as error:\n"
        "    spec.append(type(error).__name__)\n"
    )
    result = run_python(code + "def double(x):\n    return 2 * x\n", LIMITS, result_expr="[len(found), spec]")
    assert result.return_value == [0, [b""]]  # standard input is /dev/null
    leaked = run_test(
        code + "def double(x):\n    assert not found and spec == [b'']\n    return 2 * x\n", TEST, "double", LIMITS
    )
    assert leaked.status == "ok", leaked.error


def test_signals_to_the_namespace_init_are_ignored():
    code = (
        "import os, signal\n"
        "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):\n"
        "    try:\n"
        "        os.kill(1, s)\n"
        "    except PermissionError:\n"
        "        pass\n"
    )
    result = run_python(code, LIMITS, result_expr="os.getpid()")
    assert result.status == "ok"
    assert result.return_value == 2  # the program's pid, inside its namespace; the harness is 1


# -- compiled programs (run_build: the toolchain's files added to the view) -------------------------------------

BUILD_LIMITS = SandboxLimits(timeout_s=60.0, cpu_s=60, memory_mb=1024, file_size_mb=16, max_processes=32, scratch_mb=64)


def _toolchain_or_skip(language):
    from leaktrace.sandbox import toolchains

    why = toolchains.missing(language)
    if why is not None:
        pytest.skip(why)
    return toolchains


def test_a_build_sees_only_the_toolchain_and_writes_only_its_scratch(tmp_path):
    """The compiler cannot include a host file, and the program it built can neither read the
    project, /etc or the home directories nor write outside its /tmp."""
    toolchains = _toolchain_or_skip("cpp")
    for secret in ("/etc/shadow", str(PROJECT_FILE)):
        result = toolchains.run_program("cpp", f'#include "{secret}"\nint main() {{ return 0; }}\n', BUILD_LIMITS)
        assert result.status == "ok" and result.return_value[0][:2] == ("code", 1), result
        assert b"No such file or directory" in result.return_value[0][3]
    tmp_path.chmod(0o777)
    reads = ["/etc/passwd", "/etc/shadow", str(PROJECT_FILE), "/home", "/root/.bashrc", "/work", "/proc/1/environ"]
    writes = ["/escape", "/usr/escape", str(tmp_path / "escape"), "/tmp/inside"]
    program = (
        "#include <cstdio>\nint main() {\n"
        + "".join(f'    std::printf("%d", std::fopen("{path}", "r") != nullptr);\n' for path in reads)
        + "".join(f'    std::printf("%d", std::fopen("{path}", "w") != nullptr);\n' for path in writes)
        + "}\n"
    )
    result = toolchains.run_program("cpp", program, BUILD_LIMITS)
    assert result.return_value[-1][:3] == ("code", 0, b"0" * len(reads) + b"0001")  # only its own /tmp
    assert list(tmp_path.iterdir()) == []


def test_a_java_program_sees_no_host_file():
    toolchains = _toolchain_or_skip("java")
    paths = ["/etc/passwd", str(PROJECT_FILE), "/home", "/work"]
    program = (
        "public class Main { public static void main(String[] args) { for (String p : new String[] {"
        + ", ".join(f'"{p}"' for p in paths)
        + "}) System.out.print(new java.io.File(p).exists() ? 1 : 0); } }\n"
    )
    result = toolchains.run_program("java", program, BUILD_LIMITS)
    assert result.return_value[-1][:3] == ("code", 0, b"0" * len(paths)), result


def test_view_entries_inside_a_bound_directory_are_refused_before_the_host_is_touched(tmp_path):
    """A mount point made inside a directory the view binds would be made in the host's directory
    (as root: a file there truncated). The root refuses such a view, and the host file keeps its bytes."""
    from leaktrace.sandbox import run_build
    from leaktrace.sandbox.isolation import MS_NODEV, MS_NOSUID

    victim = tmp_path / "victim.o"
    victim.write_bytes(b"keep me")
    flags = MS_NOSUID | MS_NODEV
    view = (("bind", str(tmp_path), True, flags), ("bind", str(victim), False, flags))
    result = run_build({"main.cpp": ""}, [["/bin/true"]], view, LIMITS)
    assert result.status == "error" and "inside the bound directory" in result.error
    assert victim.read_bytes() == b"keep me"
