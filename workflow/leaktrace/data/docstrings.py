"""Docstrings removed from a program's text: the systematic,
membership-unrelated shift of the shifted-control experiment
(config/experiments/shifted-controls.yaml).

A control set of problems with their docstrings removed differs from the
suspects in length, in natural-language share and in what a model finds
predictable, and in nothing about which problems a model saw. Every
docstring (module, function, class: the first statement a string
literal, as :func:`ast.get_docstring` reads it) is removed as whole
lines of the source; nothing else of the text changes (no reformatting, as
``ast.unparse`` would do). A body left with nothing but its docstring
keeps a ``pass``."""

from __future__ import annotations

import ast


def docstring_lines(source: str) -> list[tuple[int, int]]:
    """(first, last, the body's only statement, its column) of every docstring of ``source``, by line (1-based)."""
    tree = ast.parse(source)
    ranges = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                ranges.append((first.lineno, first.end_lineno, len(node.body) == 1, first.col_offset))
    return sorted(ranges)


def strip_docstrings(prompt: str, solution: str) -> str:
    """``prompt`` with every docstring of ``prompt + solution`` that lies in
    the prompt removed (HumanEval's prompt is the signature and docstring,
    its solution the body). A docstring that is a body's only statement is
    replaced by ``pass`` at its indentation."""
    lines = prompt.splitlines(keepends=True)
    drop: dict[int, str | None] = {}
    for first, last, alone, column in docstring_lines(prompt + solution):
        if last > len(lines):
            continue
        for number in range(first, last + 1):
            drop[number] = None
        if alone and not solution.strip():
            drop[first] = " " * column + "pass\n"
    kept = [
        drop[i] if i in drop else line for i, line in enumerate(lines, start=1) if i not in drop or drop[i] is not None
    ]
    return "".join(kept)
