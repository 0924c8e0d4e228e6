"""Mutation T3 of Java and C++: semantics-preserving statement rewrites up to a
target similarity, on tree-sitter's syntax tree.

The catalogue follows CodeSnitch's kinds (if, assignment, logging, try,
equality patterns), each rewrite with the conditions that keep it sound in
both languages:

- ``swap_if_else``: ``if (c) A else B`` -> ``if (!(c)) B else A`` (not an
  ``else if`` chain, nor a C++ condition with a declaration or initialiser);
- ``expand_augmented`` / ``contract_augmented``: ``x += 1;`` <-> ``x = x + 1;``
  and ``increment_to_compound``: ``i++`` -> ``i += 1`` (as a statement or a
  for update), only for a variable declared with an arithmetic type (Java's
  ``b = b + 1`` does not compile for a byte, char or short; a C++ iterator
  has no ``+= 1`` in general);
- ``add_logging``: after an assignment, Java logs the value at level FINE
  through java.util.logging (below the default level: nothing is written),
  C++ writes it to standard error with ``fprintf`` (``#include <cstdio>``
  added where missing; not inside a loop, so the output stays small);
  validation compares standard output only;
- ``wrap_in_try``: a statement -> ``try { statement } catch (...) { throw; }``
  (Java: ``catch (RuntimeException e) { throw e; }``, checked exceptions
  cannot pass through there unchanged, so only unchecked ones are caught);
- ``negate_equality``: ``a == b`` -> ``!(a != b)`` and the reverse (C++: with a
  literal operand, so both operators exist); ``mirror_comparison``:
  ``a < b`` -> ``b > a`` for names and literals;
- ``return_through_variable``: ``return e;`` -> ``T name = e; return name;``
  with T the function's declared return type (never ``auto``, ``void``, a
  reference or a lambda's).

Edits are made on the text at the nodes' byte spans, so every line a rewrite
does not touch keeps its exact text. Rewrites are drawn one at a time from a
seeded stream as in the Python T3 (`statements`): a rewrite is kept only if
the result parses and lowers the similarity without passing more than one
line below the target; the walk stops within one line of the target, or when
no rewrite is left (reported). Whether the program still compiles and passes
its tests is checked afterwards, in the sandbox (`mutate.compiled`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

import tree_sitter

from leaktrace.mutate.statements import FRESH_NAMES, StatementMutation, _drawn_order, line_similarity
from leaktrace.mutate.tree_renaming import field, language_of, parser, text, walk

_MAX_STEPS = 200
_JAVA_ARITHMETIC = frozenset({"int", "long", "float", "double"})
_CPP_ARITHMETIC = re.compile(
    r"^(const\s+)?((unsigned|signed|short|long|int|char|bool|float|double|size_t|"
    r"int\d+_t|uint\d+_t|std::size_t)\s*)+$"
)
_LOOPS = ("for_statement", "while_statement", "do_statement", "enhanced_for_statement", "for_range_loop")
_FUNCTIONS = ("method_declaration", "function_definition", "lambda_expression", "constructor_declaration")
_LITERALS = (
    "number_literal",
    "char_literal",
    "string_literal",
    "true",
    "false",
    "nullptr",
    "raw_string_literal",
    "decimal_integer_literal",
    "decimal_floating_point_literal",
    "character_literal",
    "null_literal",
    "hex_integer_literal",
)


@dataclass
class Program:
    """A program being rewritten: its text, tree, language and the facts rewrites check."""

    code: str
    language: str
    tree: tree_sitter.Tree
    taken: set[str]  # names a new variable may not take

    @property
    def data(self) -> bytes:
        return self.code.encode("utf-8")

    def fresh_name(self) -> str:
        candidates = [*FRESH_NAMES, *(f"{FRESH_NAMES[0]}{k}" for k in range(2, 100))]
        return next(name for name in candidates if name not in self.taken)


Edit = tuple[int, int, str]  # replace bytes [start, end) with the text


def _span(node: tree_sitter.Node, replacement: str) -> list[Edit]:
    return [(node.start_byte, node.end_byte, replacement)]


def _declared_type(program: Program, name: str) -> str | None:
    """The declared type of the variable `name` (its first declaration), as written."""
    for node in walk(program.tree.root_node):
        if program.language == "java" and node.type in ("local_variable_declaration", "field_declaration"):
            if any(
                d.child_by_field_name("name") is not None and text(d.child_by_field_name("name")) == name
                for d in node.children_by_field_name("declarator")
            ):
                return text(node.child_by_field_name("type"))
        elif program.language == "java" and node.type == "formal_parameter":
            if text(node.child_by_field_name("name")) == name:
                return text(node.child_by_field_name("type"))
        elif program.language == "cpp" and node.type in ("declaration", "parameter_declaration"):
            for declarator in node.children_by_field_name("declarator"):
                target = (
                    declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" else declarator
                )
                if target is not None and target.type == "identifier" and text(target) == name:
                    qualifiers = [text(c) for c in node.children if c.type == "type_qualifier"]
                    return " ".join([*qualifiers, text(node.child_by_field_name("type"))])
    return None


def _arithmetic(program: Program, name: str) -> bool:
    declared = _declared_type(program, name)
    if declared is None:
        return False
    if program.language == "java":
        return declared in _JAVA_ARITHMETIC
    return bool(_CPP_ARITHMETIC.match(declared)) and "char" not in declared and "bool" not in declared


def _in_loop(node: tree_sitter.Node) -> bool:
    parent = node.parent
    while parent is not None and parent.type not in _FUNCTIONS:
        if parent.type in _LOOPS:
            return True
        parent = parent.parent
    return False


def _enclosing_function(node: tree_sitter.Node) -> tree_sitter.Node | None:
    parent = node.parent
    while parent is not None and parent.type not in _FUNCTIONS:
        parent = parent.parent
    return parent


def _in_block(node: tree_sitter.Node) -> bool:
    """A statement of a braced block (so it may become two statements)."""
    return node.parent is not None and node.parent.type in ("block", "compound_statement")


def _indent(program: Program, node: tree_sitter.Node) -> str:
    line_start = program.data.rfind(b"\n", 0, node.start_byte) + 1
    prefix = program.data[line_start : node.start_byte].decode("utf-8")
    return prefix if not prefix.strip() else None


def _assignment(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The assignment of an expression statement ``x op= e;``, its left side a plain name."""
    if node.type != "expression_statement" or not node.named_children:
        return None
    expression = node.named_children[0]
    if expression.type != "assignment_expression":
        return None
    left = expression.child_by_field_name("left")
    return expression if left is not None and left.type == "identifier" else None


def _operator(node: tree_sitter.Node) -> str:
    operator = node.child_by_field_name("operator")
    if operator is not None:
        return text(operator)
    return next(text(c) for c in node.children if not c.is_named)


# ---------------------------------------------------------------------------
# The catalogue: each returns the edits of one rewrite at `node`, or None


def swap_if_else(node, program):
    if node.type != "if_statement":
        return None
    condition, consequence = node.child_by_field_name("condition"), node.child_by_field_name("consequence")
    alternative = node.child_by_field_name("alternative")
    if condition is None or consequence is None or alternative is None:
        return None
    if alternative.type == "else_clause":  # C++
        alternative = alternative.named_children[0] if alternative.named_children else None
    if alternative is None or alternative.type == "if_statement" or (node.parent and node.parent.type == "else_clause"):
        return None
    if program.language == "cpp":
        if condition.child_by_field_name("initializer") is not None:
            return None
        value = condition.child_by_field_name("value")
        if value is None or value.type == "declaration" or any(c.type == "constexpr" for c in node.children):
            return None
    else:
        value = condition.named_children[0] if condition.named_children else None
        if value is None:
            return None
    data = program.data

    def braced(statement):
        body = text(statement)
        return body if statement.type in ("block", "compound_statement") else "{ " + body + " }"

    new = (
        data[node.start_byte : condition.start_byte].decode()
        + "(!("
        + text(value)
        + "))"
        + data[condition.end_byte : consequence.start_byte].decode()
        + braced(alternative)
        + data[consequence.end_byte : alternative.start_byte].decode()
        + braced(consequence)
    )
    return _span(node, new)


_COMPOUND = {"+=": "+", "-=": "-", "*=": "*"}
_LOGGED = ("java.util.logging.", "fprintf(stderr")  # a line add_logging wrote


def expand_augmented(node, program):
    """`x += 1;` -> `x = x + 1;` (a number operand, an arithmetic variable)."""
    assignment = _assignment(node)
    if assignment is None or _operator(assignment) not in _COMPOUND:
        return None
    left, right = assignment.child_by_field_name("left"), assignment.child_by_field_name("right")
    if (
        "number_literal" not in right.type
        and "integer_literal" not in right.type
        or not _arithmetic(program, text(left))
    ):
        return None
    return _span(assignment, f"{text(left)} = {text(left)} {_COMPOUND[_operator(assignment)]} {text(right)}")


def contract_augmented(node, program):
    """`x = x + 1;` -> `x += 1;`."""
    assignment = _assignment(node)
    if assignment is None or _operator(assignment) != "=":
        return None
    left, right = assignment.child_by_field_name("left"), assignment.child_by_field_name("right")
    if right.type != "binary_expression" or not _arithmetic(program, text(left)):
        return None
    first, second = right.child_by_field_name("left"), right.child_by_field_name("right")
    operator = _operator(right)
    if (
        operator not in ("+", "-", "*")
        or text(first) != text(left)
        or ("number_literal" not in second.type and "integer_literal" not in second.type)
    ):
        return None
    return _span(assignment, f"{text(left)} {operator}= {text(second)}")


def increment_to_compound(node, program):
    """`i++` / `++i` (a statement, or a for loop's update) -> `i += 1`."""
    if node.type != "update_expression" or node.parent is None:
        return None
    if not (node.parent.type == "expression_statement" or field(node) == "update"):
        return None
    argument = node.child_by_field_name("argument") or next((c for c in node.named_children), None)
    if argument is None or argument.type != "identifier" or not _arithmetic(program, text(argument)):
        return None
    operator = "+=" if "++" in text(node) else "-="
    return _span(node, f"{text(argument)} {operator} 1")


def add_logging(node, program):
    """After `x = e;` or `T x = e;` in a block, the value logged (see the module's docstring)."""
    if not _in_block(node):
        return None
    name = None
    if _assignment(node) is not None:
        name = text(_assignment(node).child_by_field_name("left"))
    elif (
        node.type in ("local_variable_declaration", "declaration")
        and len(node.children_by_field_name("declarator")) == 1
    ):
        declarator = node.child_by_field_name("declarator")
        target = declarator.child_by_field_name("name" if program.language == "java" else "declarator")
        if declarator.child_by_field_name("value") is not None and target is not None and target.type == "identifier":
            name = text(target)
    indent = _indent(program, node)
    following = node.next_named_sibling
    if name is None or indent is None or (following is not None and text(following).startswith(_LOGGED)):
        return None
    if program.language == "java":
        line = f'java.util.logging.Logger.getGlobal().log(java.util.logging.Level.FINE, "{name} = {{0}}", {name});'
        return [(node.end_byte, node.end_byte, "\n" + indent + line)]
    if _in_loop(node) or not _arithmetic(program, name):
        return None
    line = f'fprintf(stderr, "{name} = %g\\n", static_cast<double>({name}));'
    edits = [(node.end_byte, node.end_byte, "\n" + indent + line)]
    if not re.search(rb"#\s*include\s*[<\"](cstdio|stdio\.h|bits/stdc\+\+\.h)[>\"]", program.data):
        edits.insert(0, (0, 0, "#include <cstdio>\n"))
    return edits


def wrap_in_try(node, program):
    """A statement of a block -> the same inside a try that rethrows what it catches (never nested)."""
    if node.type not in ("expression_statement", "return_statement") or not _in_block(node):
        return None
    parent = node.parent
    while parent is not None and parent.type not in _FUNCTIONS:
        if parent.type in (
            "try_statement",
            "catch_clause",
            "switch_statement",
            "switch_expression",
            "switch_block",
            "case_statement",
        ):
            return None
        parent = parent.parent
    if program.language == "java":
        name = next(
            n for n in ("error", "exception", "thrown", *(f"error{k}" for k in range(2, 50))) if n not in program.taken
        )
        return _span(node, f"try {{ {text(node)} }} catch (RuntimeException {name}) {{ throw {name}; }}")
    return _span(node, f"try {{ {text(node)} }} catch (...) {{ throw; }}")


def negate_equality(node, program):
    """`a == b` -> `!(a != b)`, `a != b` -> `!(a == b)`."""
    if node.type != "binary_expression" or _operator(node) not in ("==", "!="):
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if node.parent is not None and node.parent.type == "binary_expression" and _operator(node.parent) in ("==", "!="):
        return None
    if program.language == "cpp" and left.type not in _LITERALS and right.type not in _LITERALS:
        return None
    flipped = "!=" if _operator(node) == "==" else "=="
    return _span(node, f"!({text(left)} {flipped} {text(right)})")


_MIRROR = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!="}


def mirror_comparison(node, program):
    """`a < b` -> `b > a`, for names and literals."""
    if node.type != "binary_expression" or _operator(node) not in _MIRROR:
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    simple = ("identifier", *_LITERALS)
    if left.type not in simple or right.type not in simple:
        return None
    return _span(node, f"{text(right)} {_MIRROR[_operator(node)]} {text(left)}")


def return_through_variable(node, program):
    """`return e;` -> `T name = e;` then `return name;` with T the declared return type."""
    if node.type != "return_statement" or not node.named_children or not _in_block(node):
        return None
    function = _enclosing_function(node)
    if function is None or function.type not in ("method_declaration", "function_definition"):
        return None
    declared = function.child_by_field_name("type")
    if program.language == "cpp" and (
        function.child_by_field_name("declarator") is None
        or function.child_by_field_name("declarator").type != "function_declarator"
    ):
        return None  # a pointer or reference return, or a qualified declarator
    if (
        declared is None
        or text(declared) in ("void", "auto")
        or "auto" in text(declared)
        or "decltype" in text(declared)
    ):
        return None
    indent = _indent(program, node)
    value = node.named_children[0]
    if indent is None or value.type == "identifier":
        return None
    name = program.fresh_name()
    qualifiers = " ".join(text(c) for c in function.children if c.type == "type_qualifier")
    kind = f"{qualifiers} {text(declared)}".strip()
    return _span(node, f"{kind} {name} = {text(value)};\n{indent}return {name};")


@dataclass(frozen=True)
class TreeRewrite:
    name: str
    apply: Callable[[tree_sitter.Node, Program], list[Edit] | None]


CATALOGUE = (
    TreeRewrite("swap_if_else", swap_if_else),
    TreeRewrite("expand_augmented", expand_augmented),
    TreeRewrite("contract_augmented", contract_augmented),
    TreeRewrite("increment_to_compound", increment_to_compound),
    TreeRewrite("add_logging", add_logging),
    TreeRewrite("wrap_in_try", wrap_in_try),
    TreeRewrite("negate_equality", negate_equality),
    TreeRewrite("mirror_comparison", mirror_comparison),
    TreeRewrite("return_through_variable", return_through_variable),
)


def _apply(code: str, edits: list[Edit]) -> str:
    data = code.encode("utf-8")
    for start, end, replacement in sorted(edits, reverse=True):
        data = data[:start] + replacement.encode("utf-8") + data[end:]
    return data.decode("utf-8")


def _program(code: str, language: str, protected: Collection[str]) -> Program:
    tree = parser(language).parse(code.encode("utf-8"))
    return Program(code, language, tree, set(re.findall(r"[A-Za-z_]\w*", code)) | set(protected))


def sites(program: Program, rewrites: tuple[TreeRewrite, ...] = CATALOGUE) -> list[tuple[str, list[Edit]]]:
    """Every rewrite the catalogue can make in `program`, as (name, edits)."""
    found = []
    for node in walk(program.tree.root_node):
        for rewrite in rewrites:
            edits = rewrite.apply(node, program)
            if edits:
                found.append((rewrite.name, edits))
    return found


def rewrite_statements(
    code: str,
    language: str,
    target: float,
    rng: random.Random,
    protected: Collection[str] = (),
    rewrites: tuple[TreeRewrite, ...] = CATALOGUE,
) -> StatementMutation:
    """Rewrites drawn from `rng` until the similarity to `code` is within one line of `target`.
    `protected` names (the tests') are never taken by a new variable."""
    if not 0 <= target <= 1:
        raise ValueError(f"target similarity must be in [0, 1], got {target}")
    language = language_of(language)
    if parser(language).parse(code.encode("utf-8")).root_node.has_error:
        raise ValueError(f"the {language} code does not parse (tree-sitter reports an error)")
    tolerance = 1 / max(1, len(code.splitlines()))
    current, similarity, applied = code, 1.0, []
    for _ in range(_MAX_STEPS):
        if similarity <= target:
            break
        program = _program(current, language, protected)
        found = sites(program, rewrites)
        for index in _drawn_order([name for name, _ in found], rng):
            name, edits = found[index]
            candidate = _apply(current, edits)
            new = line_similarity(code, candidate)
            if (
                new < similarity
                and new >= target - tolerance
                and not parser(language).parse(candidate.encode("utf-8")).root_node.has_error
            ):
                current, similarity = candidate, new
                applied.append(name)
                break
        else:
            break
    return StatementMutation(
        text=current, similarity=similarity, reached=abs(similarity - target) <= tolerance, rewrites=tuple(applied)
    )
