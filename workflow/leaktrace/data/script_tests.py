"""Tests written as a script that calls the solution by name, made into the
HumanEval-style ``check(candidate)`` the sandbox runs.

MBPP's ``test_list`` (``assert remove_Occ("hello", "l") == "heo"``, with its
``test_setup_code`` or, in the sanitized release, ``test_imports``), MBPP+'s
``assertion`` (EvalPlus's MbppPlus.jsonl) and its Hugging Face ``test``
script, and CRUXEval's ``assert f(<input>) == <output>`` all call the
function under test by its name at module level. :func:`check_code` moves
the script into ``check(candidate)`` with that name bound to the candidate:
the sandbox's harness then records every call as a call of the candidate
(the entry point of a renamed variant is the same candidate), and the
script's own helper names still come from the program. The script's
imports stay at module level (``from x import *`` is not allowed in a
function); everything else runs, in its order, inside ``check``.

Where a release names no entry point (MBPP), :func:`infer_entry_point`
takes the first name the script calls that the solution defines at module
level, else the solution's only top-level function or class."""

from __future__ import annotations

import ast

SCRIPT_FORMAT = "script"


def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def defined_names(code: str) -> list[str]:
    """The functions and classes the code defines at module level, in order."""
    tree = _parse(code)
    if tree is None:
        return []
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def called_names(script: str) -> list[str]:
    """The names the script calls (``name(...)``), in source order, each once."""
    tree = _parse(script)
    if tree is None:
        return []
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    calls.sort(key=lambda n: (n.lineno, n.col_offset))
    return list(dict.fromkeys(n.func.id for n in calls))


def infer_entry_point(code: str, script: str | None) -> str | None:
    """The function the tests call: the first name the script calls that the
    code defines at module level; else the code's only top-level function or
    class; else None."""
    defined = defined_names(code)
    for name in called_names(script or ""):
        if name in defined:
            return name
    return defined[0] if len(defined) == 1 else None


def check_code(script: str, entry_point: str) -> str:
    """``script`` as a HumanEval-style test: its imports at module level, the
    rest as the body of ``check(candidate)``, ``entry_point`` bound to the
    candidate. Raises SyntaxError when the script is not Python."""
    tree = ast.parse(script)
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    body = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))]
    module = ast.Module(
        body=[
            *imports,
            ast.FunctionDef(
                name="check",
                args=ast.arguments(
                    posonlyargs=[], args=[ast.arg("candidate")], kwonlyargs=[], kw_defaults=[], defaults=[]
                ),
                body=[
                    ast.Assign(targets=[ast.Name(entry_point, ast.Store())], value=ast.Name("candidate", ast.Load())),
                    *body,
                ],
                decorator_list=[],
                returns=None,
                type_params=[],
            ),
        ],
        type_ignores=[],
    )
    return ast.unparse(ast.fix_missing_locations(module)) + "\n"


def script_problem(script: str, entry_point: str | None) -> str | None:
    """Why a script test cannot be run as ``check(candidate)``, or None."""
    if not script.strip():
        return "it has no tests"
    if not entry_point:
        return "it has no entry point (the release names none, and neither its tests nor its code show one)"
    tree = _parse(script)
    if tree is None:
        return "its tests are not Python"
    if not entry_point.isidentifier():
        return f"its entry point {entry_point!r} is not a Python name"
    return None
