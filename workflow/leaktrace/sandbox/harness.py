"""The trusted code inside the sandbox: it isolates the run, starts the program
in one process and runs the test (or evaluates an expression) in another.

Inside the namespaces, this process is the PID namespace's init (signals from
the run cannot reach it, and when it exits the kernel kills everything the run
started). It forks the *program process*, which drops to an unprivileged uid
and executes the untrusted code, then becomes the *harness process* under
another uid: it reads the test, which the program process never holds, from
the spec file after the fork, and runs it with every name the test takes from
the program bound to a proxy. A proxy call serialises its arguments
(`values.encode`), sends them through a pipe, and gets back the return value
serialised by the program process, or the name of the exception it raised;
the harness decodes plain builtins from that, so the test's assertions, and
the builtins it calls, only ever touch the harness's own objects. The harness
records every call (arguments, and what came back) and writes its report to a
file descriptor the program process closed before running anything.

What a program can do to such a verdict, then: nothing through its exit status,
`sys.exit`, `os._exit`, atexit, its output, a patched `__eq__`, a subclass
of a builtin, or by shadowing or patching builtins (they are its own process's).
Its replies are the only thing it controls, so to pass it must return the
right values for the test's inputs; it never sees the test, its expected
values, or the outputs of a run its record is compared with. It can signal,
trace or read neither the harness (another uid, not dumpable, PID 1 of the
namespace) nor the report descriptor. What remains: a program that computes
the right answers by other means than its source suggests (a lookup table of
the benchmark's answers) passes, as it would any test; and the test, written by
the benchmark's authors, is trusted to judge (it runs in the harness process).

Validation (`runner.run_whole_test`, `run_whole_unittest`: the benchmark's
own solution and the renamings and mutations the pipeline made of it) needs
the test beside the program, as the benchmark's harness runs it: a test may
call a function the program returned, consume a generator, compare the
program's objects, or check that the program changed its argument in place,
none of which a value can carry across the pipe. There the harness sends
the test to the program process, which runs it with the program's own
objects (`_whole_test`) and reports each call (each assertion, in unittest
classes) and how the test ended; the harness only checks the form of what it
gets. A program
could forge that report, so this path is not for code a model wrote.

Whole programs on standard input (`runner.run_stdio`, APPS's stdin/stdout
problems) take another path: the namespace's init forks one program process
per input, each with the input in a memory file as its standard input and
another memory file as its standard output, waits for it (killing its
process group at the case's time limit), and reports each exit status with
the bytes written. No test runs there and no reply is decoded; the init
keeps the privileges it needs to start each case under the program's uid,
and the program cannot signal it (it is the namespace's init) or trace it
(another uid). The caller compares the outputs (`leaktrace.sandbox.stdio`).

Compiled programs (`runner.run_build`: Java, C++) take a third path: the
init writes the source files into the working directory, then runs each
command of the build (compile, then run) in a process of its own under the
program's uid, with the toolchain's files added read-only to the view
(`toolchains`); the command's standard output and error go to memory files.
It reports each exit status with the bytes written, and stops at the
first command that fails. The test is compiled into the program (HumanEval-X
puts its `main` in the same file), so here a program can see its test and end
its process with status 0 before the test runs: fit for checking that a
mutation of a benchmark's own solution still passes, not for judging code a
model wrote.

The test runs in the program's working directory and group (not its uid),
and before each request and each reply the files each process made there
are opened to the group (`_share_files`), so a database a test's setUp makes
is the program's to write, and one the program makes is the test's to read.

Tests written as unittest classes (ClassEval) hold the program's objects
(`_run_unittest`): there every value the program returns that is not a plain
builtin stays in the program process, in a table of held objects, and the
test gets a `Remote` for it, through which each attribute read, attribute
write, call and operator (len, in, [], iteration, ...) is one more request
of the same protocol, answered and recorded like a call. Comparisons (==,
<, ...) of such an object are refused: the program would answer them, so an
object equal to anything would pass. Arguments may be plain values or, at
the top level, such remotes (sent as references). The program still sees
only values and references, never the test.

A run of calls (`runner.run_calls`, execution similarity's driver) keeps
the jobs in the harness too: the program is only the code that runs them,
and the harness sends one call (a function's job) at a time, the next only
after the program answered the last, so the program process never holds
another job's program, inputs or results while one runs (its request loop
lets go of each request and reply before it reads the next).

Only builtin and small stdlib modules are imported: start-up time is per run
(unittest only in a run of unittest classes).
"""

from __future__ import annotations

import _signal
import builtins
import importlib
import marshal
import operator
import os
import random
import select
import sys
import time
import types

from leaktrace.sandbox import isolation
from leaktrace.sandbox.values import UnserialisableValue, decode, encode

MAX_MESSAGE_BYTES = 32 * 1024 * 1024
MAX_ERROR_CHARS = 2000
PROGRAM_NAME = "program.py"
SETUP_FAILED = 70
_POLL_S = 0.05
_END = object()  # end of file on a pipe


class ProgramFailure(Exception):
    """The program process ended or broke the protocol; `exit` is how it ended, if it did."""

    def __init__(self, description: str, exit: tuple | None = None):
        super().__init__(description)
        self.exit = exit


class ProgramError(Exception):
    """Stands, in the test, for an exception the program raised that is not a builtin one."""


def main(setup: dict, trust_offset: int, trust_length: int) -> None:
    """Entry point of the sandbox's child: isolate, fork the program, run the harness."""
    report_fd = setup["report_fd"]
    try:
        for procs in setup["cgroup_procs"]:
            with open(procs, "w") as control:
                control.write(str(os.getpid()))
        if setup["namespaces"]:
            isolation.enter_namespaces(setup["user_namespace"], setup["uids"]["owner"])
            init = os.fork()
            if init:
                _exit_like(init)
            isolation.die_with_parent()
            isolation.build_root(setup["root"], setup["view"], setup["scratch_mb"], setup["uids"]["owner"])
        elif setup["uids"]["program"] is not None:
            os.chown(setup["root"], setup["uids"]["program"], setup["uids"]["program"])
            os.chmod(setup["root"], 0o770)  # the harness's group too: the test shares the working directory
        if setup["stdio"]:
            _stdio_harness(setup, marshal.loads(os.pread(0, trust_length, trust_offset)))
        if setup["build"]:
            _build_harness(setup, marshal.loads(os.pread(0, trust_length, trust_offset)))
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
    except OSError as error:
        _write(report_fd, {"setup_error": str(error)})
        os._exit(SETUP_FAILED)
    program = os.fork()
    if program == 0:
        os.close(requests_write)
        os.close(replies_read)
        _program_process(setup, requests_read, replies_write)
    os.close(requests_read)
    os.close(replies_write)
    trust = marshal.loads(os.pread(0, trust_length, trust_offset))
    _harness_process(setup, trust, ProgramConnection(requests_write, replies_read, program))


def _exit_like(child: int) -> None:
    """Wait for `child` and end with its status (the waiting process stays outside the namespaces)."""
    _, status = os.waitpid(child, 0)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


# -- the program process ---------------------------------------------------------------------------


def _become_program(setup: dict, stdin: int) -> None:
    """Give this process the program's standard input, limits and identity
    (the report descriptor closed, privileges dropped)."""
    try:
        os.dup2(stdin, 0)  # the spec, with the test, is no longer readable
        os.close(stdin)
        os.close(setup["report_fd"])
        os.chdir(setup["workdir"])
        isolation.drop_privileges(setup["uids"]["program"], drop_capabilities=setup["user_namespace"])
        limits = setup["limits"]
        isolation.limit_resources(
            limits["cpu_s"], limits["memory_mb"], limits["file_size_mb"], setup["rlimit_processes"]
        )
        os.environ.clear()
        os.environ.update(setup["environment"])
    except BaseException:
        os._exit(SETUP_FAILED)
    random.seed(0)  # the fork reseeded it from the OS; runs must be reproducible


def _program_module(setup: dict) -> tuple[str, dict]:
    """The script's path and the namespace of its ``__main__`` module, the
    script written to the path (tracebacks and ``__file__`` need a file)."""
    path = os.path.join(setup["workdir"], PROGRAM_NAME)
    module = types.ModuleType("__main__")
    module.__file__ = path
    sys.modules["__main__"], sys.argv = module, [path]
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as script:
        script.write(setup["code"])
    return path, module.__dict__


def _program_process(setup: dict, requests: int, replies: int) -> None:
    _become_program(setup, os.open(os.devnull, os.O_RDONLY))
    namespace: dict = {}
    try:
        path, namespace = _program_module(setup)
        exec(compile(setup["code"], path, "exec"), namespace)
    except Exception as exc:  # SystemExit ends the process: the harness reports how it ended
        namespace.clear()  # frees what a memory bomb holds, so reporting can allocate
        import traceback

        traceback.print_exception(exc)
        _flush()
        _send(replies, ("load_error", describe(exc)))
        os._exit(1)
    _flush()
    _send(replies, ("loaded",))
    held: list = []  # objects a unittest run's test holds by reference (Remote)
    while True:
        request = _receive(requests, None)
        if request is _END:
            _flush()
            os._exit(0)
        kind = request[0]
        if kind == "names":
            reply = {name: _describe_name(namespace[name]) for name in request[1] if name in namespace}
        elif kind == "call":
            _, name, arguments, keywords = request
            reply = _outcome(lambda: namespace[name](*arguments, **keywords))  # noqa: B023 (called in this iteration)
        elif kind == "whole":
            _whole_test(request, namespace, replies)  # sends its own messages
            request = None
            continue
        elif kind in _REFERENCE_REQUESTS:
            reply = _held_outcome(lambda: _REFERENCE_REQUESTS[kind](request, namespace, held), held)  # noqa: B023 (called in this iteration)
        else:
            reply = _outcome(lambda: eval(request[1], namespace))  # noqa: B023 (called in this iteration)
        _flush()
        _share_files()
        try:
            _send(replies, reply)
        except UnserialisableValue:  # a value the program put in its namespace, under a name the test uses
            _send(replies, {})
        # Nothing of this request or its reply stays in this frame while the next runs: a run of
        # calls (`_run_calls`) hands the program one job at a time, and the next job's code must
        # not find the last one's arguments or results here (sys._getframe, gc).
        request = reply = arguments = keywords = None


_SHARED_ENTRIES = 1000  # entries of the working directory a share looks at, at most


def _share_files(top: str = ".") -> None:
    """Make the files and directories this process owns under the working
    directory writable by its group (the harness and the program share one):
    a file a test made (ClassEval's setUp creates the database the program
    then writes) or one the program made is open to the other, whatever mode
    the library that made it chose (SQLite's is 0644). Links are never
    followed; each entry is opened without following and checked again."""
    uid, stack, seen = os.getuid(), [top], 0
    while stack and seen < _SHARED_ENTRIES:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries[: _SHARED_ENTRIES - seen]:
            seen += 1
            try:
                fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                info = os.fstat(fd)
                directory = (info.st_mode & 0o170000) == 0o040000
                wanted = info.st_mode & 0o7777 | (0o070 if directory else 0o060)
                if info.st_uid == uid and info.st_mode & 0o7777 != wanted:
                    os.fchmod(fd, wanted)
            except OSError:
                pass
            finally:
                os.close(fd)
            if directory:
                stack.append(entry.path)


def _describe_name(value: object) -> tuple:
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if callable(value):
        return ("callable",)
    try:
        encode(value)
    except UnserialisableValue:
        return ("other",)
    return ("value", value)


def _outcome(thunk) -> tuple:
    try:
        value = thunk()
    except Exception as exc:
        return ("raise", type(exc).__name__, _message(exc))
    try:
        encode(value)
    except UnserialisableValue:
        return ("unserialisable", type(value).__name__)
    return ("return", value)


# -- a test run whole, in the program's process ---------------------------------------------------


def _whole_test(request: tuple, namespace: dict, replies: int) -> None:
    """Run the test here, beside the program, as the benchmark's own harness
    does: the names it takes from the program are the program's own objects,
    so it can call a function the program returned, iterate a generator, or
    look at a list the program changed in place. Each call the test makes of
    a program's function (and, in unittest classes, each assertion) is sent
    to the harness as it ends, with what came back (`_form`) and the
    arguments' values after it where the call changed them; then how the
    test ended."""
    _, form, test, entry_point, names = request

    def recording(function, label: str, skipped: int = 0):
        """`function`, each call recorded; its first `skipped` arguments (an assertion's self) are not."""

        def call(*args, **kwargs):
            shown = args[skipped:]
            before = encode(
                (tuple(map(_form, shown)), {key: _form(v) for key, v in kwargs.items()})
            )  # before the call changes them
            try:
                value = function(*args, **kwargs)
            except BaseException as exc:
                outcome = ("raise", type(exc).__name__)
                raise
            else:
                outcome = ("return", _form(value))
                return value
            finally:
                after = (tuple(map(_form, shown)), {key: _form(v) for key, v in kwargs.items()})
                entry = (label, *decode(before), outcome, None if encode(after) == before else after)
                _send(replies, ("call", encode(entry)))

        call.__name__ = call.__qualname__ = label
        return call

    def bound(name: str, label: str):
        value = namespace[name]
        return recording(value, label) if callable(value) and not isinstance(value, type) else value

    scope: dict = {"__name__": "__test__", "__builtins__": builtins}
    scope.update({name: bound(name, name) for name in names if name in namespace})
    random.seed(0)  # tests that draw random inputs draw the same ones for every program
    cases: tuple = ()
    try:
        if form == "unittest":
            outcome, error, cases = _whole_unittest(test, scope, recording)
        else:
            exec(compile(test, "test.py", "exec"), scope)
            check = scope.get("check")
            if not callable(check):
                outcome, error = "no check", "the test defines no check function"
            elif entry_point not in namespace:
                outcome, error = "NameError", f"NameError: the program defines no {entry_point}"
            else:
                check(bound(entry_point, "candidate"))
                outcome, error = "passed", None
    except BaseException as exc:
        outcome, error = type(exc).__name__, describe(exc)
    scope.clear()
    _flush()
    _send(replies, ("tested", outcome, error, cases))


def _whole_unittest(test: str, scope: dict, recording) -> tuple[str, str | None, tuple]:
    """Run every unittest.TestCase class the test defines, in this process,
    each assertion it makes recorded (an assertion another one makes inside
    it is not); (how the test ended, why it failed, each test's outcome)."""
    import unittest

    inside = [False]

    def asserting(name: str, method):
        recorded = recording(method, f"self.{name}", skipped=1)

        def assertion(self, *args, **kwargs):
            if inside[0]:
                return method(self, *args, **kwargs)
            inside[0] = True
            try:
                return recorded(self, *args, **kwargs)
            finally:
                inside[0] = False

        return assertion

    for name in dir(unittest.TestCase):
        if name.startswith("assert") and callable(getattr(unittest.TestCase, name)):
            setattr(unittest.TestCase, name, asserting(name, getattr(unittest.TestCase, name)))
    exec(compile(test, "test.py", "exec"), scope)
    ids, failed, ran = _run_test_cases(scope)
    cases = tuple((case, "failed" if case in failed else "passed") for case in ids)
    if failed:
        first = min(failed)
        return "failed", f"{first}: {failed[first].strip().splitlines()[-1]}", cases
    if not ran:
        return "no tests", "the test defines no unittest.TestCase with a test method", cases
    return "passed", None, cases


def _form(value: object) -> tuple:
    """A value as a record holds it: ("value", it) for an exact builtin value,
    else ("object", its type), the type None where the program defined it
    (a renamed variant's class has another name)."""
    try:
        encode(value)
        return ("value", value)
    except Exception:  # UnserialisableValue, or a structure too deep to encode
        kind = type(value)
        try:
            encode(kind)
        except Exception:
            return ("object", None)
        return ("object", None if getattr(kind, "__module__", None) == "__main__" else kind)


# -- program objects held by reference (unittest runs) ----------------------------------------------

# What a Remote's operators ask for; each is applied to the held object in the program process.
_OPERATORS = {
    "len": len,
    "bool": bool,
    "str": str,
    "repr": repr,
    "iter": iter,
    "next": next,
    "hash": hash,
    "contains": operator.contains,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "isinstance": lambda instance, cls: isinstance(instance, cls),
}


def _resolve(reference: tuple, namespace: dict, held: list) -> object:
    """("name", n): a name of the program's namespace; ("held", i): a held object."""
    kind, key = reference
    return namespace[key] if kind == "name" else held[key]


def _arguments(values_: tuple, references: dict, namespace: dict, held: list) -> list:
    """The request's arguments, held objects put where the test passed remotes."""
    out = list(values_)
    for index, reference in references.items():
        out[index] = _resolve(reference, namespace, held)
    return out


def _reference_call(request: tuple, namespace: dict, held: list) -> object:
    _, reference, arguments, references, keywords, keyword_references = request
    keywords = dict(keywords)
    for key, ref in keyword_references.items():
        keywords[key] = _resolve(ref, namespace, held)
    return _resolve(reference, namespace, held)(*_arguments(arguments, references, namespace, held), **keywords)


def _reference_getattr(request: tuple, namespace: dict, held: list) -> object:
    _, reference, name = request
    return getattr(_resolve(reference, namespace, held), name)


def _reference_setattr(request: tuple, namespace: dict, held: list) -> None:
    _, reference, name, value, value_reference = request
    setattr(
        _resolve(reference, namespace, held),
        name,
        value if value_reference is None else _resolve(value_reference, namespace, held),
    )


def _reference_operator(request: tuple, namespace: dict, held: list) -> object:
    _, name, reference, arguments, references = request
    return _OPERATORS[name](_resolve(reference, namespace, held), *_arguments(arguments, references, namespace, held))


_REFERENCE_REQUESTS = {
    "ref_call": _reference_call,
    "ref_getattr": _reference_getattr,
    "ref_setattr": _reference_setattr,
    "ref_op": _reference_operator,
}


def _held_outcome(thunk, held: list) -> tuple:
    """Like `_outcome`, except that a value that is not an exact builtin one
    is kept in `held` and answered as ("object", its index)."""
    try:
        value = thunk()
    except Exception as exc:
        return ("raise", type(exc).__name__, _message(exc))
    try:
        encode(value)
    except UnserialisableValue:
        held.append(value)
        return ("object", len(held) - 1)
    return ("return", value)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


# -- whole programs on standard input ---------------------------------------------------------------


def _stdio_harness(setup: dict, trust: dict) -> None:
    """Run the program once per input, each time in a process forked afresh
    from this one (the namespace's init), with the input as its standard
    input and its own memory file as standard output; report how each run
    ended and the bytes it wrote. Stops at the first run that does not end
    with exit status 0 (the verdict is then settled) or when the outputs
    together pass `max_output_bytes`. Which output is right is decided by
    the caller: the expected outputs never enter the sandbox."""
    outcomes, total = [], 0
    for data in trust["inputs"]:
        stdin = os.memfd_create("stdin")
        _write_all(stdin, data.encode("utf-8", "surrogatepass"))
        os.lseek(stdin, 0, os.SEEK_SET)
        stdout = os.memfd_create("stdout")
        case = os.fork()
        if case == 0:
            _case_process(setup, stdin, stdout)
        os.close(stdin)
        ended = _supervise(case, trust["case_timeout_s"])
        if ended is None:
            outcomes.append(("timeout",))
            break
        size = os.fstat(stdout).st_size
        total += size
        if total > trust["max_output_bytes"]:
            outcomes.append(("output", f"the outputs exceed {trust['max_output_bytes']} bytes"))
            break
        output = os.pread(stdout, size, 0) if size else b""
        os.close(stdout)
        outcomes.append((ended[0], ended[1], output))
        if ended != ("code", 0):
            break
    _write(
        setup["report_fd"],
        {"status": "ok", "error": None, "record": None, "value": (tuple(outcomes),), "program_exit": None},
    )
    os._exit(0)


def _build_harness(setup: dict, trust: dict) -> None:
    """Write the files, then run each command in turn, each in a process forked
    afresh from this one (the namespace's init) that becomes the program and
    executes it; report how each ended and what it wrote to standard output
    and error. Stops at the first that does not exit with status 0."""
    for name, text in setup["files"]:
        path = os.path.join(setup["workdir"], name)
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as source:
            source.write(text)
        os.chmod(path, 0o644)
    outcomes = []
    for argv in trust["commands"]:
        stdout, stderr = os.memfd_create("stdout"), os.memfd_create("stderr")
        step = os.fork()
        if step == 0:
            _command_process(setup, argv, stdout, stderr)
        ended = _supervise(step, trust["step_timeout_s"])
        if ended is None:
            outcomes.append(("timeout",))
            break
        written = []
        for stream in (stdout, stderr):
            size = os.fstat(stream).st_size
            written.append(os.pread(stream, min(size, trust["max_output_bytes"]), 0) if size else b"")
            os.close(stream)
        outcomes.append((ended[0], ended[1], *written))
        if ended != ("code", 0):
            break
    _write(
        setup["report_fd"],
        {"status": "ok", "error": None, "record": None, "value": (tuple(outcomes),), "program_exit": None},
    )
    os._exit(0)


def _command_process(setup: dict, argv: list[str], stdout: int, stderr: int) -> None:
    """One command of a build: its standard output and error to memory files,
    standard input empty, then the program's identity and limits, then exec."""
    try:
        os.setpgid(0, 0)  # a timed-out command is killed with its process group
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        os.close(stdout)
        os.close(stderr)
    except OSError:
        os._exit(SETUP_FAILED)
    _become_program(setup, os.open(os.devnull, os.O_RDONLY))
    try:
        os.execve(argv[0], argv, setup["environment"])
    except OSError as error:
        os.write(2, f"cannot execute {argv[0]}: {error}\n".encode())
    os._exit(127)


def _supervise(pid: int, timeout_s: float) -> tuple | None:
    """Wait for the process group `pid` leads, at most `timeout_s`; kill what is
    left of it; ("code", n) or ("signal", n), or None when it ran past the limit."""
    try:
        os.setpgid(pid, pid)  # also done by the child: whichever runs first
    except OSError:
        pass
    ended = _wait_case(pid, timeout_s)
    for kill in (os.killpg,) if ended else (os.killpg, os.kill):  # what it left in its group; itself
        try:
            kill(pid, _signal.SIGKILL)
        except OSError:
            pass
    if ended is None:
        os.waitpid(pid, 0)
    _reap_orphans()
    return ended


def _reap_orphans() -> None:
    """Collect the processes a case started that ended after it (as the
    namespace's init, this process inherits them): a zombie holds its pid
    against the run's process limit."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return


def _wait_case(pid: int, timeout_s: float) -> tuple | None:
    """("code", n) or ("signal", n) once `pid` ends, None if it runs past `timeout_s`."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    deadline, pause = time.monotonic() + timeout_s, 0.001
    while True:
        ended, status = os.waitpid(pid, os.WNOHANG)
        if ended:
            if pidfd is not None:
                os.close(pidfd)
            return ("signal", os.WTERMSIG(status)) if os.WIFSIGNALED(status) else ("code", os.WEXITSTATUS(status))
        left = deadline - time.monotonic()
        if left <= 0:
            if pidfd is not None:
                os.close(pidfd)
            return None
        if pidfd is not None:
            select.select([pidfd], [], [], left)
        else:
            select.select([], [], [], min(pause, left))
            pause = min(2 * pause, _POLL_S)


def _case_process(setup: dict, stdin: int, stdout: int) -> None:
    """One run of a whole program: ends the process as the interpreter would
    end it (non-daemon threads joined, atexit handlers run, output flushed,
    ``sys.exit``'s status), with status 1 after an uncaught exception."""
    try:
        os.setpgid(0, 0)  # a timed-out run is killed with its process group
        os.dup2(stdout, 1)
        os.close(stdout)
    except OSError:
        os._exit(SETUP_FAILED)
    _become_program(setup, stdin)
    status = 0
    try:
        path, namespace = _program_module(setup)
        exec(compile(setup["code"], path, "exec"), namespace)
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException as exc:
        import traceback

        traceback.print_exception(exc)
        status = 1
    try:
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()
        if "atexit" in sys.modules:
            sys.modules["atexit"]._run_exitfuncs()
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException:
        status = 1
    for stream in (sys.stdout, sys.__stdout__, sys.stderr, sys.__stderr__):  # the program may have replaced them
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(status)


def _exit_status(code: object) -> int:
    """The exit status ``sys.exit(code)`` gives (a non-integer is printed, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):  # True and False too, as the interpreter reads them
        return int(code) & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


# -- the harness process ---------------------------------------------------------------------------


class ProgramConnection:
    """The harness's side of the two pipes; every reply is untrusted input."""

    def __init__(self, requests: int, replies: int, pid: int):
        self.requests, self.replies, self.pid = requests, replies, pid
        self.failure: ProgramFailure | None = None

    def request(self, message: tuple) -> object:
        if self.failure is not None:  # the test may have swallowed the first one
            raise self.failure
        try:
            _share_files()
            _send(self.requests, message)
            return self.receive()
        except ProgramFailure as failure:
            self.failure = failure
            raise
        except OSError:
            self.failure = ProgramFailure("the program ended", self.wait_exit())
            raise self.failure from None

    def receive(self) -> object:
        reply = _receive(self.replies, self)
        if reply is _END:
            raise ProgramFailure("the program ended", self.wait_exit())
        return reply

    def wait_exit(self, patience_s: float = 1.0) -> tuple | None:
        """How the program process ended, ("code", n) or ("signal", n); None if it
        still runs after `patience_s` (it closed its pipe and went on)."""
        waited, pause = 0.0, 0.001
        while True:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return None
            if pid:
                break
            if waited >= patience_s:
                return None
            select.select([], [], [], pause)  # an exiting process closes its pipes just before it can be reaped
            waited, pause = waited + pause, min(2 * pause, _POLL_S)
        if os.WIFSIGNALED(status):
            return ("signal", os.WTERMSIG(status))
        return ("code", os.WEXITSTATUS(status))

    def wait_ready(self) -> None:
        """Block until a reply can be read, or raise if the program process ended first
        (its own children may hold the pipe open, so end of file alone is not enough)."""
        while not select.select([self.replies], [], [], _POLL_S)[0]:
            ended = self.wait_exit(patience_s=0)
            if ended is not None:
                raise ProgramFailure("the program ended", ended)


def _harness_process(setup: dict, trust: dict, connection: ProgramConnection) -> None:
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)  # as the namespace's init, nothing in it can signal us
    # The test runs in the program's working directory and group (not its uid: the program can neither signal
    # nor trace the harness), so the files a test makes (ClassEval's databases) are the program's to open.
    os.chdir(setup["workdir"])
    isolation.drop_privileges(
        setup["uids"]["harness"], drop_capabilities=setup["user_namespace"], gid=setup["uids"]["program"]
    )
    limits = setup["limits"]
    isolation.limit_resources(limits["cpu_s"], limits["memory_mb"] if setup["rlimit_memory"] else None, None, None)
    report = {"status": "ok", "error": None, "record": None, "value": None, "program_exit": None}
    try:
        loaded = connection.receive()
        if type(loaded) is tuple and len(loaded) == 2 and loaded[0] == "load_error" and type(loaded[1]) is str:
            report.update(status="error", error=loaded[1][:MAX_ERROR_CHARS])
        elif loaded != ("loaded",):
            raise ProgramFailure("the program broke the harness protocol (no load report)")
        elif trust["mode"] == "test":
            report.update(_run_test(connection, trust["test"], trust["entry_point"], trust["names"]))
        elif trust["mode"] == "whole":
            report.update(
                _run_whole_test(connection, trust["form"], trust["test"], trust["entry_point"], trust["names"])
            )
        elif trust["mode"] == "unittest":
            report.update(_run_unittest(connection, trust["test"], trust["names"]))
        elif trust["mode"] == "expression":
            report.update(_evaluate(connection, trust["expression"]))
        elif trust["mode"] == "calls":
            report.update(_run_calls(connection, trust["calls"]))
    except ProgramFailure as failure:
        report.update(status="error", error=_ended(str(failure), failure.exit), program_exit=failure.exit)
    _write(setup["report_fd"], report)
    os._exit(0)


def _evaluate(connection: ProgramConnection, expression: str) -> dict:
    reply = connection.request(("eval", expression))
    kind = _reply_kind(reply)
    if kind == "return":
        return {"value": (reply[1],)}
    if kind == "raise":
        return {"status": "error", "error": f"{reply[1]}: {reply[2]}" if reply[2] else reply[1]}
    return {"status": "error", "error": f"the expression's value, a {reply[1]}, is not an exact builtin value"}


def _run_calls(connection: ProgramConnection, calls: list) -> dict:
    """Call the program's functions one after another, each (name, arguments)
    sent only when the one before has answered, so the program process holds
    one call's arguments at a time (the rest stay here, in the trusted
    process); the value is every call's return value, in order. The first
    call that raises or returns something not an exact builtin value ends
    the run with status error."""
    returned = []
    for name, arguments in calls:
        reply = connection.request(("call", name, tuple(arguments), {}))
        kind = _reply_kind(reply)
        if kind == "raise":
            return {
                "status": "error",
                "error": f"{name}: {reply[1]}: {reply[2]}" if reply[2] else f"{name}: {reply[1]}",
            }
        if kind == "unserialisable":
            return {"status": "error", "error": f"{name} returned a {reply[1]}, which is not an exact builtin value"}
        returned.append(reply[1])
    return {"value": (tuple(returned),)}


def _run_test(connection: ProgramConnection, test: str, entry_point: str, names: list[str]) -> dict:
    """Run the test against proxies; status ok only if it passes and every call returned
    an exact builtin value (or raised)."""
    calls: list[bytes] = []  # each call's encoded (name, args, kwargs, outcome)
    unserialisable: list[str] = []

    def proxy(name: str, label: str):
        """`label` is what the record calls it: "candidate" for the entry point,
        whose name differs between a program and its renamed variants."""

        def call(*args, **kwargs):
            encode((args, kwargs))  # an argument the program could not receive: the test's own problem
            reply = connection.request(("call", name, args, kwargs))
            kind = _reply_kind(reply)
            calls.append(encode((label, args, kwargs, reply[:2])))  # now: the test may mutate them later
            if kind == "return":
                return reply[1]
            if kind == "unserialisable":
                unserialisable.append(f"{label} returned a {reply[1]}, which is not an exact builtin value")
                raise TypeError(unserialisable[-1])
            raise _exception(reply[1], reply[2])

        call.__name__ = call.__qualname__ = name
        return call

    described = connection.request(("names", names))
    if type(described) is not dict:
        raise ProgramFailure("the program broke the harness protocol (names)")
    namespace: dict = {"__name__": "__test__", "__builtins__": builtins}
    for name in names:
        _bind(namespace, name, described.get(name), proxy)
    random.seed(0)  # tests that draw random inputs draw the same ones for every program
    try:
        exec(compile(test, "test.py", "exec"), namespace)
        check = namespace.get("check")
        if not callable(check):
            return {"status": "error", "error": "the test defines no check function"}
        check(proxy(entry_point, "candidate"))
        outcome, error = "passed", None
    except ProgramFailure:
        raise
    except BaseException as exc:
        outcome, error = type(exc).__name__, describe(exc)
    if connection.failure is not None:
        raise connection.failure
    if unserialisable and outcome == "passed":
        outcome, error = "TypeError", unserialisable[0]
    record = encode({"calls": calls, "test": outcome})
    return {"status": "ok" if outcome == "passed" else "wrong", "error": error, "record": record}


def _run_whole_test(connection: ProgramConnection, form: str, test: str, entry_point: str, names: list[str]) -> dict:
    """Have the program process run the test, a ``check`` or unittest classes
    (`form`), beside the program (`_whole_test`) and collect what it reports:
    status ok only if the test passed. The record has the form of
    `_run_test`'s (and `_run_unittest`'s: each test's outcome), each call's
    values as `_form` gives them."""
    message = connection.request(("whole", form, test, entry_point, names))
    calls: list[bytes] = []
    while not (type(message) is tuple and len(message) == 4 and message[0] == "tested"):
        if not (type(message) is tuple and len(message) == 2 and message[0] == "call" and type(message[1]) is bytes):
            raise ProgramFailure("the program broke the harness protocol (whole test)")
        try:
            decode(message[1])
        except ValueError as error:
            raise ProgramFailure(f"the program broke the harness protocol ({error})") from None
        calls.append(message[1])
        message = connection.receive()
    _, outcome, error, cases = message
    if not (
        type(outcome) is str
        and (error is None or type(error) is str)
        and type(cases) is tuple
        and all(type(case) is tuple and len(case) == 2 and all(type(x) is str for x in case) for case in cases)
    ):
        raise ProgramFailure("the program broke the harness protocol (whole test)")
    if outcome == "no check":
        return {"status": "error", "error": error}
    record = {"calls": calls, "test": outcome} | ({"tests": list(cases)} if form == "unittest" else {})
    return {"status": "ok" if outcome == "passed" else "wrong", "error": error, "record": encode(record)}


class Remote:
    """An object of the program held by reference: its attribute reads and
    writes, calls and operators are requests (`_RemoteSession.request`).
    Its own state lives in one slot so that no attribute of the program's
    object can shadow it."""

    __slots__ = ("_remote",)

    def __init__(self, session: _RemoteSession, reference: tuple, label: str):
        object.__setattr__(self, "_remote", (session, reference, label))

    def _ask(self, message: tuple, label: str):
        session, reference, own = object.__getattribute__(self, "_remote")
        return session.request(message, f"{own}{label}")

    def _operator(self, name: str, *arguments):
        session, reference, own = object.__getattribute__(self, "_remote")
        values_, references = _as_arguments(arguments)
        return session.request(("ref_op", name, reference, values_, references), f"{name}({own})")

    def __getattr__(self, name: str):
        return self._ask(("ref_getattr", object.__getattribute__(self, "_remote")[1], name), f".{name}")

    def __setattr__(self, name: str, value) -> None:
        value_reference = _reference_of(value)
        self._ask(
            (
                "ref_setattr",
                object.__getattribute__(self, "_remote")[1],
                name,
                None if value_reference else value,
                value_reference,
            ),
            f".{name}=",
        )

    def __call__(self, *args, **kwargs):
        values_, references = _as_arguments(args)
        keywords = {k: v for k, v in kwargs.items() if _reference_of(v) is None}
        keyword_references = {k: _reference_of(v) for k, v in kwargs.items() if _reference_of(v) is not None}
        return self._ask(
            (
                "ref_call",
                object.__getattribute__(self, "_remote")[1],
                values_,
                references,
                keywords,
                keyword_references,
            ),
            "()",
        )

    def __instancecheck__(self, instance) -> bool:  # isinstance(x, SomeClassOfTheProgram)
        reference = _reference_of(instance)
        if reference is None:
            return False
        session, own, label = object.__getattribute__(self, "_remote")
        return bool(session.request(("ref_op", "isinstance", reference, (None,), {0: own}), f"isinstance({label})"))

    __len__ = lambda self: self._operator("len")  # noqa: E731 (one line each: the operators a test uses)
    __bool__ = lambda self: self._operator("bool")  # noqa: E731
    __str__ = lambda self: self._operator("str")  # noqa: E731
    __repr__ = lambda self: self._operator("repr")  # noqa: E731
    __iter__ = lambda self: self._operator("iter")  # noqa: E731
    __next__ = lambda self: self._operator("next")  # noqa: E731
    __hash__ = lambda self: self._operator("hash")  # noqa: E731
    __contains__ = lambda self, item: self._operator("contains", item)  # noqa: E731
    __getitem__ = lambda self, key: self._operator("getitem", key)  # noqa: E731
    __setitem__ = lambda self, key, value: self._operator("setitem", key, value)  # noqa: E731
    __delitem__ = lambda self, key: self._operator("delitem", key)  # noqa: E731

    def _compared(self, other):
        """Comparisons are never the program's to answer: an object whose
        ``__eq__`` says yes to anything would pass every assertEqual. A test
        compares exact builtin values (what methods and attributes return)."""
        label = object.__getattribute__(self, "_remote")[2]
        raise TypeError(
            f"the test compares the program's object {label} itself; only exact builtin values are "
            "compared (a method's or an attribute's value)"
        )

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _compared


def _reference_of(value) -> tuple | None:
    return object.__getattribute__(value, "_remote")[1] if type(value) is Remote else None


def _as_arguments(arguments: tuple) -> tuple[tuple, dict]:
    """Positional arguments as (plain values, None where a remote was; {index: its reference})."""
    references = {i: _reference_of(a) for i, a in enumerate(arguments) if _reference_of(a) is not None}
    return tuple(None if i in references else a for i, a in enumerate(arguments)), references


class _RemoteSession:
    """The harness's side of a unittest run: sends each request, records it
    with what came back, and turns a held object into a Remote."""

    def __init__(self, connection: ProgramConnection):
        self.connection = connection
        self.calls: list[bytes] = []

    def request(self, message: tuple, label: str):
        encode(message)  # a value the program could not receive (a remote nested in a list): the test's own problem
        reply = self.connection.request(message)
        if type(reply) is tuple and len(reply) == 2 and reply[0] == "object" and type(reply[1]) is int:
            self.calls.append(encode((label, message[2:], ("object",))))
            return Remote(self, ("held", reply[1]), f"#{reply[1]}")
        kind = _reply_kind(reply)
        self.calls.append(encode((label, message[2:], reply[:2])))
        if kind == "return":
            return reply[1]
        if kind == "unserialisable":
            raise TypeError(f"{label} returned a {reply[1]}, which is not an exact builtin value")
        raise _exception(reply[1], reply[2])


def _run_unittest(connection: ProgramConnection, test: str, names: list[str]) -> dict:
    """Run every unittest.TestCase class the test defines, the program's
    names bound as remotes; status ok only if at least one test ran and all
    passed. The record holds every request and reply, and each test's outcome."""

    session = _RemoteSession(connection)
    described = connection.request(("names", names))
    if type(described) is not dict:
        raise ProgramFailure("the program broke the harness protocol (names)")
    namespace: dict = {"__name__": "__test__", "__builtins__": builtins}
    for name in names:
        description = described.get(name)
        if description in (("callable",), ("other",)):
            namespace[name] = Remote(session, ("name", name), name)
        elif type(description) is tuple and description:
            _bind(namespace, name, description, None)
    random.seed(0)
    outcomes: list[tuple[str, str]] = []
    error = None
    try:
        exec(compile(test, "test.py", "exec"), namespace)
        ids, failed, ran = _run_test_cases(namespace)
        outcomes = [(case, "failed" if case in failed else "passed") for case in ids]
        if failed:
            first = min(failed)
            outcome, error = "failed", f"{first}: {failed[first].strip().splitlines()[-1]}"
        elif not ran:
            outcome, error = "no tests", "the test defines no unittest.TestCase with a test method"
        else:
            outcome = "passed"
    except ProgramFailure:
        raise
    except BaseException as exc:
        outcome, error = type(exc).__name__, describe(exc)
    if connection.failure is not None:
        raise connection.failure
    record = encode({"calls": session.calls, "test": outcome, "tests": outcomes})
    return {"status": "ok" if outcome == "passed" else "wrong", "error": error, "record": record}


def _run_test_cases(scope: dict) -> tuple[list[str], dict[str, str], int]:
    """Run the unittest.TestCase classes ``scope`` defines: (every test's id in
    order, id -> the failure's or error's text, the number of tests run)."""
    import unittest

    suite = unittest.TestSuite()
    for value in list(scope.values()):
        if isinstance(value, type) and issubclass(value, unittest.TestCase) and value is not unittest.TestCase:
            suite.addTests(unittest.defaultTestLoader.loadTestsFromTestCase(value))
    ids = [case.id() for case in _cases(suite)]  # before the run, which lets go of each test it ran
    result = unittest.TestResult()
    suite.run(result)
    return ids, {test_case.id(): text for test_case, text in result.failures + result.errors}, result.testsRun


def _cases(suite) -> list:
    out = []
    for item in suite:
        out += _cases(item) if hasattr(item, "__iter__") else [item]
    return out


def _bind(namespace: dict, name: str, description: object, proxy) -> None:
    if type(description) is not tuple or not description:
        return
    if description == ("callable",):
        namespace[name] = proxy(name, name)
    elif description[0] == "module" and len(description) == 2 and type(description[1]) is str:
        if description[1].partition(".")[0] in sys.stdlib_module_names:
            namespace[name] = importlib.import_module(description[1])
    elif description[0] == "value" and len(description) == 2:
        namespace[name] = description[1]


def _reply_kind(reply: object) -> str:
    if type(reply) is tuple and len(reply) >= 2:
        kind = reply[0]
        if kind == "return" and len(reply) == 2:
            return kind
        if kind == "raise" and len(reply) == 3 and type(reply[1]) is str and type(reply[2]) is str:
            return kind
        if kind == "unserialisable" and len(reply) == 2 and type(reply[1]) is str:
            return kind
    raise ProgramFailure("the program broke the harness protocol (reply)")


def _exception(name: str, message: str) -> BaseException:
    """The builtin exception `name`, or a ProgramError standing for the program's own class."""
    kind = getattr(builtins, name, None)
    if isinstance(kind, type) and issubclass(kind, Exception):
        try:
            return kind(message)
        except Exception:
            pass
    return ProgramError(f"{name}: {message}" if message else name)


def _ended(description: str, exit: tuple | None) -> str:
    if exit is None:
        return description
    if exit[0] == "signal":
        return f"{description}: killed by signal {exit[1]}"
    return f"{description}: exited with code {exit[1]}"


# -- shared ----------------------------------------------------------------------------------------


def describe(exc: BaseException) -> str:
    message = _message(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _message(exc: BaseException) -> str:
    try:
        return str(exc)[:MAX_ERROR_CHARS]
    except Exception:
        return "<unprintable message>"


def _send(fd: int, message: object) -> None:
    data = encode(message)
    _write_all(fd, len(data).to_bytes(4, "big") + data)


def _receive(fd: int, connection: ProgramConnection | None) -> object:
    """One framed message, _END at end of file; the harness (`connection` given) bounds
    its size, checks its form, and notices when the program ends while it waits."""
    header = _read_exactly(fd, 4, connection)
    if header is None:
        return _END
    length = int.from_bytes(header, "big")
    if connection is not None and length > MAX_MESSAGE_BYTES:
        raise ProgramFailure(f"the program sent a message of {length} bytes (limit {MAX_MESSAGE_BYTES})")
    data = _read_exactly(fd, length, connection)
    if data is None:
        return _END
    try:
        return decode(data)
    except ValueError as error:
        raise ProgramFailure(f"the program broke the harness protocol ({error})") from None


def _read_exactly(fd: int, size: int, connection: ProgramConnection | None) -> bytes | None:
    chunks, missing = [], size
    while missing:
        if connection is not None:
            connection.wait_ready()
        chunk = os.read(fd, min(missing, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write(fd: int, report: dict) -> None:
    _write_all(fd, encode(report))
