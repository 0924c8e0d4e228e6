"""Granularity: what a corpus document is compared as.

``file``: the whole document. ``function``: its top-level functions and
classes (Python through ``ast``; Java and JavaScript through tree-sitter when
the grammar package is importable); a document that does not parse, has no
top-level definitions, or is in a language without a grammar is compared
whole, and the reason is counted. Huge documents are cut into overlapping
windows (:func:`windows`) so that nothing is dropped: any piece of code up to
half a window long lies entirely inside one window.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import PurePosixPath

EXTENSIONS = {
    ".py": "python", ".pyi": "python", ".java": "java", ".js": "javascript", ".mjs": "javascript",
    ".cjs": "javascript", ".jsx": "javascript", ".ts": "typescript", ".tsx": "typescript", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".go": "go", ".rs": "rust", ".cs": "csharp",
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


def _whole(text: str) -> Unit:
    return Unit(text, None, 1, text.count("\n") + 1)


def _python_units(text: str) -> list[Unit] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    lines = text.splitlines(keepends=True)
    units = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            units.append(Unit("".join(lines[start - 1 : node.end_lineno]), node.name, start, node.end_lineno))
    return units


_TS_TOP_LEVEL = {
    "java": {"class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
             "annotation_type_declaration", "method_declaration"},
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
                c.type == "variable_declarator" and c.child_by_field_name("value") is not None
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
            units.append(Unit(data[node.start_byte : node.end_byte].decode("utf-8"), _ts_name(target),
                              node.start_point[0] + 1, node.end_point[0] + 1))
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


def windows(unit: Unit, max_bytes: int) -> list[Unit]:
    """Cut a unit longer than ``max_bytes`` (UTF-8) into windows of at most
    ``max_bytes``, each made of two consecutive half-windows, so consecutive
    windows overlap by half. Lines longer than half a window are cut too."""
    half = max(1, max_bytes // 2)
    pieces: list[tuple[str, int]] = []  # (text, line number)
    for lineno, line in enumerate(unit.text.splitlines(keepends=True), start=unit.start_line):
        while len(line.encode("utf-8")) > half:
            cut = half
            while len(line[:cut].encode("utf-8")) > half:
                cut = max(1, cut * 3 // 4)
            pieces.append((line[:cut], lineno))
            line = line[cut:]
        pieces.append((line, lineno))
    halves: list[list[tuple[str, int]]] = [[]]
    size = 0
    for piece in pieces:
        n = len(piece[0].encode("utf-8"))
        if halves[-1] and size + n > half:
            halves.append([])
            size = 0
        halves[-1].append(piece)
        size += n
    out = []
    for i in range(max(1, len(halves) - 1)):
        group = halves[i] + (halves[i + 1] if i + 1 < len(halves) else [])
        out.append(Unit("".join(p[0] for p in group), unit.name, group[0][1], group[-1][1]))
    return out
