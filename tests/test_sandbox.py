"""The sandbox runs programs and tests, and always returns a structured result.

Attacks on the sandbox are in test_sandbox_attacks.py; this file covers what
honest programs see. The tests need namespaces and a writable cgroup (root on
Linux, or a delegated cgroup); they skip, saying what is missing, elsewhere.
"""

import dataclasses
import math

import pytest

from leaktrace.sandbox import (
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    isolation_level,
    run_many,
    run_python,
    run_test,
    run_tests,
    run_whole_test,
    runner,
)
from leaktrace.sandbox.values import UnserialisableValue, decode, encode

FAST = SandboxLimits(timeout_s=5.0, cpu_s=5, memory_mb=256, file_size_mb=1, max_processes=8, scratch_mb=8)


isolated = pytest.mark.usefixtures("full_isolation")


# -- values ----------------------------------------------------------------------------------------


def test_values_round_trip_with_exact_types():
    value = {"a": [1, 1.0, True, None], (2, "b"): {frozenset({3}), b"\x00"}, 4: complex(1, -0.0), "s": "\udcff"}
    back = decode(encode(value))
    assert back == value
    assert [type(item) for item in back["a"]] == [int, float, bool, type(None)]
    assert math.copysign(1, back[4].imag) == -1  # -0.0 survives
    assert math.isnan(decode(encode(float("nan"))))


def test_values_encoding_is_canonical():
    assert encode({3, 1, 2}) == encode({2, 3, 1})
    assert encode({"b": 1, "a": 2}) != encode({"a": 2, "b": 1})  # order is observable
    assert list(decode(encode({"b": 1, "a": 2}))) == ["b", "a"]
    assert encode(1) != encode(1.0) != encode(True)
    assert encode([1]) != encode((1,))
    assert encode(float("nan")) == encode(-float("nan"))


def test_values_reject_subclasses_and_objects():
    class Always(int):
        def __eq__(self, other):
            return True

    for value in (Always(1), [object()], {"k": len}, type("S", (str,), {})("x")):
        with pytest.raises(UnserialisableValue):
            encode(value)
    nested = []
    for _ in range(200):
        nested = [nested]
    with pytest.raises(UnserialisableValue, match="nested deeper"):
        encode(nested)


def test_values_reject_malformed_bytes():
    truncated, trailing, too_long = b"i\x00\x00\x00\x05\x01", b"NN", b"l\xff\xff\xff\xff"
    unhashable = b"S\x00\x00\x00\x01l\x00\x00\x00\x00"  # a set holding a list
    for data in (b"", b"x", truncated, trailing, too_long, unhashable):
        with pytest.raises(ValueError):
            decode(data)


# -- running programs ------------------------------------------------------------------------------


@isolated
def test_ok_with_return_value_and_stdout():
    result = run_python("import math\nx = math.factorial(5)\nprint('done')", FAST, result_expr="[x, {'k': (x,)}]")
    assert isinstance(result, SandboxResult)
    assert (result.status, result.error, result.isolation) == ("ok", None, "full")
    assert result.return_value == [120, {"k": (120,)}]
    assert result.stdout == "done\n"


@isolated
def test_unserialisable_value_is_an_error():
    result = run_python("class Box:\n    pass", FAST, result_expr="Box()")
    assert result.status == "error"
    assert result.error == "the expression's value, a Box, is not an exact builtin value"
    assert result.return_value is None


@isolated
def test_exception_is_an_error_with_its_message_and_traceback():
    result = run_python("x = 1\nassert x + 1 == 3, 'arithmetic is broken'", FAST)
    assert (result.status, result.error) == ("error", "AssertionError: arithmetic is broken")
    assert "assert x + 1 == 3" in result.stderr  # the traceback shows the program's source line


@isolated
def test_syntax_error_and_explicit_exit_are_errors():
    assert run_python("def broken(:\n", FAST).error.startswith("SyntaxError")
    exited = run_python("import os\nos._exit(7)", FAST)
    assert (exited.status, exited.error) == ("error", "the program ended: exited with code 7")


@isolated
def test_infinite_loop_times_out():
    limits = SandboxLimits(timeout_s=0.5, cpu_s=5, memory_mb=256, file_size_mb=1, max_processes=8)
    result = run_python("while True:\n    pass", limits)
    assert result.status == "timeout"
    assert result.error == "exceeded the wall-clock limit of 0.5 s"
    assert result.duration_s < 3


@isolated
def test_cpu_limit_kills():
    limits = SandboxLimits(timeout_s=10.0, cpu_s=1, memory_mb=256, file_size_mb=1, max_processes=8)
    result = run_python("while True:\n    pass", limits)
    assert result.status == "killed"
    assert result.error in ("the program was killed by SIGXCPU", "the program was killed by SIGKILL")


@isolated
def test_single_process_memory_bomb_is_contained():
    result = run_python("hog = []\nwhile True:\n    hog.append(bytearray(10**7))", FAST)
    assert result.status in {"killed", "error"}
    if result.status == "error":
        assert result.error.startswith("MemoryError")
    else:
        assert result.error == "exceeded the memory limit of 256 MB"


@isolated
def test_huge_file_is_stopped():
    code = "with open('big.bin', 'wb') as f:\n    for _ in range(100):\n        f.write(b'0' * 10**6)"
    result = run_python(code, FAST)
    assert result.status in {"killed", "error"}
    if result.status == "error":
        assert "File too large" in result.error


@isolated
def test_output_is_truncated():
    result = run_python("print('x' * 10**6)", FAST)
    assert result.status == "ok"
    assert len(result.stdout) < 200_000
    assert result.stdout.endswith("truncated]")


@isolated
def test_sees_only_the_interpreter_as_nobody_in_a_private_tmp():
    expression = "[os.getuid(), os.getcwd(), os.listdir('.'), sorted(os.environ), os.listdir('/')]"
    result = run_python("import os\nopen('mine.txt', 'w').close()", FAST, result_expr=expression)
    uid, cwd, listing, environment, root = result.return_value
    assert (uid, cwd, sorted(listing)) == (65534, "/tmp", ["mine.txt", "program.py"])
    assert environment == ["HOME", "LC_ALL", "PATH", "TMPDIR"]
    assert set(root) <= {"dev", "etc", "lib", "lib64", "usr", "root", "tmp", "bin", "opt", "home"}
    again = run_python("import os", FAST, result_expr="os.listdir('.')")
    assert again.return_value == ["program.py"]  # every run starts from an empty tmpfs


@isolated
def test_no_network_but_loopback():
    result = run_python("import socket", FAST, result_expr="[name for _, name in socket.if_nameindex()]")
    assert result.return_value == ["lo"]


@isolated
def test_runs_are_reproducible():
    code = "import random\nvalues = [random.random() for _ in range(3)]\nnames = list({'a', 'b', 'c', 'd'})"
    first, second = (run_python(code, FAST, result_expr="[values, names]") for _ in range(2))
    assert first.return_value == second.return_value


@isolated
def test_run_many_preserves_order():
    codes = [f"import time\ntime.sleep({0.1 * (3 - i)})\nvalue = {i}" for i in range(4)]
    results = run_many(codes, FAST, workers=4, result_expr="value")
    assert [r.return_value for r in results] == [0, 1, 2, 3]


def test_run_many_rejects_zero_workers():
    with pytest.raises(ValueError):
        run_many(["pass"], FAST, workers=0)


def test_unknown_isolation_level_is_rejected():
    with pytest.raises(ValueError, match="isolation"):
        SandboxLimits(isolation="some")


# -- running tests ---------------------------------------------------------------------------------

TEST = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(x=-1) == -2\n"


@isolated
def test_passing_test_records_every_call():
    result = run_test("def double(x):\n    return x * 2\n", TEST, "double", FAST)
    assert (result.status, result.error) == ("ok", None)
    record = decode(result.record)
    assert record["test"] == "passed"
    calls = [decode(call) for call in record["calls"]]
    assert calls == [("candidate", (2,), {}, ("return", 4)), ("candidate", (), {"x": -1}, ("return", -2))]


@isolated
def test_failing_test_is_wrong_with_its_assertion():
    result = run_test("def double(x):\n    return x + 2\n", TEST, "double", FAST)
    assert (result.status, result.error) == ("wrong", "AssertionError")
    assert decode(result.record)["test"] == "AssertionError"


@isolated
def test_program_exceptions_reach_the_test_as_builtin_exceptions():
    code = "def parse(text):\n    return int(text)\n"
    test = (
        "def check(candidate):\n"
        "    try:\n"
        "        candidate('x')\n"
        "    except ValueError as error:\n"
        "        assert 'invalid literal' in str(error)\n"
        "    else:\n"
        "        assert False\n"
    )
    result = run_test(code, test, "parse", FAST)
    assert result.status == "ok"
    assert decode(decode(result.record)["calls"][0])[3] == ("raise", "ValueError")


@isolated
def test_the_test_reaches_the_programs_helpers_and_constants():
    code = (
        "SHIFT = 3\n"
        "def encode(s):\n    return s[SHIFT:] + s[:SHIFT]\n"
        "def decode(s):\n    return s[-SHIFT:] + s[:-SHIFT]\n"
    )
    test = "def check(candidate):\n    assert candidate(encode('abcdef')) == 'abcdef'\n    assert SHIFT == 3\n"
    result = run_test(code, test, "decode", FAST)
    assert result.status == "ok", result.error
    assert [decode(call)[0] for call in decode(result.record)["calls"]] == ["encode", "candidate"]


@isolated
def test_program_that_fails_to_load_is_an_error():
    result = run_test("def double(x):\n    return x * 2\nraise RuntimeError('no')\n", TEST, "double", FAST)
    assert (result.status, result.error, result.record) == ("error", "RuntimeError: no", None)


@isolated
def test_run_tests_preserves_order():
    items = [
        (f"def f(x):\n    return x * {k}\n", TEST.replace("candidate(2) == 4", f"candidate(2) == {2 * k}"), "f")
        for k in (2, 3)
    ]
    results = run_tests(items, FAST, workers=2)
    assert [r.status for r in results] == ["ok", "wrong"]


# -- a test run whole, in the program's process -----------------------------------------------------


@isolated
def test_a_whole_test_records_each_call_and_what_it_did_to_its_arguments():
    code = "def push(xs, x):\n    xs.append(x)\n    return iter(xs)\n\n\ndef size(xs):\n    return len(xs)\n"
    test = (
        "def check(candidate):\n"
        "    xs = [1]\n"
        "    assert list(candidate(xs, x=2)) == [1, 2]\n"
        "    assert size(xs) == 2\n"
        "    assert candidate(len, 3) is None\n"
    )
    result = run_whole_test(code, test, "push", FAST)
    assert (result.status, result.error) == (
        "wrong",
        "AttributeError: 'builtin_function_or_method' object has no attribute 'append'",
    )
    calls = [decode(call) for call in decode(result.record)["calls"]]
    assert calls == [
        (
            "candidate",
            (("value", [1]),),
            {"x": ("value", 2)},
            ("return", ("object", type(iter([])))),
            ((("value", [1, 2]),), {"x": ("value", 2)}),
        ),
        ("size", (("value", [1, 2]),), {}, ("return", ("value", 2)), None),
        ("candidate", (("object", type(len)), ("value", 3)), {}, ("raise", "AttributeError"), None),
    ]
    assert decode(result.record)["test"] == "AttributeError"


@isolated
def test_the_programs_own_exceptions_reach_a_whole_test_as_themselves():
    code = "class ParseError(ValueError):\n    pass\n\n\ndef parse(text):\n    raise ParseError(text)\n"
    test = (
        "def check(candidate):\n"
        "    try:\n"
        "        candidate('x')\n"
        "    except ParseError as error:\n"
        "        assert type(error).__name__ == 'ParseError' and str(error) == 'x'\n"
        "    else:\n"
        "        assert False\n"
    )
    assert run_test(code, test, "parse", FAST).status == "wrong"  # across the boundary it is a stand-in
    result = run_whole_test(code, test, "parse", FAST)
    assert (result.status, result.error) == ("ok", None)


@isolated
def test_a_whole_test_without_check_an_entry_point_or_a_program_to_the_end_fails():
    double = "def double(x):\n    return x * 2\n"
    no_check = run_whole_test(double, "assert True\n", "double", FAST)
    assert (no_check.status, no_check.error) == ("error", "the test defines no check function")
    missing = run_whole_test(double, TEST, "triple", FAST)
    assert (missing.status, missing.error) == ("wrong", "NameError: the program defines no triple")
    ended = run_whole_test("import os\n\n\ndef double(x):\n    os._exit(0)\n", TEST, "double", FAST)
    assert ended.status == "error" and ended.error.startswith("the program ended")
    assert run_whole_test(double, TEST, "double", FAST).status == "ok"


# -- where the platform cannot isolate -------------------------------------------------------------


@isolated
def test_missing_isolation_is_named_and_needs_an_opt_in(monkeypatch):
    weakened = dataclasses.replace(
        runner._platform(), namespaces="no isolating namespaces (test)", cgroup="no writable cgroup (test)"
    )
    monkeypatch.setattr(runner, "_platform", lambda: weakened)
    missing = r"no isolating namespaces \(test\); no writable cgroup .*isolation: weak"
    with pytest.raises(SandboxUnavailable, match=missing):
        run_python("pass", FAST)
    weak = dataclasses.replace(FAST, isolation="weak")
    assert isolation_level(weak) == "weak"
    result = run_python("import os", weak, result_expr="os.getuid()")
    assert (result.status, result.isolation, result.return_value) == ("ok", "weak", 65534)  # as root, still not root
    tested = run_test("def double(x):\n    return x * 2\n", TEST, "double", weak)
    assert (tested.status, tested.isolation) == ("ok", "weak")


@isolated
def test_the_user_namespace_path_isolates_as_well(monkeypatch):
    """What a caller that is not root gets: one mapped uid, capabilities dropped."""
    with_user_namespace = dataclasses.replace(runner._platform(), user_namespace=True)
    monkeypatch.setattr(runner, "_platform", lambda: with_user_namespace)
    code = "import os\ntry:\n    open('/usr/escape', 'w')\n    escaped = True\nexcept OSError:\n    escaped = False\n"
    result = run_python(code, FAST, result_expr="[os.getuid(), escaped, os.path.exists('/etc/shadow')]")
    assert (result.status, result.return_value) == ("ok", [65534, False, False])
    forged = run_test(
        "import os, signal\nos.kill(1, signal.SIGKILL)\ndef double(x):\n    return x + 1\n", TEST, "double", FAST
    )
    assert (forged.status, forged.error) == ("wrong", "AssertionError")


def test_date_time_and_type_values_round_trip_exactly():
    import datetime

    from leaktrace.sandbox.values import TypeName

    east = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
    for value in (
        datetime.datetime(2024, 2, 29, 23, 59, 59, 999_999),
        datetime.datetime(2024, 1, 1, tzinfo=east),
        datetime.datetime(2021, 11, 7, 1, 30, fold=1),
        datetime.date(1, 1, 1),
        datetime.time(0, 0, tzinfo=east),
        datetime.timedelta(days=-3, microseconds=1),
        int,
        [datetime.date(2020, 1, 1), str],
    ):
        back = decode(encode(value))
        assert back == value and type(back) is type(value) and encode(back) == encode(value)
    assert decode(encode(datetime.datetime(2021, 11, 7, 1, 30, fold=1))).fold == 1  # equal to fold 0, but kept
    # a date and the midnight datetime, a timedelta and its seconds: distinct bytes
    assert encode(datetime.date(2020, 1, 1)) != encode(datetime.datetime(2020, 1, 1))
    assert encode(datetime.timedelta(seconds=1)) != encode(1)
    # a type that is not a builtin decodes to its name, equal to the real class, never imported
    named = decode(encode(UnserialisableValue))
    assert type(named) is TypeName and named == UnserialisableValue and named.qualname == "UnserialisableValue"
    # TypeName's == is what is tested (it equals the class it names), so no `is`
    assert named != ValueError and decode(encode(type(None))) == type(None)  # noqa: E721 (NoneType: by name)


def test_date_values_that_are_not_exact_are_refused_and_malformed_ones_rejected():
    import datetime
    import zoneinfo

    class Later(datetime.date):  # a subclass could answer comparisons of its own
        pass

    with pytest.raises(UnserialisableValue):
        encode(Later(2020, 1, 1))
    with pytest.raises(UnserialisableValue, match="only fixed offsets"):
        encode(datetime.datetime(2020, 1, 1, tzinfo=zoneinfo.ZoneInfo("UTC")))
    with pytest.raises(ValueError, match="malformed value"):
        decode(b"a" + encode((2020, 13, 1)))  # month 13
    with pytest.raises(ValueError, match="malformed value"):
        decode(b"a" + encode((2020, True, 1)))  # a bool is not a field
    with pytest.raises(ValueError, match="malformed value: type name"):
        decode(b"k" + encode(("builtins",)))
