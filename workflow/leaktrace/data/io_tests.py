"""APPS-style input/output tests, parsed into what the sandbox runs.

APPS keeps a problem's tests as a JSON string (field ``input_output``):
``{"inputs": [...], "outputs": [...]}``, and ``"fn_name"`` for a call-based
problem. Without ``fn_name`` each input is a program's whole standard input
and each output the standard output expected (a list of lines is joined by
line breaks, as APPS's evaluator joins it): :class:`IoTests`, run by
:mod:`leaktrace.sandbox.stdio`. With ``fn_name`` each input is the list of
arguments of one call of that function and each output its return value
(APPS often wraps it in a one-element list): the cases become a
HumanEval-style ``check(candidate)`` test (:func:`call_test`), run by the
function-test path with ``fn_name`` as the entry point.

A problem has at most ``max_cases`` cases run, the first ones in the file's
order (APPS has problems with hundreds). Malformed tests are an
:class:`InputError` naming the benchmark table and the sample."""

from __future__ import annotations

import json
from dataclasses import dataclass

from leaktrace.errors import InputError

# HumanEval's check(candidate) code; APPS's input_output JSON; a script that calls the solution by name
# (MBPP's asserts, CRUXEval's: leaktrace/data/script_tests.py); unittest classes (ClassEval); a test that
# execs the solution's source (DS-1000's test_execution(code)), which no sandbox path runs; a main() program
# placed after the solution (HumanEval-X's C++, Java, JavaScript, Go), built and run only where a toolchain is
# installed (leaktrace/mutate/compiled.py, `leaktrace mutate`), never by the audit or the testbed.
TEST_FORMATS = ("check", "io", "script", "unittest", "exec", "main")


@dataclass(frozen=True)
class IoTests:
    """Standard inputs and the standard outputs expected for them, in order."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class CallTests:
    """Arguments of calls of ``fn_name`` and the values expected back, in order."""

    fn_name: str
    arguments: tuple[list, ...]
    outputs: tuple[object, ...]


def parse_io_tests(text: str, source: str, sample_id: str, max_cases: int | None) -> IoTests | CallTests:
    """The first ``max_cases`` cases (all when None) of an ``input_output``
    JSON string; ``source`` and ``sample_id`` name where it came from in errors."""

    def bad(message: str) -> InputError:
        return InputError(source, sample_id, f"malformed input/output tests: {message}")

    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise bad(f"not JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    except (ValueError, RecursionError) as err:
        raise bad(f"not JSON ({err or 'nested too deeply'})") from None
    if not isinstance(data, dict):
        raise bad(f"expected a JSON object with inputs and outputs, got a {type(data).__name__}")
    for key in ("inputs", "outputs"):
        if not isinstance(data.get(key), list):
            raise bad(f"{key!r} is missing or not a list")
    inputs, outputs = data["inputs"], data["outputs"]
    if len(inputs) != len(outputs):
        raise bad(f"{len(inputs)} inputs but {len(outputs)} outputs")
    if not inputs:
        raise bad("no cases")
    if max_cases is not None:
        inputs, outputs = inputs[:max_cases], outputs[:max_cases]
    fn_name = data.get("fn_name")
    if fn_name is not None:
        if not isinstance(fn_name, str) or not fn_name.isidentifier():
            raise bad(f"fn_name {fn_name!r} is not a Python identifier")
        for k, arguments in enumerate(inputs, 1):
            if not isinstance(arguments, list):
                raise bad(f"input {k} of a call-based problem is a {type(arguments).__name__}, not a list of arguments")
        return CallTests(fn_name, tuple(inputs), tuple(outputs))
    return IoTests(
        tuple(_stream(v, "input", k, bad) for k, v in enumerate(inputs, 1)),
        tuple(_stream(v, "output", k, bad) for k, v in enumerate(outputs, 1)),
    )


def _stream(value: object, what: str, k: int, bad) -> str:
    """A standard input or output: a string, or a list of lines joined by line breaks."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "\n".join(value)
    raise bad(f"{what} {k} is a {type(value).__name__}, not a string or a list of lines")


def call_test(tests: CallTests) -> str:
    """A HumanEval-style test of the calls: ``check(candidate)`` calls the
    candidate with each case's arguments and asserts APPS's call-based
    equality (the value, tuples read as lists since JSON has none, equals
    the expected output or, when that is a one-element list, its element)."""
    cases = json.dumps([[a, o] for a, o in zip(tests.arguments, tests.outputs, strict=True)])
    return f"""import json

CASES = json.loads({cases!r})


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {{k: _plain(v) for k, v in value.items()}}
    return value


def check(candidate):
    for number, (arguments, expected) in enumerate(CASES, 1):
        got = _plain(candidate(*arguments))
        assert got == expected or (isinstance(expected, list) and len(expected) == 1 and got == expected[0]), number
"""
