"""Tests written as scripts that call the solution by name (MBPP's asserts,
MBPP+'s scripts, CRUXEval's assertion), made into HumanEval's check(candidate)
(data/script_tests.py): hand-written expectations of the conversion and the
entry point inferred where a release names none."""

import pytest

from leaktrace.data.script_tests import check_code, infer_entry_point, script_problem

MBPP_CODE = (
    "import re\ndef helper(s):\n    return s.strip()\n\ndef remove_occ(s, ch):\n    return helper(s).replace(ch, '')\n"
)


def test_the_script_becomes_a_check_with_its_imports_at_module_level():
    script = "import math\nfrom collections import *\nassert remove_occ('hello', 'l') == 'heo'\nx = 2\nassert helper(' a ') == 'a'"
    assert check_code(script, "remove_occ") == (
        "import math\nfrom collections import *\n\ndef check(candidate):\n    remove_occ = candidate\n"
        "    assert remove_occ('hello', 'l') == 'heo'\n    x = 2\n    assert helper(' a ') == 'a'\n"
    )


@pytest.mark.parametrize(
    "code, script, expected",
    [
        (MBPP_CODE, "assert remove_occ('a', 'a') == ''", "remove_occ"),  # the called one, not the helper
        (MBPP_CODE, "assert helper(' x') == 'x'\nassert remove_occ('a', 'a') == ''", "helper"),  # the first called
        ("def f(x):\n    return x\n", "assert f(1) == 1", "f"),  # CRUXEval
        ("class Box:\n    pass\n", "assert isinstance(Box(), Box)", "Box"),
        ("def only(x):\n    return x\n", "assert 1 == 1", "only"),  # the code's only function
        ("def a():\n    pass\n\ndef b():\n    pass\n", "assert 1 == 1", None),  # nothing to go by
        ("def a(:\n", "assert a()", None),  # code that does not parse
    ],
)
def test_the_entry_point_is_the_first_function_the_tests_call_that_the_code_defines(code, script, expected):
    assert infer_entry_point(code, script) == expected


def test_a_script_that_cannot_run_says_why():
    assert script_problem("", "f") == "it has no tests"
    assert script_problem("assert f(1)", None).startswith("it has no entry point")
    assert script_problem("assert f(1", "f") == "its tests are not Python"
    assert script_problem("assert f(1)", "not a name") == "its entry point 'not a name' is not a Python name"
    assert script_problem("assert f(1) == 1", "f") is None
