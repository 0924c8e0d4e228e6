"""Granularity: what a corpus document is compared as.

``file``: the whole document. ``function``: its top-level functions and
classes (Python as ``ast`` splits it, found more cheaply by :func:`_outline`;
Java and JavaScript through tree-sitter when
the grammar package is importable); a document that does not parse, has no
top-level definitions, or is in a language without a grammar is compared
whole, and the reason is counted; so is code nested deeper than ``ast`` can
follow (it raises MemoryError or RecursionError, a parse error here). Huge
documents are never parsed whole (:func:`huge_units`): Python is split
between top-level statements into segments of at most ``max_bytes``, each
parsed on its own, and whatever cannot be split so is cut into overlapping
windows (:func:`windows`) so that nothing is dropped: any piece of code up to
half a window long lies entirely inside one window.

A benchmark sample is compared as its whole solution and, when it holds more
than one top-level definition or lines outside its definitions (MBPP/1's
``R = 3``, ``C = 3`` before its function), as each definition too
(:func:`benchmark_parts`): a corpus file split into functions then has a unit
that is a verbatim copy of a part, whatever the layout around it.
"""

from __future__ import annotations

import _symtable
import ast
import functools
import gc
import io
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from leaktrace.leakage import kernels

EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".java": "java",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".go": "go",
    ".rs": "rust",
    ".cs": "csharp",
}
GRANULARITIES = ("file", "function")


@dataclass(frozen=True)
class Unit:
    text: str
    name: str | None  # the definition's name; None for a whole file or window
    start_line: int  # 1-based, inclusive
    end_line: int


def language_of(location: str | None, default: str | None) -> str | None:
    if location:
        lang = EXTENSIONS.get(PurePosixPath(location.split("::", 1)[0]).suffix.lower())
        if lang:
            return lang
    return default


def _whole(text: str, first_line: int = 1) -> Unit:
    return Unit(text, None, first_line, first_line + text.count("\n"))


def parse_python(text: str) -> ast.Module:
    """``ast.parse(text)`` with the cyclic garbage collector paused: an AST
    holds no reference cycles (refcounting frees it), yet building a large
    one triggers collections that traverse every object the process holds,
    which in a scan job doubled the time of parsing."""
    if not gc.isenabled():
        return ast.parse(text)
    gc.disable()
    try:
        return ast.parse(text)
    finally:
        gc.enable()


_NEWER_TOKENISER = sys.version_info >= (3, 12)  # f-strings tokenised as code (PEP 701)


def _outline(text: str) -> list[tuple[str, int, int]] | None:
    """(name, first line, last line) of each top-level definition of Python
    ``text``, as ``ast`` gives them, at about two thirds of its cost, or None when ``ast``
    must decide. Whether the text parses is the parser's answer without the
    Python objects of an AST (``_symtable``: the parser and the symbol table,
    which rejects a little more than ``ast.parse``, never less: then ``ast``
    decides); where the definitions lie comes from a compiled scan of the
    tokens (:func:`~leaktrace.leakage.kernels.python_top_level`), each
    checked against a module-level scope of the symbol table (its name and
    line). Nesting too deep stops the symbol table where it stops ``ast``
    (the parser's own limit comes first). ``tests/test_units_outline.py``
    checks the outline equals ``ast``'s on every file of the standard
    library and site-packages."""
    if _NEWER_TOKENISER:  # from 3.12 an f-string's braces hold code, quotes included: not the scan's strings
        return None
    if "\r" in text or "\x0c" in text or "\x0b" in text or "\x00" in text or text.startswith("\ufeff"):
        return None  # line breaks, indentation or a BOM the scan does not follow as the tokeniser does
    paused = gc.isenabled()
    gc.disable()
    try:
        top = _symtable.symtable(text, "<unit>", "exec")
    except Exception:  # noqa: BLE001 - whatever stops the symbol table, ast decides
        return None
    finally:
        if paused:
            gc.enable()
    data = text.encode("utf-8")
    m, first, last, keyword_line, lo, hi, sure = kernels.python_top_level(
        np.frombuffer(data, dtype=np.uint8), kernels.IDENTIFIER_BYTE
    )
    if not sure:
        return None
    scopes = {(c.name, c.lineno) for c in top.children}
    out = []
    for k in range(m):
        name = data[lo[k] : hi[k]].decode("utf-8")
        if not name.isascii():
            name = unicodedata.normalize("NFKC", name)  # as the parser stores a name
        if (name, int(keyword_line[k])) not in scopes:
            return None
        out.append((name, int(first[k]), int(last[k])))
    return out


def _python_units(text: str) -> list[Unit] | None:
    outline = _outline(text)
    if outline is None:
        try:
            tree = parse_python(text)
        except (
            SyntaxError,
            ValueError,
            MemoryError,
            RecursionError,
        ):  # the last two: nested deeper than the parser follows
            return None
        outline = [
            (node.name, min([node.lineno] + [d.lineno for d in node.decorator_list]), node.end_lineno)
            for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]
    lines = text.splitlines(keepends=True)
    return [Unit("".join(lines[start - 1 : end]), name, start, end) for name, start, end in outline]


_TS_TOP_LEVEL = {
    "java": {
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "annotation_type_declaration",
        "method_declaration",
    },
    "javascript": {"function_declaration", "generator_function_declaration", "class_declaration"},
}
_JS_VALUES = {"arrow_function", "function_expression", "function", "generator_function", "class"}


@functools.cache
def tree_sitter_parser(language: str):
    """A tree-sitter parser for ``language``, or None if the grammar is not installed."""
    try:
        from tree_sitter import Language, Parser

        if language == "java":
            import tree_sitter_java as grammar
        elif language == "javascript":
            import tree_sitter_javascript as grammar
        else:
            return None
    except ImportError:
        return None
    return Parser(Language(grammar.language()))


def _ts_name(node) -> str | None:
    name = node.child_by_field_name("name")
    if name is None:
        for child in node.named_children:
            if child.type == "variable_declarator" and child.child_by_field_name("name") is not None:
                name = child.child_by_field_name("name")
                break
    return name.text.decode("utf-8", "replace") if name is not None else None


def _ts_is_definition(node, language: str) -> bool:
    if node.type in _TS_TOP_LEVEL[language]:
        return True
    if language == "javascript":
        if node.type == "export_statement":
            return any(_ts_is_definition(c, language) for c in node.named_children)
        if node.type in ("lexical_declaration", "variable_declaration"):
            return any(
                c.type == "variable_declarator"
                and c.child_by_field_name("value") is not None
                and c.child_by_field_name("value").type in _JS_VALUES
                for c in node.named_children
            )
    return False


def _tree_sitter_units(text: str, language: str) -> list[Unit] | None:
    parser = tree_sitter_parser(language)
    if parser is None:
        return None
    data = text.encode("utf-8")
    tree = parser.parse(data)
    units = []
    for node in tree.root_node.named_children:
        if _ts_is_definition(node, language):
            target = node
            if node.type == "export_statement":
                target = next((c for c in node.named_children if _ts_is_definition(c, language)), node)
            units.append(
                Unit(
                    data[node.start_byte : node.end_byte].decode("utf-8"),
                    _ts_name(target),
                    node.start_point[0] + 1,
                    node.end_point[0] + 1,
                )
            )
    return units


def split_units(text: str, language: str | None, granularity: str) -> tuple[list[Unit], str | None]:
    """The units of one document, and why it stayed whole (``parse_error``,
    ``no_grammar``, ``no_definitions``) if ``function`` granularity could not split it."""
    if granularity == "file":
        return [_whole(text)], None
    if granularity != "function":
        raise ValueError(f"unknown granularity {granularity!r}; known: {', '.join(GRANULARITIES)}")
    if language == "python":
        units = _python_units(text)
        if units is None:
            return [_whole(text)], "parse_error"
    elif language in _TS_TOP_LEVEL:
        units = _tree_sitter_units(text, language)
        if units is None:
            return [_whole(text)], "no_grammar"
    else:
        return [_whole(text)], "no_grammar"
    if not units:
        return [_whole(text)], "no_definitions"
    return units, None


def benchmark_parts(code: str, language: str | None) -> list[Unit]:
    """A benchmark solution as the scan compares it: whole (name None, its
    module-level lines included), then each top-level definition, when
    there is more than one or the solution has lines outside them other
    than imports and comments; a solution that does not split is whole alone."""
    whole = _whole(code)
    units, why = split_units(code, language, "function")
    if why:
        return [whole]
    inside = {n for u in units for n in range(u.start_line, u.end_line + 1)}
    outside = [
        line
        for n, line in enumerate(code.splitlines(), 1)
        if n not in inside
        and line.strip()
        and not line.lstrip().startswith(("import ", "from ", "#", "//", "package "))
    ]
    return [whole] + units if len(units) > 1 or outside else [whole]


def _bounded_lines(handle: io.TextIOBase, limit: int) -> Iterator[tuple[int, str]]:
    """The lines of a text handle with their numbers, read ``limit`` characters
    at most at a time, so a file with no line breaks is never held whole; a
    long line comes as several pieces with the same number."""
    lineno, after_cr = 1, False
    while piece := handle.readline(limit):
        if after_cr and piece.startswith("\n"):  # a "\r\n" the limit split: one line break
            lineno -= 1
        yield lineno, piece
        if piece.endswith(("\n", "\r")):
            lineno += 1
        after_cr = piece.endswith("\r")


def _cut(piece: str, half: int) -> Iterator[str]:
    """``piece`` in parts of at most ``half`` UTF-8 bytes, cut between characters."""
    data = piece.encode("utf-8")
    while len(data) > half:
        cut = half
        while cut > 0 and data[cut] & 0xC0 == 0x80:  # a UTF-8 continuation byte: not a character boundary
            cut -= 1
        if cut == 0:  # a character longer than half a window: it goes whole
            cut = 1
            while cut < len(data) and data[cut] & 0xC0 == 0x80:
                cut += 1
        yield data[:cut].decode("utf-8")
        data = data[cut:]
    yield data.decode("utf-8")


class _Windower:
    """Windows of at most ``max_bytes`` (UTF-8), each two consecutive
    half-windows, so consecutive windows overlap by half, made from lines fed
    one at a time: only two half-windows are ever held."""

    def __init__(self, max_bytes: int, name: str | None = None):
        self.half = max(1, max_bytes // 2)
        self.name = name
        self.previous: tuple[str, int, int] | None = None  # (text, first line, last line) of the last full half
        self.parts: list[str] = []
        self.size = self.start = self.end = 0

    def add(self, lineno: int, line: str) -> Iterator[Unit]:
        for part in _cut(line, self.half):
            n = len(part.encode("utf-8"))
            if self.parts and self.size + n > self.half:
                current = ("".join(self.parts), self.start, self.end)
                if self.previous is not None:
                    yield Unit(self.previous[0] + current[0], self.name, self.previous[1], current[2])
                self.previous, self.parts, self.size = current, [], 0
            if not self.parts:
                self.start = lineno
            self.parts.append(part)
            self.size += n
            self.end = lineno

    def close(self) -> Iterator[Unit]:
        current = ("".join(self.parts), self.start, self.end)
        if self.previous is None:
            yield Unit(current[0], self.name, current[1], current[2])
        else:
            yield Unit(self.previous[0] + current[0], self.name, self.previous[1], current[2])


def windows(unit: Unit, max_bytes: int) -> list[Unit]:
    """Cut a unit longer than ``max_bytes`` (UTF-8) into windows of at most
    ``max_bytes``, each made of two consecutive half-windows, so consecutive
    windows overlap by half. Lines longer than half a window are cut too."""
    windower = _Windower(max_bytes, unit.name)
    out = []
    for lineno, line in _bounded_lines(io.StringIO(unit.text, newline=""), max(1, max_bytes // 2)):
        out += windower.add(lineno + unit.start_line - 1, line)
    return out + list(windower.close())


_CONTINUATIONS = ("else", "elif", "except", "finally")


def _opens_statement(line: str) -> bool:
    """Whether a line at column 0 opens a top-level statement: it starts with
    a name or a decorator and is not the next clause of a compound statement."""
    word = line.split(None, 1)[0].rstrip(":") if line.strip() else ""
    return (line[:1].isidentifier() or line.startswith("@")) and word not in _CONTINUATIONS


def _segments(
    lines: Iterable[tuple[int, str]], language: str | None, granularity: str, max_bytes: int
) -> Iterator[tuple[list[Unit], bool]]:
    """Pieces of a huge document of at most ``max_bytes``: (units, True) for
    a run of whole top-level Python statements, to be split as a document
    is; (windows, False) for what is cut into windows: a statement longer
    than ``max_bytes`` (a huge function or literal), and everything in a
    language or granularity that cannot be cut between statements. A Python
    segment ends before a line that opens a top-level statement (column 0, a
    name or a decorator) once it holds half of ``max_bytes``, or, when a
    statement outgrows ``max_bytes``, before that statement. Such a line
    inside a multi-line string makes its segments fail to parse: each is then
    compared whole."""
    by_statement = language == "python" and granularity == "function"

    def parsed(held: list[tuple[int, str]]) -> tuple[list[Unit], bool]:
        return [_whole("".join(p for _, p in held), held[0][0])], True

    segment: list[tuple[int, str]] = []
    size = block = 0  # block: where in the segment the last statement opens
    windower = _Windower(max_bytes) if not by_statement else None
    line_start, after_decorator = True, False
    for lineno, piece in lines:
        opens = by_statement and line_start and _opens_statement(piece) and not after_decorator
        if line_start:
            after_decorator = piece.startswith("@")
        line_start = piece.endswith(("\n", "\r"))
        if opens and windower is not None:  # the end of a statement longer than max_bytes
            yield list(windower.close()), False
            windower = None
        elif opens and size >= max_bytes // 2:
            yield parsed(segment)
            segment, size = [], 0
        if opens:
            block = len(segment)
        if windower is not None:
            yield list(windower.add(lineno, piece)), False
            continue
        segment.append((lineno, piece))
        size += len(piece.encode("utf-8"))
        if (
            size > max_bytes
        ):  # inside a statement longer than max_bytes: the statements before it are parsed, it is windowed
            if block:
                yield parsed(segment[:block])
            windower = _Windower(max_bytes)
            yield [w for held in segment[block:] for w in windower.add(*held)], False
            segment, size, block = [], 0, 0
    if windower is not None:
        yield list(windower.close()), False
    elif segment:
        yield parsed(segment)


def huge_units(source: str | Path, language: str | None, granularity: str, max_bytes: int) -> Iterator[Unit]:
    """The units of a document above ``max_bytes`` (a text, or a UTF-8 file
    read from disk as needed), never holding or parsing more than about
    ``max_bytes`` of it, where parsing the whole of a 10 MB file takes
    gigabytes: Python at ``function`` granularity is cut between top-level
    statements into segments that are split as documents are
    (:func:`_segments`); the rest is cut into
    overlapping windows, any piece of code up to half a window long lying
    entirely inside one."""
    limit = max(1, max_bytes // 2)
    with (
        io.StringIO(source, newline="") if isinstance(source, str) else source.open(encoding="utf-8", newline="")
    ) as handle:
        for units, parse in _segments(_bounded_lines(handle, limit), language, granularity, max_bytes):
            if not parse:
                yield from units
                continue
            segment = units[0]
            split, _ = split_units(segment.text, language, granularity)
            offset = segment.start_line - 1
            yield from (Unit(u.text, u.name, u.start_line + offset, u.end_line + offset) for u in split)


def document_units(text, lang: str | None, granularity: str, max_bytes: int) -> tuple[Iterable[Unit], str | None]:
    """The units a scanned document (its text, or a :class:`~leaktrace.leakage.sources.LargeFile`)
    is compared as, and why it was not split into functions. A document above
    ``max_bytes`` (only there under ``huge: chunk``) is never parsed whole,
    which for a 10 MB file takes gigabytes: it is split piece by piece (reason
    ``huge``, see :func:`huge_units`), read from disk as it goes when it is a LargeFile."""
    from leaktrace.leakage.sources import LargeFile

    if isinstance(text, LargeFile):
        return huge_units(text.path, lang, granularity, max_bytes), "huge"
    if len(text.encode("utf-8")) > max_bytes:
        return huge_units(text, lang, granularity, max_bytes), "huge"
    return split_units(text, lang, granularity)
