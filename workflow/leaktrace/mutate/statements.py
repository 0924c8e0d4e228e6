"""Mutation T3 (Type-3 clones): semantics-preserving statement rewrites up to a target similarity.

CodeSnitch rewrites statements (if forms, assignments, logging, try wrappers,
equality patterns) until the share of unchanged lines falls to a target (0.9,
0.7, 0.5). Here every rewrite comes from a catalogue (`CATALOGUE`) of patterns
that keep the program's behaviour for the builtin types, each with the
conditions that make it sound: a comprehension becomes a loop only where its
loop variable is used nowhere else (a loop would leak it), `set()` and
`range()` only where the program never rebinds those names, a new variable
only under a name the program and its tests do not use. Rewrites are made
on a concrete syntax tree (libcst), so every line a rewrite does not touch
keeps its exact text, and the similarity measures what the rewrites did.

Similarity is CodeSnitch's: unchanged lines / total lines, with unchanged
lines those of the original that a line diff (difflib) matches in the
mutation, and total lines the longer of the two. Rewrites are drawn one at
a time from a seeded stream and kept only if they lower the similarity
without passing more than one line below the target; the walk stops within
one line of the target, or when no rewrite is left (reported, never hidden).
"""

from __future__ import annotations

import ast
import builtins
import difflib
import random
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import libcst as cst

# Steps per sample at most (each step lowers the similarity).
_MAX_STEPS = 200

FRESH_NAMES = ("result", "res", "out", "output", "value", "ret", "acc", "tmp")


def line_similarity(original: str, mutated: str) -> float:
    """Unchanged lines / total lines: original lines a line diff keeps, over the longer text's line count."""
    a, b = original.splitlines(), mutated.splitlines()
    total = max(len(a), len(b))
    if total == 0:
        return 1.0
    kept = sum(block.size for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    return kept / total


# ---------------------------------------------------------------------------
# What a rewrite may rely on


@dataclass
class Context:
    """Facts about the program a rewrite checks before it applies."""

    name_counts: Counter  # occurrences of each Name in the module
    bound: frozenset[str]  # names the program binds (so `set`, `range`, `Exception` may not be the builtins)
    taken: set[str]  # names a new variable may not take
    scope: list[str] = field(default_factory=lambda: ["module"])
    elifs: set[int] = field(default_factory=set)  # ids of If nodes that are an `elif`
    within_try: list[bool] = field(default_factory=lambda: [False])  # whether the innermost block is a try's
    logging_imported: bool = False  # the module has `import logging` at its top level

    def fresh_name(self) -> str:
        candidates = [*FRESH_NAMES, *(f"{name}{k}" for k in range(2, 100) for name in FRESH_NAMES[:1])]
        return next(name for name in candidates if name not in self.taken and not hasattr(builtins, name))

    def builtin(self, name: str) -> bool:
        return name not in self.bound


def _bound_names(code: str) -> frozenset[str]:
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return frozenset(names)


class _NameCounter(cst.CSTVisitor):
    def __init__(self):
        self.counts: Counter = Counter()

    def visit_Name(self, node: cst.Name) -> None:
        self.counts[node.value] += 1


def _names_in(node: cst.CSTNode) -> Counter:
    counter = _NameCounter()
    node.visit(counter)
    return counter.counts


# ---------------------------------------------------------------------------
# Helpers that build nodes


def _line(*small: cst.BaseSmallStatement, like: cst.SimpleStatementLine | None = None) -> cst.SimpleStatementLine:
    line = cst.SimpleStatementLine(body=list(small))
    if like is not None:
        line = line.with_changes(leading_lines=like.leading_lines, trailing_whitespace=like.trailing_whitespace)
    return line


def _block(*statements: cst.BaseStatement) -> cst.IndentedBlock:
    return cst.IndentedBlock(body=list(statements))


def _parenthesized(expression: cst.BaseExpression) -> cst.BaseExpression:
    if expression.lpar or not isinstance(expression, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)):
        return expression
    return expression.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _negated(expression: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expression, cst.UnaryOperation) and isinstance(expression.operator, cst.Not):
        return expression.expression
    return cst.UnaryOperation(operator=cst.Not(), expression=_parenthesized(expression))


def _only(line: cst.CSTNode, kind: type) -> cst.CSTNode | None:
    """The one small statement of a simple statement line, if it is a `kind`."""
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and isinstance(line.body[0], kind):
        return line.body[0]
    return None


def _single_name_assign(line: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    assign = _only(line, cst.Assign)
    if assign is None or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    return assign.targets[0].target.value, assign.value


def _assign(name: str, value: cst.BaseExpression) -> cst.Assign:
    return cst.Assign(targets=[cst.AssignTarget(target=cst.Name(name))], value=value)


def _ends_flow(block: cst.BaseSuite) -> bool:
    """Whether the block's last statement leaves it (return, raise, continue, break)."""
    if not isinstance(block, cst.IndentedBlock) or not block.body:
        return False
    last = block.body[-1]
    return isinstance(last, cst.SimpleStatementLine) and isinstance(
        last.body[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break)
    )


_PURE = (cst.Name, cst.Integer, cst.Float, cst.SimpleString)


def _pure(expression: cst.BaseExpression) -> bool:
    """Evaluating it has no effect, so operands may swap order."""
    if isinstance(expression, _PURE):
        return True
    if isinstance(expression, cst.Attribute):
        return isinstance(expression.value, cst.Name)
    return (
        isinstance(expression, cst.Subscript)
        and isinstance(expression.value, cst.Name)
        and all(isinstance(s.slice, cst.Index) and isinstance(s.slice.value, _PURE) for s in expression.slice)
    )


def _is_string(expression: cst.BaseExpression) -> bool:
    return isinstance(expression, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


# ---------------------------------------------------------------------------
# The catalogue: each rewrite returns its replacement, or None where it does not apply.

# Not `*=`: `xs *= 2` repeats a list in place, `xs = xs * 2` makes a new one (its aliases differ).
_AUG_TO_BINARY = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.FloorDivideAssign: cst.FloorDivide,
    cst.ModuloAssign: cst.Modulo,
}
_BINARY_TO_AUG = {binary: aug for aug, binary in _AUG_TO_BINARY.items()}


def expand_augmented(node: cst.SimpleStatementLine, ctx: Context):
    """`x += 1` -> `x = x + 1`, with a number operand (a list cannot take `+= 1`, so no aliasing differs)."""
    aug = _only(node, cst.AugAssign)
    if (
        aug is None
        or not isinstance(aug.target, cst.Name)
        or type(aug.operator) not in _AUG_TO_BINARY
        or not isinstance(aug.value, (cst.Integer, cst.Float))
    ):
        return None
    value = cst.BinaryOperation(
        left=cst.Name(aug.target.value), operator=_AUG_TO_BINARY[type(aug.operator)](), right=aug.value
    )
    return _line(_assign(aug.target.value, value), like=node)


def contract_augmented(node: cst.SimpleStatementLine, ctx: Context):
    """`x = x + 1` -> `x += 1`, with a number operand."""
    assigned = _single_name_assign(node)
    if assigned is None:
        return None
    name, value = assigned
    if not (
        isinstance(value, cst.BinaryOperation)
        and type(value.operator) in _BINARY_TO_AUG
        and not value.lpar
        and isinstance(value.left, cst.Name)
        and value.left.value == name
        and not value.left.lpar
        and isinstance(value.right, (cst.Integer, cst.Float))
    ):
        return None
    aug = cst.AugAssign(target=cst.Name(name), operator=_BINARY_TO_AUG[type(value.operator)](), value=value.right)
    return _line(aug, like=node)


def swap_if_else(node: cst.If, ctx: Context):
    """`if c: A else: B` -> `if not c: B else: A`."""
    if not isinstance(node.orelse, cst.Else):
        return None
    return node.with_changes(
        test=_negated(node.test),
        body=node.orelse.body,
        orelse=cst.Else(body=node.body),
        whitespace_before_test=cst.SimpleWhitespace(" "),
    )


def ternary_to_if(node: cst.SimpleStatementLine, ctx: Context):
    """`x = a if c else b` -> an if statement assigning `x` in each branch."""
    assigned = _single_name_assign(node)
    if assigned is None or not isinstance(assigned[1], cst.IfExp) or assigned[1].lpar:
        return None
    name, ternary = assigned
    return cst.If(
        test=ternary.test,
        body=_block(_line(_assign(name, ternary.body))),
        orelse=cst.Else(body=_block(_line(_assign(name, ternary.orelse)))),
        leading_lines=node.leading_lines,
    )


def if_to_ternary(node: cst.If, ctx: Context):
    """An if/else that assigns one name in each branch -> `x = a if c else b`."""
    if (
        id(node) in ctx.elifs
        or not isinstance(node.orelse, cst.Else)
        or len(node.body.body) != 1
        or len(node.orelse.body.body) != 1
    ):
        return None
    then, otherwise = _single_name_assign(node.body.body[0]), _single_name_assign(node.orelse.body.body[0])
    if then is None or otherwise is None or then[0] != otherwise[0]:
        return None
    ternary = cst.IfExp(
        test=_parenthesized(node.test), body=_parenthesized(then[1]), orelse=_parenthesized(otherwise[1])
    )
    return _line(_assign(then[0], ternary)).with_changes(leading_lines=node.leading_lines)


def return_ternary_to_if(node: cst.SimpleStatementLine, ctx: Context):
    """`return a if c else b` -> `if c: return a else: return b`."""
    ret = _only(node, cst.Return)
    if ret is None or not isinstance(ret.value, cst.IfExp) or ret.value.lpar:
        return None
    ternary = ret.value
    return cst.If(
        test=ternary.test,
        body=_block(_line(cst.Return(ternary.body))),
        orelse=cst.Else(body=_block(_line(cst.Return(ternary.orelse)))),
        leading_lines=node.leading_lines,
    )


def drop_else_after_exit(node: cst.If, ctx: Context):
    """`if c: ...return x else: B` -> `if c: ...return x` then B (early return)."""
    if id(node) in ctx.elifs or not isinstance(node.orelse, cst.Else) or not _ends_flow(node.body):
        return None
    return cst.FlattenSentinel([node.with_changes(orelse=None), *node.orelse.body.body])


def else_after_exit(node: cst.IndentedBlock, ctx: Context):
    """`if c: ...return x` then B -> `if c: ...return x else: B` (the first such if of a block)."""
    for i, statement in enumerate(node.body[:-1]):
        if isinstance(statement, cst.If) and statement.orelse is None and _ends_flow(statement.body):
            rest = node.body[i + 1 :]
            return node.with_changes(body=[*node.body[:i], statement.with_changes(orelse=cst.Else(body=_block(*rest)))])
    return None


def _comprehension_loop(comprehension: cst.ListComp | cst.SetComp, name: str, ctx: Context) -> list | None:
    """`name = []` / `name = set()` and the loop that fills it, or None where that would not be the same."""
    if isinstance(comprehension, cst.SetComp) and not ctx.builtin("set"):
        return None
    inside = _names_in(comprehension)
    fors = []
    level = comprehension.for_in
    while level is not None:
        if level.asynchronous is not None:
            return None
        fors.append(level)
        level = level.inner_for_in
    loop_names = Counter()
    for level in fors:
        loop_names.update(_names_in(level.target))
    # the loop variables leak out of a loop: they must occur nowhere but here
    if any(ctx.name_counts[n] != inside[n] for n in loop_names) or name in inside:
        return None
    if _has_any(comprehension, (cst.Yield, cst.Await, cst.NamedExpr, cst.Lambda)):
        return None
    method = "append" if isinstance(comprehension, cst.ListComp) else "add"
    body: cst.BaseStatement = _line(
        cst.Expr(
            cst.Call(func=cst.Attribute(value=cst.Name(name), attr=cst.Name(method)), args=[cst.Arg(comprehension.elt)])
        )
    )
    for level in reversed(fors):
        for condition in reversed(level.ifs):
            body = cst.If(test=condition.test, body=_block(body))
        body = cst.For(target=level.target, iter=level.iter, body=_block(body))
    empty = cst.List([]) if isinstance(comprehension, cst.ListComp) else cst.Call(func=cst.Name("set"))
    return [_line(_assign(name, empty)), body]


def comprehension_to_loop(node: cst.SimpleStatementLine, ctx: Context):
    """`x = [e for v in it if c]` -> `x = []` and a for loop that appends (sets likewise)."""
    assigned = _single_name_assign(node)
    if assigned is None or not isinstance(assigned[1], (cst.ListComp, cst.SetComp)) or ctx.scope[-1] == "class":
        return None
    statements = _comprehension_loop(assigned[1], assigned[0], ctx)
    if statements is None:
        return None
    statements[0] = statements[0].with_changes(leading_lines=node.leading_lines)
    return cst.FlattenSentinel(statements)


def returned_comprehension_to_loop(node: cst.SimpleStatementLine, ctx: Context):
    """`return [e for v in it]` -> a new list filled by a loop, then returned."""
    ret = _only(node, cst.Return)
    if ret is None or not isinstance(ret.value, (cst.ListComp, cst.SetComp)):
        return None
    name = ctx.fresh_name()
    statements = _comprehension_loop(ret.value, name, ctx)
    if statements is None:
        return None
    statements[0] = statements[0].with_changes(leading_lines=node.leading_lines)
    return cst.FlattenSentinel([*statements, _line(cst.Return(cst.Name(name)))])


def loop_to_comprehension(node: cst.IndentedBlock, ctx: Context):
    """`x = []` then `for v in it: [if c:] x.append(e)` -> `x = [e for v in it if c]` (the first such pair)."""
    for i, (first, second) in enumerate(zip(node.body, node.body[1:], strict=False)):
        assigned = _single_name_assign(first)
        if assigned is None or not isinstance(assigned[1], cst.List) or assigned[1].elements:
            continue
        if not isinstance(second, cst.For) or second.orelse is not None or second.asynchronous is not None:
            continue
        name, inner, conditions = assigned[0], second.body.body, []
        if len(inner) == 1 and isinstance(inner[0], cst.If) and inner[0].orelse is None:
            conditions, inner = [cst.CompIf(test=inner[0].test)], inner[0].body.body
        call = _only(inner[0], cst.Expr) if len(inner) == 1 else None
        call = call.value if call is not None else None
        if not (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "append"
            and isinstance(call.func.value, cst.Name)
            and call.func.value.value == name
            and len(call.args) == 1
            and not call.args[0].star
            and call.args[0].keyword is None
        ):
            continue
        inside = _names_in(second)
        loop_names = _names_in(second.target)
        if (
            inside[name] != 1
            or any(ctx.name_counts[n] != inside[n] for n in loop_names)
            or _has_any(second, (cst.Yield, cst.Await, cst.NamedExpr))
        ):
            continue
        element = call.args[0].value
        if isinstance(element, cst.Tuple) and not element.lpar:
            element = element.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        comprehension = cst.ListComp(
            elt=element, for_in=cst.CompFor(target=second.target, iter=second.iter, ifs=conditions)
        )
        merged = _line(_assign(name, comprehension), like=first)
        return node.with_changes(body=[*node.body[:i], merged, *node.body[i + 2 :]])
    return None


def return_through_variable(node: cst.SimpleStatementLine, ctx: Context):
    """`return expr` -> `name = expr` then `return name`."""
    ret = _only(node, cst.Return)
    if ret is None or ret.value is None or isinstance(ret.value, (cst.Name, cst.Tuple)) or ctx.scope[-1] != "function":
        return None
    name = ctx.fresh_name()
    return cst.FlattenSentinel([_line(_assign(name, ret.value), like=node), _line(cst.Return(cst.Name(name)))])


_WRAPPABLE = (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Expr, cst.Return)


def wrap_in_try(node: cst.SimpleStatementLine, ctx: Context):
    """A statement -> `try: statement` / `except Exception: raise` (the exception passes unchanged);
    never inside another try."""
    if (
        ctx.scope[-1] != "function"
        or ctx.within_try[-1]
        or not ctx.builtin("Exception")
        or len(node.body) != 1
        or not isinstance(node.body[0], _WRAPPABLE)
    ):
        return None
    if isinstance(node.body[0], cst.Expr) and _is_string(node.body[0].value):
        return None  # a docstring stays one
    handler = cst.ExceptHandler(type=cst.Name("Exception"), body=_block(_line(cst.Raise())))
    return cst.Try(
        body=_block(node.with_changes(leading_lines=[])), handlers=[handler], leading_lines=node.leading_lines
    )


def _logging_available(ctx: Context) -> bool:
    """`logging` names the standard module here, or can be imported under that name."""
    return ctx.logging_imported or "logging" not in ctx.taken


def _logged_name(line: cst.CSTNode) -> str | None:
    """The name a `add_logging` line logs, if `line` is one."""
    call = _only(line, cst.Expr)
    call = call.value if call is not None else None
    if (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "debug"
        and isinstance(call.func.value, cst.Call)
        and isinstance(call.func.value.func, cst.Attribute)
        and call.func.value.func.attr.value == "getLogger"
        and len(call.args) == 2
        and isinstance(call.args[1].value, cst.Name)
    ):
        return call.args[1].value.value
    return None


def _assigned_name(line: cst.CSTNode) -> str | None:
    assigned = _only(line, (cst.Assign, cst.AugAssign, cst.AnnAssign))
    if assigned is None or (isinstance(assigned, cst.AnnAssign) and assigned.value is None):
        return None
    target = (
        assigned.targets[0].target
        if isinstance(assigned, cst.Assign) and len(assigned.targets) == 1
        else getattr(assigned, "target", None)
    )
    return target.value if isinstance(target, cst.Name) else None


def add_logging(node: cst.IndentedBlock, ctx: Context):
    """`x = ...` -> the same, then `logging.getLogger(__name__).debug("x = %r", x)` (the first
    assignment of a block not yet logged; `import logging` added at the top of the module where
    it is not there): nothing is written at the default level (WARNING), and the value's repr is
    made only when a record is."""
    if ctx.scope[-1] != "function" or not _logging_available(ctx):
        return None
    for i, line in enumerate(node.body):
        name = _assigned_name(line)
        if name is None or (i + 1 < len(node.body) and _logged_name(node.body[i + 1]) == name):
            continue
        logger = cst.Call(
            func=cst.Attribute(value=cst.Name("logging"), attr=cst.Name("getLogger")),
            args=[cst.Arg(cst.Name("__name__"))],
        )
        call = cst.Call(
            func=cst.Attribute(value=logger, attr=cst.Name("debug")),
            args=[
                cst.Arg(
                    cst.SimpleString(f'"{name} = %r"'), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                ),
                cst.Arg(cst.Name(name)),
            ],
        )
        return node.with_changes(body=[*node.body[: i + 1], _line(cst.Expr(call)), *node.body[i + 1 :]])
    return None


def _with_logging_import(module: cst.Module) -> cst.Module:
    """`import logging` after the module's docstring and `from __future__` imports."""
    position = 0
    for statement in module.body:
        small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and statement.body else None
        if (isinstance(small, cst.Expr) and _is_string(small.value) and position == 0) or (
            isinstance(small, cst.ImportFrom)
            and isinstance(small.module, cst.Name)
            and small.module.value == "__future__"
        ):
            position += 1
            continue
        break
    statement = _line(cst.Import(names=[cst.ImportAlias(name=cst.Name("logging"))]))
    return module.with_changes(body=[*module.body[:position], statement, *module.body[position:]])


def _imports_logging(module: cst.Module) -> bool:
    return any(
        isinstance(small, cst.Import)
        and any(
            isinstance(alias.name, cst.Name) and alias.name.value == "logging" and alias.asname is None
            for alias in small.names
        )
        for statement in module.body
        if isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body
    )


def negate_equality(node: cst.Comparison, ctx: Context):
    """`a == b` -> `not a != b` (and `!=` likewise)."""
    if len(node.comparisons) != 1 or node.lpar:
        return None
    target = node.comparisons[0]
    flipped = {cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal}.get(type(target.operator))
    if flipped is None:
        return None
    inner = node.with_changes(comparisons=[target.with_changes(operator=flipped())])
    return cst.UnaryOperation(operator=cst.Not(), expression=inner)


_MIRROR = {
    cst.LessThan: cst.GreaterThan,
    cst.GreaterThan: cst.LessThan,
    cst.LessThanEqual: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.LessThanEqual,
    cst.Equal: cst.Equal,
    cst.NotEqual: cst.NotEqual,
}


def mirror_comparison(node: cst.Comparison, ctx: Context):
    """`a < b` -> `b > a`, for operands whose evaluation has no effect."""
    if len(node.comparisons) != 1:
        return None
    target = node.comparisons[0]
    mirrored = _MIRROR.get(type(target.operator))
    if mirrored is None or not _pure(node.left) or not _pure(target.comparator):
        return None
    return node.with_changes(
        left=target.comparator, comparisons=[target.with_changes(operator=mirrored(), comparator=node.left)]
    )


def membership_forms(node: cst.BaseExpression, ctx: Context):
    """`not x in y` <-> `x not in y`, and `x in [a, b]` -> `x in (a, b)`."""
    if (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Not)
        and isinstance(node.expression, cst.Comparison)
        and not node.expression.lpar
        and len(node.expression.comparisons) == 1
        and isinstance(node.expression.comparisons[0].operator, cst.In)
    ):
        comparison = node.expression
        return comparison.with_changes(
            comparisons=[comparison.comparisons[0].with_changes(operator=cst.NotIn())], lpar=node.lpar, rpar=node.rpar
        )
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1 and not node.lpar:
        target = node.comparisons[0]
        if isinstance(target.operator, cst.NotIn):
            inner = node.with_changes(comparisons=[target.with_changes(operator=cst.In())])
            return cst.UnaryOperation(operator=cst.Not(), expression=inner)
        if (
            isinstance(target.operator, cst.In)
            and isinstance(target.comparator, cst.List)
            and target.comparator.elements
        ):
            items = target.comparator.elements
            if len(items) == 1:
                items = [items[0].with_changes(comma=cst.Comma())]
            return node.with_changes(
                comparisons=[
                    target.with_changes(
                        comparator=cst.Tuple(elements=items, lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                    )
                ]
            )
    return None


def explicit_range_start(node: cst.Call, ctx: Context):
    """`range(n)` -> `range(0, n)`."""
    if not (
        isinstance(node.func, cst.Name)
        and node.func.value == "range"
        and ctx.builtin("range")
        and len(node.args) == 1
        and not node.args[0].star
        and node.args[0].keyword is None
    ):
        return None
    return node.with_changes(
        args=[cst.Arg(cst.Integer("0"), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), node.args[0]]
    )


def _has_any(node: cst.CSTNode, kinds: tuple[type, ...]) -> bool:
    found = []

    class _Find(cst.CSTVisitor):
        def on_visit(self, child: cst.CSTNode) -> bool:
            if isinstance(child, kinds):
                found.append(child)
            return not found

    node.visit(_Find())
    return bool(found)


@dataclass(frozen=True)
class Rewrite:
    name: str
    node_type: type
    apply: Callable[[cst.CSTNode, Context], object]


CATALOGUE = (
    Rewrite("expand_augmented", cst.SimpleStatementLine, expand_augmented),
    Rewrite("contract_augmented", cst.SimpleStatementLine, contract_augmented),
    Rewrite("swap_if_else", cst.If, swap_if_else),
    Rewrite("ternary_to_if", cst.SimpleStatementLine, ternary_to_if),
    Rewrite("if_to_ternary", cst.If, if_to_ternary),
    Rewrite("return_ternary_to_if", cst.SimpleStatementLine, return_ternary_to_if),
    Rewrite("drop_else_after_exit", cst.If, drop_else_after_exit),
    Rewrite("else_after_exit", cst.IndentedBlock, else_after_exit),
    Rewrite("comprehension_to_loop", cst.SimpleStatementLine, comprehension_to_loop),
    Rewrite("returned_comprehension_to_loop", cst.SimpleStatementLine, returned_comprehension_to_loop),
    Rewrite("loop_to_comprehension", cst.IndentedBlock, loop_to_comprehension),
    Rewrite("return_through_variable", cst.SimpleStatementLine, return_through_variable),
    Rewrite("wrap_in_try", cst.SimpleStatementLine, wrap_in_try),
    Rewrite("add_logging", cst.IndentedBlock, add_logging),
    Rewrite("negate_equality", cst.Comparison, negate_equality),
    Rewrite("mirror_comparison", cst.Comparison, mirror_comparison),
    Rewrite("membership_forms", cst.BaseExpression, membership_forms),
    Rewrite("explicit_range_start", cst.Call, explicit_range_start),
)


# ---------------------------------------------------------------------------
# Applying the catalogue


class _Pass(cst.CSTTransformer):
    """One walk over the tree: finds every site of every rewrite, and makes the `target`-th one (if given)."""

    def __init__(self, rewrites: tuple[Rewrite, ...], ctx: Context, target: int | None = None):
        super().__init__()
        self._rewrites = rewrites
        self._ctx = ctx
        self._target = target
        self.sites: list[str] = []
        self.made: str | None = None  # the rewrite this pass made

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.If) and isinstance(node.orelse, cst.If):
            self._ctx.elifs.add(id(node.orelse))
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            self._ctx.scope.append("class" if isinstance(node, cst.ClassDef) else "function")
        if isinstance(node, cst.BaseCompoundStatement):
            self._ctx.within_try.append(isinstance(node, (cst.Try, cst.TryStar)))
        return True

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        if isinstance(original, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            self._ctx.scope.pop()
        if isinstance(original, cst.BaseCompoundStatement):
            self._ctx.within_try.pop()
        if isinstance(original, cst.Module) and self.made == "add_logging" and not self._ctx.logging_imported:
            return _with_logging_import(updated)
        if self._target is not None and len(self.sites) > self._target:
            return updated  # the one rewrite of this pass is made
        for rewrite in self._rewrites:
            if not isinstance(original, rewrite.node_type):
                continue
            # nothing has changed below `original` before this pass's one rewrite
            try:
                replacement = rewrite.apply(original, self._ctx)
            except cst.CSTValidationError:
                replacement = None  # the pattern cannot be written here (e.g. `if(x)` without its space)
            if replacement is None:
                continue
            self.sites.append(rewrite.name)
            if self._target is not None and len(self.sites) == self._target + 1:
                self.made = rewrite.name
                return replacement
        return updated


def _context(tree: cst.Module, protected: Collection[str]) -> Context:
    counts = _names_in(tree)
    return Context(
        name_counts=counts,
        bound=_bound_names(tree.code),
        taken={*counts, *protected},
        logging_imported=_imports_logging(tree),
    )


@dataclass(frozen=True)
class StatementMutation:
    text: str
    similarity: float  # achieved: unchanged lines / total lines
    reached: bool  # within one line of the target
    rewrites: tuple[str, ...]  # the catalogue entries applied, in order


def rewrite_statements(
    code: str,
    target: float,
    rng: random.Random,
    protected: Collection[str] = (),
    rewrites: tuple[Rewrite, ...] = CATALOGUE,
) -> StatementMutation:
    """Rewrites drawn from `rng` until the similarity to `code` is within one line of `target`.

    `protected` names (the tests' identifiers) are never taken by a new variable."""
    if not 0 <= target <= 1:
        raise ValueError(f"target similarity must be in [0, 1], got {target}")
    try:
        tree = cst.parse_module(code)
    except cst.ParserSyntaxError as error:
        raise ValueError(f"code does not parse: {error.message}") from None
    tolerance = 1 / max(1, len(code.splitlines()))
    similarity, applied = 1.0, []
    for _ in range(_MAX_STEPS):
        if similarity <= target:
            break
        counting = _Pass(rewrites, _context(tree, protected))
        tree.visit(counting)
        for site in _drawn_order(counting.sites, rng):
            making = _Pass(rewrites, _context(tree, protected), target=site)
            candidate = tree.visit(making)
            text = candidate.code
            new = line_similarity(code, text)
            if new < similarity and new >= target - tolerance and _compiles(text):
                tree, similarity = candidate, new
                applied.append(counting.sites[site])
                break
        else:
            break  # no rewrite left that lowers the similarity without overshooting
    return StatementMutation(
        text=tree.code, similarity=similarity, reached=abs(similarity - target) <= tolerance, rewrites=tuple(applied)
    )


def _drawn_order(sites: list[str], rng: random.Random) -> list[int]:
    """Site indices to try: the kinds of rewrite in a random order, each kind's sites shuffled, so
    a kind with many sites (every statement can be wrapped in a try) is not drawn more often."""
    by_kind: dict[str, list[int]] = {}
    for index, name in enumerate(sites):
        by_kind.setdefault(name, []).append(index)
    kinds = sorted(by_kind)
    rng.shuffle(kinds)
    order = []
    for kind in kinds:
        indices = by_kind[kind]
        rng.shuffle(indices)
        order += indices
    return order


def _compiles(text: str) -> bool:
    try:
        compile(text, "<mutation>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True
