"""The anatomy of a function inside a source file, and the function-level
filters of the functional-memorisation paper (App. B: body length in lines,
minimum characters, no ``__init__``).

The counterfactual prompt is the preceding context plus the signature (the
docstring excluded); the ground truth is the continuation after the signature.
All cuts are made on source lines, so the pieces concatenate back to the file."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

# Lines as ``ast`` numbers them: ended by \r\n, \r or \n only (str.splitlines
# also splits at \f, \x1c, \u2028, ..., which old corpus files do contain).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


# The filter's table (``filter/{benchmark}.functions.parquet``): every sample, kept or why not,
# with its anatomy's pieces; the counterfactual corpus functions extend it.
FUNCTIONS_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("kept", pa.bool_()),
        ("reason", pa.string()),
        ("body_lines", pa.int32()),
        ("n_chars", pa.int32()),
        ("context", pa.string()),
        ("signature", pa.string()),
        ("continuation", pa.string()),
    ]
)


def _source_lines(code: str) -> list[str]:
    return _LINE.findall(code)


@dataclass(frozen=True)
class FunctionAnatomy:
    name: str
    context: str  # everything before the function (or its first decorator)
    signature: str  # decorators and the ``def ...:`` header, newline included
    continuation: str  # docstring and body, up to the function's last line
    docstring: str | None
    body_lines: int  # non-blank lines of the body, docstring excluded
    is_method: bool
    start_line: int  # 1-based line of the first decorator or the ``def``

    @property
    def function(self) -> str:
        return self.signature + self.continuation


def _find_function(tree: ast.Module, name: str) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, bool]:
    """The first definition named ``name``, preferring module level (a class
    there too: ClassEval's entry point); also whether it is defined inside a class."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return node, False
    for parent in ast.walk(tree):
        for node in getattr(parent, "body", []):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return node, isinstance(parent, ast.ClassDef)
    raise ValueError(f"function {name!r} is not defined")


def _anatomy(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool) -> FunctionAnatomy:
    first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    first_body = node.body[0]
    end = node.end_lineno
    if first_body.lineno > node.lineno:
        signature = "".join(lines[first : first_body.lineno - 1])
        continuation = "".join(lines[first_body.lineno - 1 : end])
    else:  # one-liner ``def f(x): return x``
        head = lines[first_body.lineno - 1]
        cut = len(head.encode("utf-8")[: first_body.col_offset].decode("utf-8"))
        signature = "".join(lines[first : first_body.lineno - 1]) + head[:cut]
        continuation = head[cut:] + "".join(lines[first_body.lineno : end])
    docstring = ast.get_docstring(node, clean=False)
    body_start = (
        node.body[1].lineno
        if docstring is not None and len(node.body) > 1
        else (None if docstring is not None else first_body.lineno)
    )
    body_lines = 0 if body_start is None else sum(1 for line in lines[body_start - 1 : end] if line.strip())
    return FunctionAnatomy(
        name=node.name,
        context="".join(lines[:first]),
        signature=signature,
        continuation=continuation,
        docstring=docstring,
        body_lines=body_lines,
        is_method=is_method,
        start_line=first + 1,
    )


def function_anatomy(code: str, name: str) -> FunctionAnatomy:
    node, is_method = _find_function(ast.parse(code), name)
    return _anatomy(_source_lines(code), node, is_method)


def program_anatomy(code: str) -> FunctionAnatomy:
    """A whole program (APPS's stdin/stdout solutions) as the function
    filters see it: no name, context or signature, the program as the body,
    its non-blank lines as the body lines. So the length filters
    (``min_body_lines``, ``max_body_lines``, ``min_chars``) apply to the
    whole program, ``exclude_init`` never applies, and the counterfactual
    stage, which prompts with a signature, skips it."""
    return FunctionAnatomy(
        name="",
        context="",
        signature="",
        continuation=code,
        docstring=None,
        body_lines=sum(1 for line in _source_lines(code) if line.strip()),
        is_method=False,
        start_line=1,
    )


def _definitions(body: list[ast.stmt], in_class: bool) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]]:
    """Every ``def`` among these statements and the statements nested in
    them, and whether it is a method. Only statements can hold a ``def``, so
    expressions are never visited (``ast.walk`` visits every node: several
    times slower over a corpus)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node, in_class
            yield from _definitions(node.body, False)
        elif isinstance(node, ast.ClassDef):
            yield from _definitions(node.body, True)
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for item in getattr(node, field, None) or []:
                    if isinstance(item, ast.stmt):
                        yield from _definitions([item], in_class)
                    else:  # an except handler or a match case: a block of its own
                        yield from _definitions(item.body, in_class)


def all_function_anatomies(code: str) -> list[FunctionAnatomy]:
    """Every function of a module (methods and nested functions too), in
    source order. Raises SyntaxError (or ValueError, MemoryError,
    RecursionError) where ``ast`` cannot parse the code."""
    tree = ast.parse(code)
    lines = _source_lines(code)
    found = [_anatomy(lines, node, is_method) for node, is_method in _definitions(tree.body, False)]
    return sorted(found, key=lambda a: a.start_line)


@dataclass(frozen=True)
class FunctionFilter:
    min_body_lines: int = 1
    max_body_lines: int | None = None
    min_chars: int = 0
    exclude_init: bool = True

    def reason_to_drop(self, anatomy: FunctionAnatomy) -> str | None:
        """Why the function fails the filter, or None if it passes."""
        if self.exclude_init and anatomy.name == "__init__":
            return "function: __init__"
        if anatomy.body_lines < self.min_body_lines:
            return f"function: body has {anatomy.body_lines} lines < {self.min_body_lines}"
        if self.max_body_lines is not None and anatomy.body_lines > self.max_body_lines:
            return f"function: body has {anatomy.body_lines} lines > {self.max_body_lines}"
        if len(anatomy.function) < self.min_chars:
            return f"function: {len(anatomy.function)} characters < {self.min_chars}"
        return None
