"""The program the execution-similarity stage runs in the sandbox: it executes
many functions, each in a forked child of its own, on their inputs.

One sandbox run costs about 0.1 s, a function's calls a few milliseconds, so
many functions share a run (`leaktrace.similarity.execution` batches them).
What one function does must not spoil the others', so each gets a fresh fork
of this driver: its program's module-level code and calls run there, with an
address-space limit and a budget of *steps* per call and in all, so that no
outcome depends on how fast or busy the machine is. A step is a function call
or a loop iteration (comprehensions and lambdas included) of the program's
own code, counted by a C-level counter the program's tree calls at the top
of every function and loop body (`leaktrace.sandbox.steps`). Work inside C code or the standard library is not
counted; CPU-time limits (ITIMER_PROF, RLIMIT_CPU behind it for a call that
handles SIGPROF) and wall-clock limits well above them (for calls that sleep
or block) remain as safety nets. Its
outputs stream back through a pipe, one framed message per call. The child
ends on its first sign of leaving its lane, and the function's outcome says
which:

- ``timeout``: the module-level code, or the module-level code and all the
  calls together, took more than the function's steps, or more than
  ``max_timeouts`` calls took more than the call's (a call past them gives
  the output ("timeout",), and the next input goes on);
- ``timeout:cpu-safety-net`` / ``timeout:wall-safety-net``: a call (or the
  loading) ran past a CPU or wall-clock safety net twice, the second time, in
  a fresh child, at twice the limits; the only outcomes that depend on the
  machine's speed, and named so (a call that passes on the second try counts
  in the function's ``retries``);
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
source. The caller appends ``leaktrace.sandbox.steps``'s source and
``_VALUES_SOURCE`` (the values module's source), then calls ``_preload(names)`` (the standard library modules the batch's
programs import, imported once before forking: children share them instead
of importing them again), ``_run_item(item, settings)`` for each function
(its (status, detail, outputs, steps, cpu, retries)) and ``_cpu()`` (the CPU
seconds the run took: the driver and the children it reaped).
"""

import builtins
import io
import itertools
import math
import operator
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
# Wall-clock safety nets, for code that sleeps or blocks (at least these, 5
# times the CPU safety nets), wide enough that a loaded machine's slow
# imports do not stop a working function (2 s did in a test run). Loading
# (module-level code, building an instance) may take the function's.
_CALL_WALL_S = 5.0
_FUNCTION_WALL_S = 10.0
_WALL_FACTOR = 5
_DRIVER_ERROR = 70  # a child's exit status when this driver's own code failed in it
_MAX_DEPTH = 20
_MB = 1024 * 1024


_CAUSES = {"timeout", "forked", "exited", "killed", "missing_import", "load_error", "class_method_failed", "not_found"}
_SAFETY_NETS = {"cpu-safety-net", "wall-safety-net"}
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
    """(status, detail, outputs, steps, cpu, retries): status "ok" or the cause;
    outputs one per input, with the steps each call took (deterministic) and
    its CPU seconds (for the log only); retries, how many times a safety net
    fired once and not on the second try.

    A call past its steps gives ("timeout",) at once: another try would take
    as many. One past a safety net is killed with its process and run again
    in a fresh child at twice the limits; past it twice, the function's
    outcome is ``timeout:<safety net>``."""
    outputs, steps, cpu, status, detail = [], [], [], None, ""
    started, tried, retries = time.monotonic(), None, 0
    while status is None:
        status, detail, more = _run_child(item, settings, steps, started, tried == len(outputs))
        for output, took, seconds in more:
            outputs.append(output)
            steps.append(took)
            cpu.append(seconds)
        if status in _SAFETY_NETS:
            if tried != len(outputs):  # this input's (or the loading's) first time past it
                tried, status, retries = len(outputs), None, retries + 1
            else:
                status, retries = f"timeout:{status}", retries - 1
    return status, detail, outputs, steps, cpu, retries


def _run_child(item, settings, steps, started, doubled):
    """One child running the function on the inputs from the first without an
    output on (``steps``: the steps each call before took): (status, detail,
    [(output, steps, cpu seconds)]); status "cpu-safety-net" or
    "wall-safety-net" when a call (or the loading) ran past a CPU limit or
    went silent past a wall-clock limit. ``doubled``: the loading and the
    first call get twice the safety nets' limits."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        code = 0
        try:
            os.setpgid(0, 0)
            _child(item, settings, write_end, steps, doubled)
        except BaseException:  # noqa: B036 - the driver's own code failed in the child
            code = _DRIVER_ERROR
        finally:
            os._exit(code)
    os.close(write_end)
    factor = 2 if doubled else 1
    outputs, status, detail, loaded, ended = [], None, "", False, False
    try:
        while status is None:
            function_wall = factor * max(_FUNCTION_WALL_S, _WALL_FACTOR * settings["function_cpu_s"])
            remaining = function_wall - (time.monotonic() - started)
            call_wall = (factor if not outputs else 1) * max(_CALL_WALL_S, _WALL_FACTOR * settings["call_cpu_s"])
            message = _read_frame(read_end, min(call_wall, remaining) if loaded else remaining)
            if message is None:
                status = "wall-safety-net"
            elif message == ():
                ended = True
                break
            elif message[0] == "loaded":
                loaded = True
            elif message[0] == "output" and type(message[1]) is bytes and type(message[2]) is int:
                outputs.append((message[1], message[2], float(message[3])))
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
        wait_status = _end(pid, ended, settings["full_isolation"])
    if ended:
        status, detail = _how_it_ended(wait_status)
    return status, detail, outputs


def _end(pid, patient, full_isolation):
    """Kill the child's process group (and, under full isolation, every other
    process the driver may signal: strays that left the group) and reap them
    all; the child's wait status. ``patient``: a child that
    closed its pipe gets a moment to exit by itself first."""
    reaped = None
    for _ in range(100 if patient else 0):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            reaped = status
            break
        time.sleep(0.01)
    _kill(pid, full_isolation)
    if reaped is None:
        reaped = os.waitpid(pid, 0)[1]
    _reap_all()
    return reaped


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
            return "cpu-safety-net", ""
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


def _counted(program):
    """The program's code with its steps counted (`leaktrace.sandbox.steps`, appended by the caller)."""
    return compile(counted_tree(program), "program.py", "exec")  # noqa: F821 - appended by the caller


def _counter(namespace, budget):
    """A fresh count of ``budget`` steps as the program's counter: its calls
    return True, and raise StopIteration once more than ``budget`` were taken.
    Returns a function giving the steps taken so far (budget + 1: past it)."""
    steps = itertools.repeat(True, budget + 1)
    namespace[STEP] = steps.__next__  # noqa: F821 - appended by the caller
    return lambda: budget + 1 - operator.length_hint(steps)


def _child(item, settings, fd, before, doubled):
    own_pid = os.getpid()
    null = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1, 2):
        os.dup2(null, stream)
    limit = settings["memory_mb"] * _MB
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    factor = 2 if doubled else 1
    # RLIMIT_CPU behind the timers, for a call that handles SIGPROF: each
    # phase's soft limit a second past its timer, the hard one past them all
    # (never above the sandbox's: a hard limit cannot be raised)
    hard = math.ceil(2 * settings["function_cpu_s"] + 2 * settings["call_cpu_s"] * (len(item["inputs"]) + 1)) + 2
    ceiling = resource.getrlimit(resource.RLIMIT_CPU)[1]
    hard = hard if ceiling == resource.RLIM_INFINITY else min(hard, ceiling)

    def limit_cpu(seconds):  # the next phase's CPU time
        usage = resource.getrusage(resource.RUSAGE_SELF)
        soft = min(hard - 1, math.ceil(usage.ru_utime + usage.ru_stime + seconds) + 1)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        signal.setitimer(signal.ITIMER_PROF, seconds)

    def cpu_now():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def send(message):
        if os.getpid() != own_pid:  # a process the function forked came back here
            os._exit(0)
        data = _encode(message)
        os.write(fd, len(data).to_bytes(4, "big") + data)

    namespace = {"__name__": "leaktrace_program", "__builtins__": builtins}
    function_steps = settings["function_steps"]
    taken = _counter(namespace, function_steps)
    random.seed(0)
    limit_cpu(factor * settings["function_cpu_s"])  # module-level code may import and build more than a call does
    failure = _guarded(lambda: exec(_counted(item["program"]), namespace))
    if taken() > function_steps:
        send(("timeout", "module-level code past the function's steps"))
        return
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
        if taken() > function_steps:
            send(("timeout", "module-level code and building an instance past the function's steps"))
            return
        if build is None:
            send(("class_method_failed", "no constructor argument list built an instance"))
            return
    used = taken() + sum(before)
    timeouts = sum(steps > settings["call_steps"] for steps in before)
    send(("loaded",))
    for position, encoded in enumerate(item["inputs"][len(before) :]):
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

        budget = min(settings["call_steps"], function_steps - used)
        taken = _counter(namespace, budget)
        random.seed(0)
        started = cpu_now()
        limit_cpu((factor if position == 0 else 1) * settings["call_cpu_s"])
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
        if failure is not None and failure[0] != "raise" and taken() <= budget:
            send(failure)
            return
        if failure is not None:
            output = failure
        else:
            after = _plain((args, kwargs))
            changed = _encoded(after) != arguments
            output = ("return", _plain(result[0]), captured.getvalue()[:_MAX_TEXT], after if changed else None)
        encoded_output = _encoded(output)  # the reduction (a generator's items, tolist) counts in the call's steps
        limit_cpu(0)  # no signal mid-frame
        steps = taken()
        if steps > budget:
            if budget < settings["call_steps"]:
                send(("timeout", "the calls together past the function's steps"))
                return
            encoded_output = _encode(("timeout",))
            timeouts += 1
            if timeouts > settings["max_timeouts"]:
                send(("timeout", f"more than {settings['max_timeouts']} calls past their steps"))
                return
        used += steps
        send(("output", encoded_output, steps, cpu_now() - started))
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
