"""Mutations T2a and T2b of Java and C++ (HumanEval-X's languages): declared names
renamed on tree-sitter's syntax tree.

Renamable are the names the program declares as a parameter (of a function,
method, lambda or catch), a local or global variable (a declarator, a
for-each or range-for variable, a try resource) or a function (a method or
free function other than ``main``, the entry point and an ``@Override``),
each written as an ``identifier`` node. Every occurrence of a renamable name
is renamed, by its text, in one pass; member names (after ``.``, ``->``,
``::``) are other names and stay. A name is left alone where renaming it by
text could reach something else: a field, a class, an enumerator or a macro
of the same name; a name on a preprocessor line or in a ``using``; a variable
that is also called (``count(...)`` may be ``std::count``); a function also
reached through an object (``obj.helper()``); a label; a keyword; a name the
tests use (`protected`). Renaming by text rather than by binding is sound
under these rules because every new name is fresh: used nowhere in the
program or its tests, and no keyword or standard-library name.

The new names come from the Python mutations' proposers (`renaming`): T2a's
synonyms with their fallbacks, T2b's 8 random letters.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Collection
from dataclasses import dataclass

import tree_sitter
import tree_sitter_cpp
import tree_sitter_java

from leaktrace.languages import C_KEYWORDS
from leaktrace.mutate.cfamily import LIBRARY

LANGUAGES = ("java", "cpp")
_ALIASES = {"c++": "cpp"}
_GRAMMARS = {"java": tree_sitter_java, "cpp": tree_sitter_cpp}
# Keywords and alternative tokens of C++ the shared keyword list lacks.
CPP_RESERVED = frozenset(
    "and and_eq bitand bitor compl not not_eq or or_eq xor xor_eq alignas alignof char8_t char16_t char32_t "
    "wchar_t concept consteval constexpr constinit const_cast decltype dynamic_cast explicit export friend "
    "mutable noexcept operator private protected public reinterpret_cast requires static_assert static_cast "
    "thread_local typeid co_await co_return co_yield main int long short char float double".split()
)
RENAMABLE_KINDS = ("parameter", "local", "global", "function")
_DRAWS_PER_NAME = 20
_WORD = re.compile(r"[A-Za-z_]\w*")
_DECLARATOR_WRAPPERS = (
    "pointer_declarator",
    "reference_declarator",
    "array_declarator",
    "init_declarator",
    "parenthesized_declarator",
    "attributed_declarator",
)


def language_of(name: str) -> str:
    language = _ALIASES.get(name.lower(), name.lower())
    if language not in LANGUAGES:
        raise ValueError(f"tree mutations take {', '.join(LANGUAGES)}, not {name!r}")
    return language


@functools.cache
def parser(language: str) -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(_GRAMMARS[language_of(language)].language()))


def parse(code: str, language: str) -> tree_sitter.Tree:
    """The syntax tree of `code`; ValueError where tree-sitter finds a syntax error."""
    tree = parser(language).parse(code.encode("utf-8"))
    if tree.root_node.has_error:
        raise ValueError(f"the {language} code does not parse (tree-sitter reports an error)")
    return tree


def walk(node: tree_sitter.Node):
    yield node
    for child in node.children:
        yield from walk(child)


def field(node: tree_sitter.Node) -> str | None:
    """The field name under which `node` hangs from its parent."""
    parent = node.parent
    if parent is None:
        return None
    for index, child in enumerate(parent.children):
        if child.id == node.id:
            return parent.field_name_for_child(index)
    return None


def text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8")


def inside(node: tree_sitter.Node, types: Collection[str]) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type in types:
            return True
        parent = parent.parent
    return False


def _declared_identifier(node: tree_sitter.Node | None) -> tree_sitter.Node | None:
    """The identifier a C++ declarator declares (through pointers, references, arrays, initialisers)."""
    while node is not None and node.type in _DECLARATOR_WRAPPERS:
        node = node.child_by_field_name("declarator") or next(
            (c for c in node.named_children if c.type != "attribute_declaration"), None
        )
    return node if node is not None and node.type == "identifier" else None


def _java_declarations(root: tree_sitter.Node) -> list[tuple[tree_sitter.Node, str]]:
    found = []
    for node in walk(root):
        name = node.child_by_field_name("name")
        if node.type in ("formal_parameter", "spread_parameter", "catch_formal_parameter") and name is not None:
            found.append((name, "parameter"))
        elif node.type == "variable_declarator" and name is not None:
            found.append(
                (name, "field" if node.parent.type in ("field_declaration", "constant_declaration") else "local")
            )
        elif node.type in ("enhanced_for_statement", "resource") and name is not None:
            found.append((name, "local"))
        elif node.type == "lambda_expression":
            parameters = node.child_by_field_name("parameters")
            if parameters is not None and parameters.type == "identifier":
                found.append((parameters, "parameter"))
            elif parameters is not None and parameters.type == "inferred_parameters":
                found += [(c, "parameter") for c in parameters.named_children if c.type == "identifier"]
        elif node.type == "method_declaration" and name is not None:
            modifiers = next((c for c in node.children if c.type == "modifiers"), None)
            override = modifiers is not None and "@Override" in text(modifiers)
            in_anonymous = (
                node.parent is not None
                and node.parent.parent is not None
                and node.parent.parent.type == "object_creation_expression"
            )
            found.append((name, "overridden" if override or in_anonymous else "function"))
        elif (
            node.type
            in (
                "class_declaration",
                "interface_declaration",
                "enum_declaration",
                "record_declaration",
                "constructor_declaration",
            )
            and name is not None
        ):
            found.append((name, "class"))
        elif node.type == "enum_constant" and name is not None:
            found.append((name, "constant"))
    return found


def _cpp_declarations(root: tree_sitter.Node) -> list[tuple[tree_sitter.Node, str]]:
    found = []
    for node in walk(root):
        if node.type in ("parameter_declaration", "optional_parameter_declaration"):
            identifier = _declared_identifier(node.child_by_field_name("declarator"))
            if identifier is not None:
                found.append((identifier, "parameter"))
        elif node.type in ("function_definition", "declaration", "field_declaration"):
            for declarator in node.children_by_field_name("declarator"):
                if declarator.type == "function_declarator":
                    identifier = _declared_identifier(declarator.child_by_field_name("declarator"))
                    if identifier is not None:
                        found.append((identifier, "function" if node.type != "field_declaration" else "field"))
                    continue
                identifier = _declared_identifier(declarator)
                if identifier is not None:
                    local = inside(node, ("function_definition", "lambda_expression"))
                    found.append(
                        (identifier, "field" if node.type == "field_declaration" else "local" if local else "global")
                    )
        elif node.type == "for_range_loop":
            identifier = _declared_identifier(node.child_by_field_name("declarator"))
            if identifier is not None:
                found.append((identifier, "local"))
        elif node.type == "enumerator":
            found.append((node.child_by_field_name("name"), "constant"))
        elif node.type in ("preproc_def", "preproc_function_def"):
            found.append((node.child_by_field_name("name"), "macro"))
    return [(n, kind) for n, kind in found if n is not None]


def _is_member_position(node: tree_sitter.Node, language: str) -> bool:
    """An identifier that names a member, not a variable or function of the program."""
    parent = node.parent
    if language == "java":
        return (
            (parent.type == "field_access" and field(node) == "field")
            or parent.type in ("scoped_identifier", "method_reference", "marker_annotation", "annotation")
            or (parent.type == "method_invocation" and field(node) == "name" and parent.child_by_field_name("object"))
        )
    return parent.type in ("qualified_identifier", "using_declaration", "namespace_definition")


def _is_call_target(node: tree_sitter.Node, language: str) -> bool:
    parent = node.parent
    if language == "java":
        return parent.type == "method_invocation" and field(node) == "name" and not parent.child_by_field_name("object")
    return parent.type == "call_expression" and field(node) == "function"


@dataclass(frozen=True)
class Renamable:
    names: dict[str, str]  # name -> kind, in order of first declaration
    occurrences: dict[str, list[tuple[int, int]]]  # name -> byte spans to rewrite


def renamable(code: str, language: str, protected: Collection[str] = ()) -> Renamable:
    """The names a Type-2 mutation of `code` renames, their kinds, and where each occurs."""
    language = language_of(language)
    root = parse(code, language).root_node
    declared = _java_declarations(root) if language == "java" else _cpp_declarations(root)
    kinds: dict[str, set[str]] = {}
    first_kind: dict[str, str] = {}
    for node, kind in declared:
        kinds.setdefault(text(node), set()).add(kind)
        first_kind.setdefault(text(node), kind)
    banned = set(protected) | C_KEYWORDS | CPP_RESERVED | LIBRARY | {"main"}
    banned |= {name for name, kind in kinds.items() if len(kind) > 1 or not kind <= set(RENAMABLE_KINDS)}
    occurrences: dict[str, list[tuple[int, int]]] = {}
    for node in walk(root):
        if node.type.startswith("preproc") or node.type in ("using_declaration", "alias_declaration"):
            banned |= set(_WORD.findall(text(node)))
        if node.type in ("labeled_statement", "break_statement", "continue_statement") and language == "java":
            banned |= {text(c) for c in node.named_children if c.type == "identifier"}
        if node.type != "identifier" or text(node) not in kinds:
            continue
        name = text(node)
        if _is_member_position(node, language):
            if language == "java" and node.parent.type == "method_invocation" and "function" in kinds[name]:
                banned.add(name)  # a method reached through an object may be another class's
            continue
        if _is_call_target(node, language) and "function" not in kinds[name]:
            banned.add(name)
        occurrences.setdefault(name, []).append((node.start_byte, node.end_byte))
    names = {name: first_kind[name] for name in first_kind if name in occurrences and name not in banned}
    return Renamable(names, {name: occurrences[name] for name in names})


def rename(
    code: str, language: str, new_name, rng: random.Random, protected: Collection[str] = ()
) -> tuple[str, dict[str, str], dict[str, str]]:
    """(`code` with each renamable name replaced everywhere, renames, old name -> kind). New names
    come from `new_name` (a `NameProposer`-like: ``draw(name, rng)``) and are fresh identifiers."""
    found = renamable(code, language, protected)
    taken = set(_WORD.findall(code)) | set(protected) | C_KEYWORDS | CPP_RESERVED | LIBRARY
    renames: dict[str, str] = {}
    for name in found.names:
        for _ in range(_DRAWS_PER_NAME):
            new = new_name.draw(name, rng)
            if new != name and re.fullmatch(r"[A-Za-z_]\w*", new) and new not in taken and not new.startswith("__"):
                renames[name] = new
                taken.add(new)
                break
    data = code.encode("utf-8")
    edits = sorted((span, renames[name].encode("utf-8")) for name in renames for span in found.occurrences[name])
    out, position = [], 0
    for (start, end), replacement in edits:
        out += [data[position:start], replacement]
        position = end
    out.append(data[position:])
    return b"".join(out).decode("utf-8"), renames, {name: found.names[name] for name in renames}
