"""Inputs for executing a function without an LLM (HyClone Stage 2's I_a, I_b).

HyClone asks an LLM for N inputs per function (functional-memorization paper,
App. C.2). Here they come from what the function's program shows instead:

- the benchmark's own test inputs, the literal arguments of every call of the
  function (or HumanEval's ``candidate``) in the sample's test;
- draws from a hypothesis strategy built from the signature: each parameter's
  annotation (``List[int]``, ``dict[str, float]``, ``Optional[str]``, ...),
  the values the parameter was seen with (test inputs, docstring examples,
  its default: drawn as they are and as values of the same shape), and the
  literals of the function's body, so a function that compares its argument
  with ``"Sofia"`` or ``60`` meets those values.

Draws are seeded (one ``random.Random`` per input set, see `draw`), so the
same program and seed give the same inputs on every run. Everything is derived
from the source by reading it (ast); nothing of the program runs here.
"""

from __future__ import annotations

import ast
import math
import random
import string
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import strategies as st
from hypothesis.control import BuildContext
from hypothesis.errors import StopTest, UnsatisfiedAssumption
from hypothesis.internal.conjecture.data import ConjectureData
from hypothesis.internal.conjecture.providers import HypothesisProvider

from leaktrace.sandbox import values

OMIT = object()  # a parameter with a default left out of a call
Call = tuple[tuple, dict]  # positional arguments, keyword arguments
_SCALAR_TYPES = (bool, int, float, str, bytes)
_MAX_CONSTANTS = 30
_ALPHABET = string.ascii_letters + string.digits + " .,;:-_()[]!?'\"/"
_NUMBER_LIMIT = 1e6
_MAX_CHOICES = 2_000  # choices one draw may make (a draw that needs more is skipped)
_LIST_TYPES = {"List", "list", "Sequence", "MutableSequence", "Iterable", "Collection", "Iterator", "Deque", "deque"}
_DICT_TYPES = {"Dict", "dict", "Mapping", "MutableMapping", "DefaultDict", "OrderedDict", "Counter"}
_SET_TYPES = {"Set", "set", "AbstractSet", "MutableSet"}
_FROZENSET_TYPES = {"FrozenSet", "frozenset"}
_TUPLE_TYPES = {"Tuple", "tuple"}


@dataclass(frozen=True)
class Parameter:
    name: str
    annotation: str | None  # its source text
    default: object  # the default's literal value, OMIT when there is none (or it is not a literal)
    has_default: bool
    keyword_only: bool


@dataclass(frozen=True)
class Callee:
    """Where a function sits in its program and how it is called.

    ``owner`` names the enclosing classes, outermost first (empty for a
    module-level function); ``binding`` is "function", "method" (built
    instance), "property" (read on a built instance), "static" or "class"
    (called on the class); ``constructor``
    holds ``__init__``'s parameters when the class body defines one.
    """

    name: str
    owner: tuple[str, ...]
    binding: str
    parameters: tuple[Parameter, ...]
    constructor: tuple[Parameter, ...] | None
    constants: tuple  # literals of the body, in source order, deduplicated


class NotCallable(ValueError):
    """The function cannot be called from outside (it is nested in another function)."""


def locate(program: str, line: int) -> Callee:
    """The function whose ``def`` (or first decorator) is on ``line`` (1-based) of
    ``program``; raises SyntaxError when the program does not parse, ValueError
    when no function starts there, NotCallable when it is nested in a function."""
    tree = ast.parse(program)
    compile(tree, "program.py", "exec")  # what only the compiler rejects ('return' outside a function, ...)
    found = _find(tree, line, ())
    if found is None:
        raise ValueError(f"no function starts on line {line}")
    node, owners = found
    if any(not isinstance(owner, ast.ClassDef) for owner in owners):
        raise NotCallable(f"{node.name} is defined inside a function")
    decorators = {_dotted(d) for d in node.decorator_list}
    binding = "function"
    parameters = _parameters(node.args)
    constructor = None
    if owners:
        binding = (
            "static"
            if "staticmethod" in decorators
            else "class"
            if "classmethod" in decorators
            else "property"
            if decorators & {"property", "cached_property"}
            else "method"
        )
        if binding != "static":
            parameters = parameters[1:]  # self or cls
        init = next(
            (item for item in owners[-1].body if isinstance(item, ast.FunctionDef) and item.name == "__init__"), None
        )
        constructor = None if init is None else _parameters(init.args)[1:]
    return Callee(node.name, tuple(owner.name for owner in owners), binding, parameters, constructor, constants(node))


def _find(node: ast.AST, line: int, owners: tuple) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, tuple] | None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if min([child.lineno] + [d.lineno for d in child.decorator_list]) == line:
                return child, owners
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found = _find(child, line, owners + (child,))
        else:
            found = _find(child, line, owners)
        if found is not None:
            return found
    return None


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _literal(node: ast.AST | None) -> object:
    if node is None:
        return OMIT
    try:
        value = ast.literal_eval(node)
        values.encode(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return OMIT
    return value


def _parameters(arguments: ast.arguments) -> tuple[Parameter, ...]:
    positional = arguments.posonlyargs + arguments.args
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    out = [
        Parameter(a.arg, _annotation(a), _literal(d), d is not None, False)
        for a, d in zip(positional, defaults, strict=True)
    ]
    out += [
        Parameter(a.arg, _annotation(a), _literal(d), d is not None, True)
        for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
    ]
    return tuple(out)


def _annotation(argument: ast.arg) -> str | None:
    return None if argument.annotation is None else ast.unparse(argument.annotation)


def constants(node: ast.AST) -> tuple:
    """The scalar literals of a function's body (docstring excluded), first occurrence first."""
    body = node.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    seen, out = set(), []
    for statement in body:
        for child in ast.walk(statement):
            if isinstance(child, ast.Constant) and type(child.value) in _SCALAR_TYPES:
                key = values.encode(child.value)
                if key not in seen and len(out) < _MAX_CONSTANTS:
                    seen.add(key)
                    out.append(child.value)
    return tuple(out)


def calls_in_test(test: str, names: Sequence[str]) -> list[Call]:
    """The literal arguments of every call of one of ``names`` in a test, in source order."""
    try:
        tree = ast.parse(test)
    except (SyntaxError, ValueError):
        return []
    calls = []
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
    ]
    for node in sorted(found, key=lambda node: (node.lineno, node.col_offset)):
        args = tuple(_literal(arg) for arg in node.args)
        kwargs = {k.arg: _literal(k.value) for k in node.keywords if k.arg is not None}
        if len(kwargs) == len(node.keywords) and OMIT not in args and OMIT not in kwargs.values():
            calls.append((args, kwargs))
    return calls


def observed_values(parameters: Sequence[Parameter], calls: Sequence[Call]) -> list[list]:
    """Per parameter, the values it was seen with in ``calls`` and its default."""
    seen: list[list] = [[] for _ in parameters]
    names = {p.name: i for i, p in enumerate(parameters)}
    for args, kwargs in calls:
        for i, value in enumerate(args[: len(parameters)]):
            seen[i].append(value)
        for name, value in kwargs.items():
            if name in names:
                seen[names[name]].append(value)
    for i, parameter in enumerate(parameters):
        if parameter.default is not OMIT:
            seen[i].append(parameter.default)
    return [distinct(v) for v in seen]


def distinct(items: Sequence) -> list:
    """``items`` without repeats (compared by their sandbox encoding), in order."""
    out, keys = [], set()
    for item in items:
        key = values.encode(item)
        if key not in keys:
            keys.add(key)
            out.append(item)
    return out


def call_strategy(
    parameters: Sequence[Parameter], observed: Sequence[Sequence], literals: Sequence
) -> st.SearchStrategy:
    """Calls of a function with these parameters: required parameters always
    given (positionally unless keyword-only), those with defaults given by
    keyword or left out."""
    alphabet = "".join(sorted(set(_ALPHABET).union(*(v for v in literals if type(v) is str)))) or _ALPHABET
    parts = []
    for parameter, seen in zip(parameters, observed, strict=True):
        strategy = _parameter_strategy(parameter, seen, literals, alphabet)
        parts.append(st.one_of(st.just(OMIT), strategy) if parameter.has_default else strategy)

    def build(drawn: tuple) -> Call:
        args, kwargs = [], {}
        for parameter, value in zip(parameters, drawn, strict=True):
            if value is OMIT:
                continue
            if parameter.keyword_only or parameter.has_default:
                kwargs[parameter.name] = value
            else:
                args.append(value)
        return tuple(args), kwargs

    return st.tuples(*parts).map(build)


def _parameter_strategy(parameter: Parameter, seen: Sequence, literals: Sequence, alphabet: str) -> st.SearchStrategy:
    options = []
    if seen:
        options.append(st.sampled_from(list(seen)))
        options += [_like(value, alphabet) for value in seen[:3]]
    informative = [v for v in seen if v is not None]  # a None default says nothing about the other values
    typed = None if informative else _annotated(parameter.annotation, alphabet)  # seen values show the range
    if typed is not None:
        options.append(typed)
    kinds = {type(v) for v in informative} if informative else None
    matching = [v for v in literals if kinds is None or type(v) in kinds or (int in kinds and type(v) is float)]
    if matching:
        options.append(st.sampled_from(matching))
    if not informative and typed is None:
        options.append(_generic(alphabet))
    return st.one_of(options)


def _generic(alphabet: str) -> st.SearchStrategy:
    """Values for a parameter nothing is known about."""
    return st.one_of(
        st.integers(-100, 100),
        _floats(-100.0, 100.0),
        st.text(alphabet, max_size=10),
        st.lists(st.integers(-100, 100), max_size=8),
        st.booleans(),
    )


def _floats(low: float, high: float) -> st.SearchStrategy:
    return st.floats(low, high, allow_nan=False, allow_infinity=False)


def _like(value: object, alphabet: str, depth: int = 0) -> st.SearchStrategy:
    """Values of the same type and about the same size as ``value``."""
    kind = type(value)
    if value is None:
        return st.none()
    if kind is bool:
        return st.booleans()
    if kind is int:
        reach = min(2 * abs(value) + 10, int(_NUMBER_LIMIT))
        return st.integers(-reach, reach)
    if kind is float:
        reach = min(2 * abs(value) + 10.0, _NUMBER_LIMIT) if math.isfinite(value) else 100.0
        return _floats(-reach, reach)
    if kind is str:
        return st.text("".join(sorted(set(alphabet) | set(value))), max_size=2 * len(value) + 5)
    if kind is bytes:
        return st.binary(max_size=2 * len(value) + 5)
    if depth > 3:
        return st.none()
    if kind in (list, tuple, set, frozenset):
        items = list(value)[:3]
        element = st.one_of([_like(item, alphabet, depth + 1) for item in items]) if items else st.integers(-100, 100)
        size = 2 * len(value) + 3
        if kind is tuple and 0 < len(value) <= 5:
            return st.tuples(*[_like(item, alphabet, depth + 1) for item in value])
        if kind in (set, frozenset):
            return st.sets(_hashable(element), max_size=size).map(kind)
        return st.lists(element, max_size=size).map(kind)
    if kind is dict:
        items = list(value.items())[:3]
        if not items:
            return st.dictionaries(st.text(alphabet, max_size=5), st.integers(-100, 100), max_size=3)
        keys = _hashable(st.one_of([_like(k, alphabet, depth + 1) for k, _ in items]))
        entries = st.one_of([_like(v, alphabet, depth + 1) for _, v in items])
        return st.dictionaries(keys, entries, max_size=2 * len(value) + 3)
    return st.none()


def _hashable(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return strategy.filter(lambda v: type(v) not in (list, dict, set))


def _annotated(annotation: str | None, alphabet: str) -> st.SearchStrategy | None:
    """A strategy for an annotation's source text; None when it names nothing known."""
    if annotation is None:
        return None
    try:
        node = ast.parse(annotation, mode="eval").body
    except SyntaxError:
        return None
    return _from_node(node, alphabet, 0)


def _from_node(node: ast.AST, alphabet: str, depth: int) -> st.SearchStrategy | None:
    if depth > 4:
        return None
    if isinstance(node, ast.Constant):
        if node.value is None:
            return st.none()
        if isinstance(node.value, str):  # a forward reference
            return _annotated(node.value, alphabet)
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | Y
        return _union([node.left, node.right], alphabet, depth)
    if isinstance(node, (ast.Name, ast.Attribute)):
        return _simple(_dotted(node), alphabet)
    if not isinstance(node, ast.Subscript):
        return None
    base = _dotted(node.value)
    arguments = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    inner = [_from_node(a, alphabet, depth + 1) for a in arguments]
    if base == "Optional":
        return None if inner[0] is None else st.one_of(st.none(), inner[0])
    if base == "Union":
        return _union(arguments, alphabet, depth)
    if base == "Literal":
        literals = [_literal(a) for a in arguments]
        return st.sampled_from(literals) if literals and OMIT not in literals else None
    if base in _TUPLE_TYPES:
        if len(arguments) == 2 and isinstance(arguments[1], ast.Constant) and arguments[1].value is Ellipsis:
            return None if inner[0] is None else st.lists(inner[0], max_size=8).map(tuple)
        return None if None in inner else st.tuples(*inner)
    element = inner[0] if inner[0] is not None else _generic(alphabet)
    if base in _LIST_TYPES:
        return st.lists(element, max_size=10)
    if base in _SET_TYPES | _FROZENSET_TYPES:
        sets = st.sets(_hashable(element), max_size=10)
        return sets.map(frozenset) if base in _FROZENSET_TYPES else sets
    if base in _DICT_TYPES:
        value = inner[1] if len(inner) > 1 and inner[1] is not None else _generic(alphabet)
        return st.dictionaries(_hashable(element), value, max_size=6)
    return None


def _union(nodes: Sequence[ast.AST], alphabet: str, depth: int) -> st.SearchStrategy | None:
    options = [_from_node(n, alphabet, depth + 1) for n in nodes]
    return None if None in options else st.one_of(options)


def _simple(name: str, alphabet: str) -> st.SearchStrategy | None:
    scalars = {
        "int": st.integers(-1000, 1000),
        "float": _floats(-_NUMBER_LIMIT, _NUMBER_LIMIT),
        "str": st.text(alphabet, max_size=20),
        "bool": st.booleans(),
        "bytes": st.binary(max_size=20),
        "None": st.none(),
        "Any": _generic(alphabet),
    }
    if name in scalars:
        return scalars[name]
    if name in _LIST_TYPES:
        return st.lists(_generic(alphabet), max_size=10)
    if name in _DICT_TYPES:
        return st.dictionaries(st.text(alphabet, max_size=5), _generic(alphabet), max_size=6)
    if name in _TUPLE_TYPES:
        return st.lists(_generic(alphabet), max_size=6).map(tuple)
    if name in _SET_TYPES:
        return st.sets(st.integers(-100, 100), max_size=10)
    return None


class _SeedOnlyProvider(HypothesisProvider):
    """Hypothesis's provider without its constants: with a small probability
    it makes a choice a constant, from its own list or from the literals of
    every "local" module the process has imported (anything outside
    site-packages and the standard library, this package among them when it
    runs from a checkout). A job's drawn inputs then depended on what its
    process had imported: a fresh interpreter (a SLURM job) and a fork of the
    fork server (a local run) drew other inputs for the same seed. Here a
    choice never is a constant, so a draw depends on its seed alone; the
    strategies add the values that matter (observed arguments, the
    functions' literals) themselves."""

    def _maybe_draw_constant(self, choice_type, constraints, *, p=0.05):
        return None


def draw(strategy: st.SearchStrategy, count: int, draw_seed: int) -> list:
    """Up to ``count`` distinct values of ``strategy`` (exact builtin values),
    the same ones on every run for the same seed.

    Each value is one draw from a fresh choice sequence fed by one seeded
    ``random.Random`` (hypothesis's ConjectureData, as its own engine feeds
    strategies), without the test engine around it: ``@given`` with
    ``max_examples`` spends about 9 ms per example on mutation and
    bookkeeping, a plain draw well under 2 ms. A draw that overruns or that
    a filter rejects is skipped. No choice is one of Hypothesis's constants
    (``_SeedOnlyProvider``)."""
    source = random.Random(draw_seed)
    drawn = []
    for _ in range(count):
        data = ConjectureData(random=source, max_choices=_MAX_CHOICES, provider=_SeedOnlyProvider)
        try:
            with BuildContext(data, is_final=True, wrapped_test=None):
                drawn.append(data.draw(strategy))
        except (StopTest, UnsatisfiedAssumption):
            continue
    return distinct(drawn)
