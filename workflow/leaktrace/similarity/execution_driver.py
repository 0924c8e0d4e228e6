"""The program the execution-similarity stage runs in the sandbox: it executes
many functions, each in a forked child of its own, on their inputs.

One sandbox run costs about 0.1 s, a function's calls a few milliseconds, so
many functions share a run (`leaktrace.similarity.execution` batches them).
What one function does must not spoil the others', so each gets a fresh fork
of this driver: its program's module-level code and calls run there, with an
address-space limit, a CPU-time limit per call (ITIMER_PROF: SIGPROF ends it;
RLIMIT_CPU behind it for a call that handles SIGPROF) and in all (the
children's CPU time, from wait4), and wall-clock limits well above those
for calls that sleep or block; its
outputs stream back through a pipe, one framed message per call. The child
ends on its first sign of leaving its lane, and the function's outcome says
which:

- ``timeout``: the module-level code ran past the function's limit, or the
  function's calls together past the function's limit (a single call past
  the call limit is killed and run once more in a fresh child; past it again,
  its output is ("timeout",) and a fresh child goes on with the next input).
  CPU time, not wall-clock time, so load matters far less; the second try is
  for what still leaks in (a virtual machine's late CPU timers and stolen
  time, a stall past a wall-clock backstop), which once scored a function
  against itself 0.9 in a CI run;
- ``forked``: a call left a child process behind (the copy that returns into
  this code exits at once);
- ``exited``: ``sys.exit`` or ``os._exit`` from the program or a call;
- ``killed``: the child died of a signal;
- ``missing_import:<module>``: a module the program imports is not there;
- ``load_error:<exception>``: its module-level code raised;
- ``class_method_failed``: no instance of a method's class could be built;
- ``not_found``: the program does not define the function where expected.

After each function the child's process group is killed; under full
isolation everything else this uid runs in the sandbox too (``kill(-1)``
spares the driver and the namespace's init), so a process that escaped
with ``setsid`` does not outlive its function. A function that kills the driver
ends the whole run: the caller then runs that batch's functions one per
sandbox run.

Outputs are compared outside, so each is reduced here to exact builtin
values (`leaktrace.sandbox.values`, and sent encoded: the reply's decoders
then handle one bytes object per call): a call's output is what it returned,
what it printed, and its arguments afterwards where the call changed them
(in-place changes are behaviour; None where unchanged), or the name of the
exception it raised. Lists, tuples, sets and dicts keep their
type, their subclasses become them, objects with ``tolist`` (numpy) give that,
generators give their first items, other objects their class name and
attributes. Random state is reset before every call; a coroutine (an async
def's call) is run to its result, a property is read.

Each function runs holding only its own job. The driver never holds a
batch: the sandbox's harness keeps the jobs and calls the driver once per
function (`leaktrace.sandbox.runner.run_calls`), the next call sent only
after the last one answered, so when a child forks, the driver's memory
holds this function's program and inputs and nothing of the others' (no
frame, no object gc can find, no source to exec); what the child sends back
goes on to the harness before the next function starts. Ground truths and
generations never share a run at all (`leaktrace.similarity.execution`).

Stdlib only, no ``from __future__``: this file is the start of the program's
source. The caller appends ``_VALUES_SOURCE`` (the values module's source),
then calls ``_preload(names)`` (the standard library modules the batch's
programs import, imported once before forking: children share them instead
of importing them again), ``_run_item(item, settings)`` for each function
(its (status, detail, outputs)) and ``_cpu()`` (the CPU seconds the run took:
the driver and the children it reaped).
"""

import builtins
import io
import itertools
import math
import os
import random
import resource
import select
import signal
import sys
import time
import types

_MAX_FRAME_BYTES = 8 * 1024 * 1024
_MAX_ITEMS = 1000  # of a generator, or of a collection's members
_MAX_TEXT = 10_000  # characters of printed output kept
# Wall-clock limits, for code that sleeps or blocks (at least these, 20 times
# the CPU limits): backstops behind the CPU timers, wide enough that a loaded
# machine's slow imports do not turn a working function into a timeout (2 s
# did in a test run). Loading (module-level code, building an instance) may
# take the function's.
_CALL_WALL_S = 5.0
_FUNCTION_WALL_S = 10.0
_WALL_FACTOR = 20
_DRIVER_ERROR = 70  # a child's exit status when this driver's own code failed in it
_MAX_DEPTH = 20
_MB = 1024 * 1024


_CAUSES = {"timeout", "forked", "exited", "killed", "missing_import", "load_error", "class_method_failed", "not_found"}
_CODEC = {"__name__": "leaktrace_values"}


def _preload(names):
    """Import the modules once here, not once per child."""
    if "decode" not in _CODEC:
        exec(_VALUES_SOURCE, _CODEC)  # noqa: F821 - appended by the caller
    for name in names:
        try:
            __import__(name)
        except BaseException:  # noqa: B036 - the child will meet the same failure and report it
            pass


def _cpu():
    return sum(
        u.ru_utime + u.ru_stime for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


def _decode(data):
    return _CODEC["decode"](data)


def _encode(value):
    return _CODEC["encode"](value)


def _run_item(item, settings):
    """(status, detail, outputs): status "ok" or the cause, outputs one per input.

    A call past its limit is killed with its process and run again in a
    fresh child; past it twice, its output is ("timeout",) and a fresh child
    goes on from the next input, while the function's CPU time lasts."""
    outputs, status, detail = [], None, ""
    started, cpu, retried = time.monotonic(), 0.0, None
    while status is None:
        status, detail, more, loaded, used = _run_child(item, settings, len(outputs), started)
        outputs += more
        cpu += used
        if status == "call_timeout":
            if not loaded or cpu >= settings["function_cpu_s"]:
                status = "timeout"
            elif retried != len(outputs):  # this input's first time past the limit
                retried, status = len(outputs), None
            else:
                outputs.append(_encode(("timeout",)))
                status = None if len(outputs) < len(item["inputs"]) else "ok"
    return status, detail, outputs


def _run_child(item, settings, first, started):
    """One child running the function on the inputs from ``first`` on:
    (status, detail, outputs, whether the program loaded, its CPU seconds);
    status "call_timeout" when a call (or the loading) ran past the call's
    CPU limit or went silent past its wall-clock limit."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        code = 0
        try:
            os.setpgid(0, 0)
            _child(item, settings, write_end, first)
        except BaseException:  # noqa: B036 - the driver's own code failed in the child
            code = _DRIVER_ERROR
        finally:
            os._exit(code)
    os.close(write_end)
    outputs, status, detail, loaded, ended = [], None, "", False, False
    try:
        while status is None:
            function_wall = max(_FUNCTION_WALL_S, _WALL_FACTOR * settings["function_cpu_s"])
            remaining = function_wall - (time.monotonic() - started)
            call_wall = max(_CALL_WALL_S, _WALL_FACTOR * settings["call_cpu_s"])
            message = _read_frame(read_end, min(call_wall, remaining) if loaded else remaining)
            if message is None:
                status = "call_timeout" if remaining > 0 else "timeout"
            elif message == ():
                ended = True
                break
            elif message[0] == "loaded":
                loaded = True
            elif message[0] == "output" and type(message[1]) is bytes:
                outputs.append(message[1])
            elif message[0] == "done":
                status = "ok"
            elif message[0] in _CAUSES and type(message[1]) is str:
                status, detail = message[0], message[1]
            else:
                raise ValueError("unknown message")
    except (ValueError, OSError, TypeError, IndexError, KeyError):
        status, detail = "protocol", "the function's process broke the driver protocol"
    finally:
        os.close(read_end)
        wait_status, cpu = _end(pid, ended, settings["full_isolation"])
    if ended:
        status, detail = _how_it_ended(wait_status)
    return status, detail, outputs, loaded, cpu


def _end(pid, patient, full_isolation):
    """Kill the child's process group (and, under full isolation, every other
    process the driver may signal: strays that left the group) and reap them
    all; (the child's wait status, its CPU seconds). ``patient``: a child that
    closed its pipe gets a moment to exit by itself first."""
    reaped = None
    for _ in range(100 if patient else 0):
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            reaped = status, usage
            break
        time.sleep(0.01)
    _kill(pid, full_isolation)
    if reaped is None:
        _, status, usage = os.wait4(pid, 0)
        reaped = status, usage
    _reap_all()
    return reaped[0], reaped[1].ru_utime + reaped[1].ru_stime


def _kill(pid, full_isolation):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    if full_isolation:  # never outside namespaces: there kill(-1) reaches the user's other processes
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass


def _reap_all():
    while True:
        try:
            if os.waitpid(-1, 0)[0] == 0:
                break
        except ChildProcessError:
            break


def _how_it_ended(status):
    """(status, detail) of a child that closed its pipe before it said it was done."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number in (signal.SIGPROF, signal.SIGXCPU):
            return "call_timeout", ""
        return "killed", signal.Signals(number).name
    if os.WEXITSTATUS(status) == _DRIVER_ERROR:
        return "driver_error", ""
    return "exited", f"exit code {os.WEXITSTATUS(status)}"


def _read_frame(fd, timeout_s):
    """One message, () at end of file, None when none came within ``timeout_s``."""
    deadline = time.monotonic() + max(timeout_s, 0.0)
    header = _read_exactly(fd, 4, deadline)
    if header is None or header == b"":
        return header if header is None else ()
    length = int.from_bytes(header, "big")
    if length > _MAX_FRAME_BYTES:
        raise ValueError("frame too large")
    data = _read_exactly(fd, length, deadline)
    if data is None:
        return None
    if len(data) < length:
        return ()
    return _decode(data)


def _read_exactly(fd, size, deadline):
    chunks, missing = [], size
    while missing:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return None
        chunk = os.read(fd, min(missing, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


# -- the child: one function ------------------------------------------------------------------------


def _child(item, settings, fd, first):
    own_pid = os.getpid()
    null = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1, 2):
        os.dup2(null, stream)
    limit = settings["memory_mb"] * _MB
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    cpu = math.ceil(settings["function_cpu_s"]) + 1  # behind the per-call timer, for a call that handles SIGPROF
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))

    def limit_cpu(seconds):  # the next call's CPU time
        signal.setitimer(signal.ITIMER_PROF, seconds)

    def send(message):
        if os.getpid() != own_pid:  # a process the function forked came back here
            os._exit(0)
        data = _encode(message)
        os.write(fd, len(data).to_bytes(4, "big") + data)

    namespace = {"__name__": "leaktrace_program", "__builtins__": builtins}
    random.seed(0)
    limit_cpu(settings["function_cpu_s"])  # module-level code may import and build more than a call does
    failure = _guarded(lambda: exec(compile(item["program"], "program.py", "exec"), namespace))
    if failure is not None:
        send(failure if failure[0] != "raise" else ("load_error", failure[1]))
        return
    target = _resolve(namespace, item)
    if target is None:
        send(("not_found", item["name"]))
        return
    holder, name, binding = target
    build = None
    if binding in ("method", "property"):
        build = _constructor(holder, item["constructors"])
        if build is None:
            send(("class_method_failed", "no constructor argument list built an instance"))
            return
    send(("loaded",))
    for encoded in item["inputs"][first:]:
        args, kwargs = _decode(encoded)
        arguments = _encode((args, kwargs))
        captured = io.StringIO()
        result = []

        def call():  # run by _guarded below, in this iteration: the loop's names are the current ones
            if binding == "property":
                result.append(getattr(build(), name))  # noqa: B023
                return
            function = (
                getattr(build(), name)
                if build
                else (getattr(holder, name) if binding in ("static", "class") else holder)
            )
            value = function(*args, **kwargs)  # noqa: B023
            if isinstance(value, types.CoroutineType):  # an async def: its result is what it awaits to
                import asyncio

                value = asyncio.run(value)
            result.append(value)  # noqa: B023

        random.seed(0)
        limit_cpu(settings["call_cpu_s"])
        saved = sys.stdout
        sys.stdout = captured
        try:
            failure = _guarded(call)
        finally:
            sys.stdout = saved
        if os.getpid() != own_pid:
            os._exit(0)
        if _has_children():
            send(("forked", "a call left a child process"))
            return
        if failure is not None and failure[0] != "raise":
            send(failure)
            return
        if failure is not None:
            output = failure
        else:
            after = _plain((args, kwargs))
            changed = _encoded(after) != arguments
            output = ("return", _plain(result[0]), captured.getvalue()[:_MAX_TEXT], after if changed else None)
        limit_cpu(0)  # the output's reduction (a generator's items, tolist) ran timed; no signal mid-frame
        send(("output", _encoded(output)))
    send(("done",))


def _encoded(output):
    try:
        return _encode(output)
    except Exception:  # too deep, or a value _plain could not reduce
        return _encode(("unserialisable", ""))


def _guarded(thunk):
    """None when ``thunk`` returned; else ("raise", name), ("exited", code) or ("missing_import", module)."""
    try:
        thunk()
    except SystemExit as error:
        return ("exited", f"sys.exit({_text(error.code)})")
    except ImportError as error:
        return ("missing_import", error.name or _text(error))
    except BaseException as error:  # noqa: B036 - a function's KeyboardInterrupt is its output
        return ("raise", type(error).__name__)
    return None


def _text(value):
    try:
        return str(value)[:200]
    except Exception:
        return "?"


def _resolve(namespace, item):
    """(holder, name, binding): the function itself, or the class it is looked up on."""
    owner = item["owner"]
    if not owner:
        function = namespace.get(item["name"])
        return (function, item["name"], "function") if callable(function) else None
    holder = namespace.get(owner[0])
    for name in owner[1:]:
        holder = getattr(holder, name, None)
    if not isinstance(holder, type) or not hasattr(holder, item["name"]):
        return None
    return holder, item["name"], item["binding"]


def _constructor(cls, candidates):
    """A function building a fresh instance per call, with the first argument list
    (of the caller's, in order) that builds one; None if none does."""
    for encoded in candidates:
        args, kwargs = _decode(encoded)
        random.seed(0)
        saved = sys.stdout
        sys.stdout = io.StringIO()
        try:
            cls(*args, **kwargs)
        except BaseException:  # noqa: B036
            continue
        finally:
            sys.stdout = saved
        return lambda args=args, kwargs=kwargs: cls(*_copy(args), **_copy(kwargs))
    return None


def _copy(value):
    return _decode(_encode(value))


def _has_children():
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    return True


def _plain(value, depth=0):
    """``value`` as exact builtin values (see the module's docstring)."""
    kind = type(value)
    if value is None or kind in (bool, int, float, complex, str, bytes):
        return value
    if depth > _MAX_DEPTH:
        return ("deep",)
    try:
        for base in (bool, int, float, complex, str, bytes):
            if isinstance(value, base):
                return base(value)
        for base in (list, tuple, set, frozenset):
            if isinstance(value, base):
                items = [_plain(v, depth + 1) for v in itertools.islice(value, _MAX_ITEMS)]
                if base in (set, frozenset):
                    try:
                        return base(items)
                    except TypeError:
                        return ("unhashable", items)
                return base(items)
        if isinstance(value, dict):
            out = {}
            for key, item in itertools.islice(value.items(), _MAX_ITEMS):
                key = _plain(key, depth + 1)
                try:
                    out[key] = _plain(item, depth + 1)
                except TypeError:
                    return (
                        "unhashable",
                        [
                            (_plain(k, depth + 1), _plain(v, depth + 1))
                            for k, v in itertools.islice(value.items(), _MAX_ITEMS)
                        ],
                    )
            return out
        if hasattr(value, "tolist") and callable(value.tolist):
            return ("array", _plain(value.tolist(), depth + 1))
        if hasattr(value, "__next__") and hasattr(value, "__iter__"):
            return ("iterator", [_plain(v, depth + 1) for v in itertools.islice(value, _MAX_ITEMS)])
        attributes = getattr(value, "__dict__", None)
        fields = _plain(dict(attributes), depth + 1) if isinstance(attributes, dict) else None
        return ("object", kind.__name__, fields)
    except Exception as error:
        return ("unconvertible", kind.__name__, type(error).__name__)
