"""Semantics-preserving variants of a program by consistent renaming (SrDetection).

SrDetection compares a model's perplexity on a benchmark sample with its
perplexity on variants of it. The comparison is only fair if a variant differs
from its original in nothing but the chosen names, and if those names are as
natural as the original's: identifier tokens are edited in place (formatting,
quotes, blank lines and comments stay byte-identical), each name is renamed by
meaning, word by word (`naming.NameProposer`), keeping the words the prose
uses, and docstrings and comments change only where they refer to code,
never in their English.

Which occurrences may change is decided by a small scope analysis: every
identifier is resolved to the binding it refers to, and a binding is renamed
only if all its occurrences can be renamed together. Builtins, attributes,
imported names, class members and the parameters of methods (which callers
reach through attributes) keep their names.

Nor does a name the program reaches by string at run time, where renaming
it would break the program (`_ScopeAnalysis` records each such use, and
`renamables` leaves out what it can reach):

- a string literal equal to a name (``getattr(module, "solve")``,
  ``__all__ = ["solve"]``, ``f(**{"width": 3})``, a registry's key), and
  every identifier in the literal code given to ``eval``, ``exec`` or
  ``compile``: every binding of that name keeps it;
- ``locals()``, ``vars()`` or ``dir()`` without arguments (``"{x}".format(**locals())``,
  ``"%(x)s" % locals()``), a frame's ``f_locals``, and ``eval`` / ``exec`` of
  code that is not a literal, with no namespace of its own: the whole
  function (every name bound in it or its nested scopes, and every outer
  name it uses) keeps its names;
- ``globals()``, a frame's ``f_globals``, ``sys.modules`` and
  ``__import__`` / ``import_module`` of ``__name__`` (the module object, for
  ``getattr``), and ``eval`` / ``exec`` as above: every module-level name;
- ``f.__name__`` / ``__qualname__`` (a registry keyed by function name) keep
  the name of the function ``f`` is, and ``f.__code__``, ``__annotations__``,
  ``__kwdefaults__``, ``__signature__`` and ``inspect.signature(f)``-like calls
  (which show parameter and local names) the whole function; where ``f`` is
  not a name bound once by a ``def`` (a parameter, a loop variable), every
  function's name (and, for the second kind, every function whole).
"""

from __future__ import annotations

import ast
import bisect
import builtins
import contextlib
import io
import itertools
import random
import re
import token
import tokenize
from collections import Counter, defaultdict
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from leaktrace.variants.lexicon import is_user_identifier
from leaktrace.variants.naming import NameProposer
from leaktrace.variants.synonyms import is_english_word

Position = tuple[int, int]  # (line, character column) of an identifier's first character

# Draws per name for a replacement that differs from it and collides with nothing.
_DRAWS_PER_NAME = 20
# Tries per requested variant before settling for fewer distinct ones.
_ATTEMPTS_PER_VARIANT = 5

_IDENTIFIER = r"[^\W\d]\w*"
_DOCTEST_SOURCE = re.compile(r"\s*(>>>|\.\.\.)(\s|$)")
# A word not preceded by "." (an attribute), "\\" (an escape such as \\n) or an
# apostrophe ("it's"), nor followed by one.
_WORD = re.compile(rf"(?<![\w.\\'\u2019])(?P<name>{_IDENTIFIER})(?![\w'\u2019])")
_ABBREVIATION_DOT = re.compile(r"\.[^\W\d]")  # the "e" of "e.g." is not the name e
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_BACKTICKS = re.compile(r"`[^`\n]+`")
_CALL = re.compile(rf"(?<![\w.\\])({_IDENTIFIER})\(")
# ":param name:" / ":type name:" (Sphinx), and the headers of Google / NumPy parameter sections.
_PARAM_FIELD = re.compile(r":(?:param|type)\s+(?:[\w\[\], ]+\s+)?(\w+)\s*:")
_PARAM_SECTION = re.compile(r"\s*(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments)\s*:?\s*$")
_PARAM_ENTRY = re.compile(r"\s*\**(\w+)\s*(\([^)]*\))?\s*:")
_UNDERLINE = re.compile(r"\s*-{3,}\s*$")
_STRING_HEAD = re.compile(r"""\w*('''|\"\"\"|'|")""")

# Run-time name lookups (module docstring): builtins that read the calling function's namespace
# without arguments, read the module's, and run code; attributes that show a function's name, or
# its code (parameter and local names); calls that show the latter.
_FUNCTION_NAMESPACE_READS = frozenset({"locals", "vars", "dir"})
_CODE_RUNNERS = frozenset({"eval", "exec"})
_NAME_ATTRIBUTES = frozenset({"__name__", "__qualname__"})
_CODE_ATTRIBUTES = frozenset({"__code__", "__annotations__", "__kwdefaults__", "__signature__"})
_INTROSPECTORS = frozenset({"signature", "getfullargspec", "getargspec", "getcallargs", "getsource", "getsourcelines"})
_MODULE_IMPORTERS = frozenset({"__import__", "import_module"})


@dataclass(frozen=True)
class Variant:
    """A renamed copy of a program; `entry_point` is the entry point's name in
    `text` (None for a whole program run on standard input)."""

    text: str
    entry_point: str | None
    renames: dict[str, str]


def make_variants(
    code: str,
    entry_point: str | None,
    names: NameProposer,
    *,
    n: int,
    rng: random.Random,
    reserved: Collection[str] = (),
    exclude: Collection[str] = (),
    names_per_variant: int | None = None,
) -> list[Variant]:
    """Up to `n` distinct variants of `code`, each renaming every name `names` can rename, or,
    with `names_per_variant` k, k of them drawn at random for each variant.

    Fewer than `n` come back when the program has too few renamable names (or
    their words too few alternatives) to make them distinct. `reserved` names
    are neither renamed nor introduced: pass the identifiers of code that runs
    alongside the program (such as its test), which may refer to its names.
    No variant's text is in `exclude`: pass the texts of another set of
    variants to draw a disjoint one.

    Each name a variant changes moves it away from conventions its original
    follows (`i`, `result`): with every name changed at once the original is
    the most natural text of its set for almost any model, so a model that
    never saw it "prefers" it. Fewer names per variant keep variants nearer
    their original's naturalness (docs/methods/variants.md, "How many names a variant renames").
    """
    if names_per_variant is not None and names_per_variant < 1:
        raise ValueError(f"names_per_variant must be at least 1, got {names_per_variant}")
    tree = _parse(code)
    lines = io.StringIO(code).readlines()
    tokens = _tokenize(code)
    analysis = _ScopeAnalysis(tree, lines, tokens)
    if entry_point is not None and entry_point not in analysis.module.bound:
        raise ValueError(f"entry point {entry_point!r} is not defined at module level")
    prose = _prose_tokens(tree, lines, tokens)
    anchored = _prose_words(prose)
    renamables, renamable_bindings = analysis.renamables(frozenset(reserved))
    renamables = {name: renamable for name, renamable in renamables.items() if names.can_rename(name, anchored)}
    entry_renamable = (analysis.module, entry_point) in renamable_bindings

    taken = set(re.findall(_IDENTIFIER, code)) | set(reserved)

    variants: list[Variant] = []
    seen = {code, *exclude}
    for _ in range(n * _ATTEMPTS_PER_VARIANT if renamables else 0):
        if len(variants) == n:
            break
        chosen = (
            renamables
            if names_per_variant is None
            else {
                name: renamables[name]
                for name in rng.sample(sorted(renamables), min(names_per_variant, len(renamables)))
            }
        )
        renames = _draw_renames(chosen, names, anchored, taken, rng)
        text = _apply_renames(code, lines, renamables, prose, renames)
        if text in seen:
            continue
        seen.add(text)
        new_entry_point = renames.get(entry_point, entry_point) if entry_renamable else entry_point
        variants.append(Variant(text=text, entry_point=new_entry_point, renames=renames))
    return variants


def replay_renames(
    code: str, entry_point: str, renames: Mapping[str, str], *, reserved: Collection[str] = ()
) -> Variant | None:
    """`code` with a given rename map applied through the same scope analysis
    as `make_variants`: another text's renaming replayed on this one (a
    mutated text's neighbours are its original's variants, replayed). Names
    this code does not bind renamably, and new names it already uses, are
    left out; None when nothing is left to rename."""
    tree = _parse(code)
    lines = io.StringIO(code).readlines()
    tokens = _tokenize(code)
    analysis = _ScopeAnalysis(tree, lines, tokens)
    renamables, renamable_bindings = analysis.renamables(frozenset(reserved))
    taken = set(re.findall(_IDENTIFIER, code)) | set(reserved)
    applied = {
        old: new for old, new in renames.items() if old in renamables and new not in taken and is_user_identifier(new)
    }
    if not applied:
        return None
    text = _apply_renames(code, lines, renamables, _prose_tokens(tree, lines, tokens), applied)
    entry_renamable = (analysis.module, entry_point) in renamable_bindings
    return Variant(
        text=text,
        entry_point=applied.get(entry_point, entry_point) if entry_renamable else entry_point,
        renames=applied,
    )


def dynamic_names(code: str) -> frozenset[str]:
    """The names of `code`'s bindings that it may reach by string at run time, which
    `make_variants` never renames (module docstring)."""
    return _ScopeAnalysis(_parse(code), io.StringIO(code).readlines(), _tokenize(code)).dynamic_names()


def _parse(code: str) -> ast.Module:
    try:
        return ast.parse(code)
    except SyntaxError as error:
        raise ValueError(f"code does not parse: line {error.lineno}: {error.msg}") from error
    except ValueError as error:  # e.g. null bytes
        raise ValueError(f"code does not parse: {error}") from error


def _tokenize(code: str) -> list[tokenize.TokenInfo]:
    try:
        return list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError) as error:
        raise ValueError(f"code does not tokenize: {error}") from error


def _char_col(lines: Sequence[str], line: int, byte_col: int) -> int:
    """AST columns count UTF-8 bytes; tokenize and string slicing count characters."""
    text = lines[line - 1] if line <= len(lines) else ""
    return byte_col if text.isascii() else len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


# ---------------------------------------------------------------------------
# Scope analysis


@dataclass(eq=False)
class _Scope:
    kind: str  # "module", "function", "class" or "comprehension"
    parent: _Scope | None
    bound: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)


Binding = tuple[_Scope, str]
Definition = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class _Renamable:
    positions: list[Position]


@dataclass(frozen=True)
class _NamespaceRead:
    """A run-time read of a namespace at `scope`: the enclosing function's, the module's, or
    every function's (a frame's f_locals); `builtin` is the callee that makes it one only if it
    is the builtin of that name."""

    scope: _Scope
    builtin: str | None = None
    function_namespace: bool = False
    module_namespace: bool = False
    every_function: bool = False


def _enclosing_function(scope: _Scope) -> _Scope:
    """The function (or module, or class body) whose namespace a read in `scope` sees; a
    comprehension counts as its function's."""
    while scope.kind == "comprehension":
        scope = scope.parent
    return scope


def _within(scope: _Scope, outer: _Scope) -> bool:
    while scope is not None:
        if scope is outer:
            return True
        scope = scope.parent
    return False


class _ScopeAnalysis(ast.NodeVisitor):
    """Resolves each identifier occurrence to its binding and finds which bindings may be renamed."""

    def __init__(self, tree: ast.Module, lines: Sequence[str], tokens: Sequence[tokenize.TokenInfo]):
        self.module = _Scope("module", None)
        self._scope = self.module
        self._lines = lines
        self._name_tokens = [(*tok.start, tok.string) for tok in tokens if tok.type == token.NAME]
        # Occurrences are resolved once every binding is known; None marks an unlocatable one.
        self._occurrences: list[tuple[_Scope, str, Position | None]] = []
        self._keywords: list[tuple[_Scope, str, str, Position | None]] = []
        self._frozen_requests: list[Binding] = []
        self._definitions: dict[Binding, list[Definition]] = defaultdict(list)
        self._definition_scopes: dict[Definition, _Scope] = {}
        self._parameter_scopes: dict[str, list[_Scope]] = defaultdict(list)
        self._bind_events: Counter[Binding] = Counter()
        self._self_documenting = False
        # Run-time name lookups, resolved once every binding is known (`_dynamic_bindings`).
        self._string_names: set[str] = set()
        self._namespace_reads: list[_NamespaceRead] = []
        self._introspections: list[tuple[_Scope, str | None, bool]] = []  # (scope, name or None: unknown, whole?)
        self._not_functions: list[tuple[_Scope, str]] = []  # imports and classes: their __name__ is no def's
        self.visit(tree)

    def renamables(self, reserved: frozenset[str]) -> tuple[dict[str, _Renamable], set[Binding]]:
        """Renamable names, in order of first occurrence, with every position to edit; and the
        bindings they cover. A name can have renamable and frozen bindings at once."""
        frozen = {binding for scope, name in self._frozen_requests if (binding := self._resolve(scope, name))}
        positions: dict[Binding, list[Position]] = defaultdict(list)
        referenced: list[tuple[_Scope, Binding]] = []
        for scope, name, position in [*self._occurrences, *self._keyword_occurrences()]:
            binding = self._resolve(scope, name)
            if binding is None:
                continue
            referenced.append((scope, binding))
            if position is None or binding[0].kind == "class":
                frozen.add(binding)
            else:
                positions[binding].append(position)
        frozen |= self._dynamic_bindings(referenced)
        by_name: dict[str, _Renamable] = {}
        renamable_bindings = set()
        for binding, places in sorted(positions.items(), key=lambda item: min(item[1])):
            name = binding[1]
            if binding in frozen or not is_user_identifier(name) or name in reserved:
                continue
            renamable_bindings.add(binding)
            by_name.setdefault(name, _Renamable([])).positions.extend(places)
        return by_name, renamable_bindings

    def dynamic_names(self) -> frozenset[str]:
        """The names of every binding the program may reach by string (module docstring)."""
        referenced = [
            (scope, binding)
            for scope, name, _ in self._occurrences
            if (binding := self._resolve(scope, name)) is not None
        ]
        return frozenset(name for _, name in self._dynamic_bindings(referenced))

    def _dynamic_bindings(self, referenced: Sequence[tuple[_Scope, Binding]]) -> set[Binding]:
        """The bindings a run-time lookup may reach, among those `referenced` (scope of an
        occurrence, the binding it resolves to)."""
        whole: set[_Scope] = set()  # functions left alone whole
        module_read = False
        for read in self._namespace_reads:
            if read.builtin is not None and self._resolve(read.scope, read.builtin) is not None:
                continue  # the program's own function of that name, not the builtin
            function = _enclosing_function(read.scope)
            if read.function_namespace and function.kind != "module":
                whole.add(function)
            module_read |= read.module_namespace or (read.function_namespace and function.kind == "module")
            if read.every_function:
                whole.update(self._definition_scopes.values())
        frozen: set[Binding] = set()
        not_functions = {binding for scope, name in self._not_functions if (binding := self._resolve(scope, name))}
        for scope, name, is_code in self._introspections:
            binding = self._resolve(scope, name) if name is not None else None
            if binding in not_functions or binding is None and name is not None and hasattr(builtins, name):
                continue  # a module's, class's or builtin's name: never renamed
            definitions = self._definitions.get(binding, []) if binding is not None else []
            if len(definitions) == 1 and self._bind_events[binding] == 1:
                frozen.add(binding)
                if is_code:
                    whole.add(self._definition_scopes[definitions[0]])
            else:  # which function it is is known only at run time: every one
                frozen.update(self._definitions)
                if is_code:
                    whole.update(self._definition_scopes.values())
        for scope, binding in referenced:
            owner = binding[0]
            if (
                binding[1] in self._string_names
                or (module_read and owner is self.module)
                or any(
                    _within(owner, function) or (owner.kind != "module" and _within(scope, function))
                    for function in whole
                )
            ):  # a function's own names and the closure's it uses
                frozen.add(binding)
        return frozen

    def _keyword_occurrences(self) -> list[tuple[_Scope, str, Position | None]]:
        """Keyword arguments of calls to names bound in the module, as occurrences of parameters.

        A call to a name bound only by one def passes the keyword to that def's
        parameter, which is renamed with it. Any other callee of the module
        (a lambda, a rebound or decorated name, a function passed as an
        argument) may reach any parameter of that name: those keep their names,
        marked by a None position. Calls to builtins and imports are left alone.
        """
        occurrences = []
        for scope, callee, keyword, position in self._keywords:
            binding = self._resolve(scope, callee)
            if binding is None:
                continue
            definitions = self._definitions.get(binding, [])
            if len(definitions) == 1 and self._bind_events[binding] == 1:
                if keyword in _keyword_parameter_names(definitions[0]):
                    occurrences.append((self._definition_scopes[definitions[0]], keyword, position))
            else:
                occurrences += [(owner, keyword, None) for owner in self._parameter_scopes[keyword]]
        return occurrences

    def _resolve(self, scope: _Scope, name: str) -> Binding | None:
        """The binding `name` refers to in `scope`; None for builtins and unknown globals."""
        if name in scope.declared_global:
            return (self.module, name) if name in self.module.bound else None
        if name in scope.bound:
            return scope, name
        outer = scope.parent
        while outer is not None:
            if name in outer.declared_global or outer.kind == "module":
                return (self.module, name) if name in self.module.bound else None
            if outer.kind != "class" and name in outer.bound:
                return outer, name
            outer = outer.parent
        return None

    # -- recording ----------------------------------------------------------

    def _bind(self, scope: _Scope, name: str) -> None:
        if name in scope.declared_global:
            self.module.bound.add(name)
            self._bind_events[self.module, name] += 1
        elif name not in scope.declared_nonlocal:
            scope.bound.add(name)
            self._bind_events[scope, name] += 1

    def _occurs(self, scope: _Scope, name: str, line: int, byte_col: int) -> None:
        position = None if self._self_documenting else self._locate(name, line, byte_col)
        self._occurrences.append((scope, name, position))

    def _occurs_at_token(self, scope: _Scope, name: str, node: ast.AST, after: str | None = None) -> None:
        """Record `name` for statements whose AST gives no position for it (def, global,
        except ... as): the first NAME token `name` from the statement's start, after the
        keyword `after` if given."""
        start = (node.lineno, _char_col(self._lines, node.lineno, node.col_offset))
        first = bisect.bisect_left(self._name_tokens, start, key=lambda tok: tok[:2])
        tokens = itertools.islice(self._name_tokens, first, None)
        if after is not None:
            tokens = itertools.dropwhile(lambda tok: tok[2] != after, tokens)
            next(tokens, None)
        position = next(((line, col) for line, col, text in tokens if text == name), None)
        self._occurrences.append((scope, name, position))

    def _locate(self, name: str, line: int, byte_col: int) -> Position | None:
        """The character position of `name`, or None if the source does not have it there."""
        col = _char_col(self._lines, line, byte_col)
        text = self._lines[line - 1] if line <= len(self._lines) else ""
        before, after = text[col - 1 : col] if col else "", text[col + len(name) : col + len(name) + 1]
        if text[col : col + len(name)] != name or _is_word_char(before) or _is_word_char(after):
            return None
        return line, col

    @contextlib.contextmanager
    def _new_scope(self, kind: str) -> Iterator[_Scope]:
        scope = self._scope = _Scope(kind, self._scope)
        yield scope
        self._scope = scope.parent

    def _function(self, node: Definition | ast.Lambda) -> None:
        """Parameters and body in a new scope; defaults and annotations belong to the enclosing one."""
        parameters = _parameters(node.args)
        for expression in [*node.args.defaults, *node.args.kw_defaults, *(p.annotation for p in parameters)]:
            if expression is not None:
                self.visit(expression)
        is_method = self._scope.kind == "class"
        with self._new_scope("function") as scope:
            for parameter in parameters:
                self._bind(scope, parameter.arg)
                self._occurs(scope, parameter.arg, parameter.lineno, parameter.col_offset)
                self._parameter_scopes[parameter.arg].append(scope)
                if is_method:
                    self._frozen_requests.append((scope, parameter.arg))
            for statement in node.body if isinstance(node.body, list) else [node.body]:
                self.visit(statement)
        if not isinstance(node, ast.Lambda):
            self._definition_scopes[node] = scope

    # -- visitors -----------------------------------------------------------

    def visit_FunctionDef(self, node: Definition) -> None:
        for expression in [*node.decorator_list, node.returns]:
            if expression is not None:
                self.visit(expression)
        scope = self._scope
        self._bind(scope, node.name)
        self._occurs_at_token(scope, node.name, node)
        owner = self.module if node.name in scope.declared_global else scope
        self._definitions[owner, node.name].append(node)
        self._function(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._function(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expression in [*node.decorator_list, *node.bases, *node.keywords]:
            self.visit(expression)
        self._bind(self._scope, node.name)
        self._frozen_requests.append((self._scope, node.name))
        self._not_functions.append((self._scope, node.name))
        with self._new_scope("class"):
            for statement in node.body:
                self.visit(statement)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        """The first iterable is evaluated outside; everything else in the comprehension's own scope."""
        first, *rest = node.generators
        self.visit(first.iter)
        parts = [first.target, *first.ifs, *rest]
        parts += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        with self._new_scope("comprehension"):
            for part in parts:
                self.visit(part)

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            self._bind(self._scope, node.id)
        self._occurs(self._scope, node.id, node.lineno, node.col_offset)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        """A walrus inside a comprehension binds in the enclosing function or module."""
        self.visit(node.value)
        scope = self._scope
        while scope.kind == "comprehension":
            scope = scope.parent
        self._bind(scope, node.target.id)
        self._occurs(scope, node.target.id, node.target.lineno, node.target.col_offset)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name != "*":
                name = alias.asname or alias.name.split(".")[0]
                self._bind(self._scope, name)
                self._frozen_requests.append((self._scope, name))
                self._not_functions.append((self._scope, name))

    visit_ImportFrom = visit_Import

    def visit_Global(self, node: ast.Global) -> None:
        self._scope.declared_global.update(node.names)
        for name in node.names:
            self._occurs_at_token(self._scope, name, node)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self._scope.declared_nonlocal.update(node.names)
        for name in node.names:
            self._occurs_at_token(self._scope, name, node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name is not None:
            self._bind(self._scope, node.name)
            self._occurs_at_token(self._scope, node.name, node, after="as")
        for statement in node.body:
            self.visit(statement)

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name):
            for keyword in node.keywords:
                if keyword.arg is not None:
                    position = self._locate(keyword.arg, keyword.lineno, keyword.col_offset)
                    self._keywords.append((self._scope, node.func.id, keyword.arg, position))
        self._record_lookup_call(node)

    # -- run-time name lookups (module docstring) ----------------------------

    def _record_lookup_call(self, node: ast.Call) -> None:
        func = node.func
        callee = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if isinstance(func, ast.Name):
            if callee in _FUNCTION_NAMESPACE_READS and not node.args and not node.keywords:
                self._namespace_reads.append(_NamespaceRead(self._scope, callee, function_namespace=True))
            elif callee == "globals":
                self._namespace_reads.append(_NamespaceRead(self._scope, callee, module_namespace=True))
            elif callee in _CODE_RUNNERS or callee == "compile":
                self._record_code_run(node, callee)
        if callee in _MODULE_IMPORTERS and any(isinstance(a, ast.Name) and a.id == "__name__" for a in node.args):
            self._namespace_reads.append(_NamespaceRead(self._scope, module_namespace=True))
        if callee in _INTROSPECTORS and node.args:
            self._record_introspection(node.args[0], is_code=True)

    def _record_code_run(self, node: ast.Call, callee: str) -> None:
        """eval / exec / compile: the names in literal code; for other code run in the caller's
        own namespaces, those namespaces (compile's code runs later, through eval or exec)."""
        code = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "source"), None)
        if isinstance(code, ast.Constant) and isinstance(code.value, str | bytes):
            text = code.value if isinstance(code.value, str) else code.value.decode("latin-1")
            self._string_names.update(re.findall(_IDENTIFIER, text))
            return
        own_namespaces = len(node.args) > 1 or any(k.arg in ("globals", "locals") for k in node.keywords)
        if callee != "compile" and not own_namespaces:
            self._namespace_reads.append(
                _NamespaceRead(self._scope, callee, function_namespace=True, module_namespace=True)
            )

    def _record_introspection(self, receiver: ast.expr, *, is_code: bool) -> None:
        """`receiver.__name__` (or its code, `is_code`): the name of a function, or None where
        the receiver is no plain name. A class's name (``type(x).__name__``) is never renamed."""
        if isinstance(receiver, ast.Name):
            self._introspections.append((self._scope, receiver.id, is_code))
        elif not (
            isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Name)
            and receiver.func.id == "type"
            or isinstance(receiver, ast.Attribute)
            and receiver.attr == "__class__"
        ):
            self._introspections.append((self._scope, None, is_code))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.generic_visit(node)
        if node.attr in _NAME_ATTRIBUTES or node.attr in _CODE_ATTRIBUTES:
            self._record_introspection(node.value, is_code=node.attr in _CODE_ATTRIBUTES)
        elif node.attr == "f_locals":  # some frame's locals: any function's, or the module's
            self._namespace_reads.append(_NamespaceRead(self._scope, module_namespace=True, every_function=True))
        elif (
            node.attr == "f_globals"
            or node.attr == "modules"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            self._namespace_reads.append(_NamespaceRead(self._scope, module_namespace=True))

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value.isidentifier():
            self._string_names.add(node.value)

    def visit_Expr(self, node: ast.Expr) -> None:
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            self.generic_visit(node)  # a docstring or other bare string is text the program never looks up

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        """In f"{x=}" the name is also output text, so renaming `x` would change the string."""
        previous = None
        for value in node.values:
            documented = isinstance(previous, ast.Constant) and str(previous.value).rstrip().endswith("=")
            self._self_documenting, outer = documented or self._self_documenting, self._self_documenting
            if not isinstance(value, ast.Constant):  # literal text between fields is part of no name
                self.visit(value)
            self._self_documenting = outer
            previous = value

    def _capture(self, node: ast.MatchAs | ast.MatchStar | ast.MatchMapping) -> None:
        """Pattern captures have no position of their own in the AST; they keep their names."""
        name = node.rest if isinstance(node, ast.MatchMapping) else node.name
        if name is not None:
            self._bind(self._scope, name)
            self._frozen_requests.append((self._scope, name))
        self.generic_visit(node)

    visit_MatchAs = visit_MatchStar = visit_MatchMapping = _capture


def _parameters(arguments: ast.arguments) -> list[ast.arg]:
    return [
        *arguments.posonlyargs,
        *arguments.args,
        *([arguments.vararg] if arguments.vararg else []),
        *arguments.kwonlyargs,
        *([arguments.kwarg] if arguments.kwarg else []),
    ]


def _keyword_parameter_names(definition: Definition) -> set[str]:
    """Parameters a caller can pass by keyword (positional-only ones it cannot)."""
    return {parameter.arg for parameter in [*definition.args.args, *definition.args.kwonlyargs]}


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


# ---------------------------------------------------------------------------
# Drawing replacement names


def _draw_renames(
    renamables: dict[str, _Renamable],
    names: NameProposer,
    anchored: frozenset[str],
    taken: set[str],
    rng: random.Random,
) -> dict[str, str]:
    """A new name for each renamable name, keeping its `anchored` words, distinct from each other
    and from everything in `taken`."""
    renames: dict[str, str] = {}
    for original in renamables:
        for _ in range(_DRAWS_PER_NAME):
            new = names.draw(original, rng, anchored)
            if new != original and is_user_identifier(new) and new not in taken and new not in renames.values():
                renames[original] = new
                break
    return renames


# ---------------------------------------------------------------------------
# Rewriting the text


def _prose_tokens(
    tree: ast.Module, lines: Sequence[str], tokens: Sequence[tokenize.TokenInfo]
) -> list[tokenize.TokenInfo]:
    """Comment tokens and the string tokens of docstrings: text that mentions names in prose."""
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not node.body:
            continue
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            start = (first.lineno, _char_col(lines, first.lineno, first.col_offset))
            end = (first.end_lineno, _char_col(lines, first.end_lineno, first.end_col_offset))
            spans.append((start, end))
    return [
        tok
        for tok in tokens
        if tok.type == token.COMMENT
        or (tok.type == token.STRING and any(start <= tok.start and tok.end <= end for start, end in spans))
    ]


def _prose_words(prose: Sequence[tokenize.TokenInfo]) -> frozenset[str]:
    """The English words of docstrings and comments (doctests and code references aside), in lower case.

    Names echo them: HumanEval's `numbers` is "a list of numbers" in the
    docstring, where a model reads it before it meets the name. Prose stays as
    it is, so a variant that renamed `numbers` would lose that echo while the
    original keeps it: names keep these words, and change the others.
    """
    words = set()
    for tok in prose:
        for line, role, spans in _prose_lines(tok.string):
            if role == "prose":
                words.update(
                    match.group("name").lower()
                    for match in _WORD.finditer(line)
                    if is_english_word(match.group("name")) and not any(a <= match.start() < b for a, b in spans)
                )
    return frozenset(words)


def _apply_renames(
    code: str,
    lines: Sequence[str],
    renamables: dict[str, _Renamable],
    prose: Sequence[tokenize.TokenInfo],
    renames: dict[str, str],
) -> str:
    line_starts = [0, *itertools.accumulate(len(line) for line in lines)]

    def offset(position: Position) -> int:
        return line_starts[position[0] - 1] + position[1]

    edits = {}
    for old, new in renames.items():
        for position in renamables[old].positions:
            edits[offset(position)] = (len(old), new)
    for tok in prose:
        rename = _rename_in_prose if tok.type == token.COMMENT else _rename_in_string
        text = rename(tok.string, renames)
        if text != tok.string:
            edits[offset(tok.start)] = (offset(tok.end) - offset(tok.start), text)
    pieces, cursor = [], 0
    for start in sorted(edits):
        length, text = edits[start]
        pieces += [code[cursor:start], text]
        cursor = start + length
    pieces.append(code[cursor:])
    return "".join(pieces)


def _rename_in_string(literal: str, renames: dict[str, str]) -> str:
    head = _STRING_HEAD.match(literal)
    quote = head.group(1)
    body = literal[head.end() : len(literal) - len(quote)]
    return literal[: head.end()] + _rename_in_prose(body, renames) + quote


def _rename_in_prose(text: str, renames: dict[str, str]) -> str:
    """Rename the code in prose: doctest source lines whole (their output stays), and in
    other lines only what is unambiguously code (`_code_spans`, names that are not English)."""
    pieces = []
    for line, role, spans in _prose_lines(text):
        pieces.append(line if role == "output" else _rename_words(line, renames, spans))
    return "".join(pieces)


def _prose_lines(text: str) -> Iterator[tuple[str, str, list[tuple[int, int]]]]:
    """Each line of `text` (with its end) as "doctest" source, doctest "output" or "prose",
    with the character ranges that are code (the whole line for doctest source)."""
    in_doctest_output = in_parameters = False
    for line in text.splitlines(keepends=True):
        if _DOCTEST_SOURCE.match(line):
            in_doctest_output = True
            yield line, "doctest", [(0, len(line))]
            continue
        if in_doctest_output and line.strip():
            yield line, "output", []
            continue
        in_doctest_output = False
        if _PARAM_SECTION.match(line):
            in_parameters = True
        elif not line.strip():
            in_parameters = False
        yield line, "prose", _code_spans(line, in_parameters=in_parameters and not _UNDERLINE.match(line))


def _code_spans(line: str, *, in_parameters: bool) -> list[tuple[int, int]]:
    """Character ranges of `line` that are code: `backticks`, a call's name and argument list,
    a Sphinx ":param name:" field, and the name an entry of a parameter section documents."""
    spans = [match.span() for match in _BACKTICKS.finditer(line)]
    for match in _CALL.finditer(line):
        depth, end = 0, len(line)
        for position in range(match.end() - 1, len(line)):
            depth += {"(": 1, ")": -1}.get(line[position], 0)
            if depth == 0:
                end = position + 1
                break
        spans.append((match.start(), end))
    spans += [match.span(1) for match in _PARAM_FIELD.finditer(line)]
    entry = _PARAM_ENTRY.match(line) if in_parameters else None
    if entry is not None:
        spans.append(entry.span(1))
    return spans


def _rename_words(line: str, renames: dict[str, str], code_spans: Sequence[tuple[int, int]]) -> str:
    """Rename words of `line` inside `code_spans` (but not in their quoted strings), and
    outside them the names that cannot be English words (`lst`, `n`, `paren_string`)."""
    quoted = [match.span() for span in code_spans for match in _QUOTED.finditer(line, *span)]

    def replace(match: re.Match[str]) -> str:
        name, start = match.group("name"), match.start()
        if name not in renames or any(a <= start < b for a, b in quoted):
            return name
        if any(a <= start < b for a, b in code_spans):
            return renames[name]
        if is_english_word(name) or _ABBREVIATION_DOT.match(line, match.end()):
            return name
        return renames[name]

    return _WORD.sub(replace, line)
