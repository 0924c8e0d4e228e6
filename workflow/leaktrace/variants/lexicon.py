"""How often programmers choose each identifier, counted over a code corpus.

Renamed variants must read like code people write: a variant full of unusual
names looks less natural than its original by construction, and every original
would then look memorised. The words of a corpus's names tell which synonyms
programmers use, and how often.
"""

from __future__ import annotations

import builtins
import functools
import keyword
import symtable
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from leaktrace.variants.naming import is_word, split_identifier

KINDS = ("function", "variable")

# Conventional names that carry meaning of their own; never offered as replacements.
_CONVENTIONAL = frozenset({"self", "cls"})


@functools.lru_cache(maxsize=1 << 16)
def is_user_identifier(name: str) -> bool:
    """Whether `name` is one a programmer chose freely (not reserved, builtin, private or conventional)."""
    return (
        name.isidentifier()
        and not name.startswith("_")
        and not keyword.iskeyword(name)
        and not keyword.issoftkeyword(name)
        and not hasattr(builtins, name)
        and name not in _CONVENTIONAL
    )


@dataclass(frozen=True, eq=False)
class IdentifierLexicon:
    """Counts of function names (def names) and variable names (parameters and locals).

    Compared and hashed by identity, so derived tables are cached per lexicon.
    """

    functions: Counter[str] = field(default_factory=Counter)
    variables: Counter[str] = field(default_factory=Counter)
    unparsable_sources: int = 0

    def counts(self, kind: str) -> Counter[str]:
        if kind == "function":
            return self.functions
        if kind == "variable":
            return self.variables
        raise ValueError(f"unknown identifier kind {kind!r}; expected one of {KINDS}")

    def most_common(self, kind: str, limit: int | None = None) -> list[tuple[str, int]]:
        """The `limit` most frequent names of `kind` (all if None), ties broken by name so the order is stable."""
        return sorted(self.counts(kind).items(), key=lambda item: (-item[1], item[0]))[:limit]

    @functools.cached_property
    def word_counts(self) -> Counter[str]:
        """How often each lower-case word occurs in the names: a name's count goes to each of its words."""
        words: Counter[str] = Counter()
        for kind in KINDS:
            for name, count in self.counts(kind).items():
                for piece in split_identifier(name):
                    if is_word(piece):
                        words[piece.lower()] += count
        return words

    def to_records(self) -> list[dict[str, object]]:
        """One row per (kind, name), ready for a Parquet table."""
        return [
            {"kind": kind, "name": name, "count": count} for kind in KINDS for name, count in self.most_common(kind)
        ]

    @classmethod
    def from_records(cls, records: Iterable[dict[str, object]]) -> IdentifierLexicon:
        counts = {kind: Counter() for kind in KINDS}
        for record in records:
            kind = str(record["kind"])
            if kind not in counts:
                raise ValueError(f"unknown identifier kind {kind!r}; expected one of {KINDS}")
            counts[kind][str(record["name"])] += int(record["count"])
        return cls(functions=counts["function"], variables=counts["variable"])


def build_identifier_lexicon(sources: Iterable[str], *, min_count: int = 2) -> IdentifierLexicon:
    """Count user-chosen identifiers in `sources`; names seen fewer than `min_count` times are dropped.

    A name is counted once per scope that chooses it: a function named `parse`
    anywhere counts once for "function", a function with a local `line` counts
    once for "variable" however often `line` is assigned. Sources that do not
    parse are skipped and counted in `unparsable_sources`.
    """
    counts = {kind: Counter() for kind in KINDS}
    unparsable = 0
    for source in sources:
        try:
            table = symtable.symtable(source, "<corpus>", "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            unparsable += 1
            continue
        for kind, name in _chosen_identifiers(table):
            if is_user_identifier(name) and not (kind == "function" and len(name) == 1):
                counts[kind][name] += 1
    frequent = {kind: Counter({name: c for name, c in counts[kind].items() if c >= min_count}) for kind in KINDS}
    return IdentifierLexicon(
        functions=frequent["function"], variables=frequent["variable"], unparsable_sources=unparsable
    )


def _chosen_identifiers(table: symtable.SymbolTable) -> Iterator[tuple[str, str]]:
    """(kind, name) for def names, and for parameters and locals of functions, lambdas and comprehensions.

    Uses the compiler's symbol tables, which are much cheaper to build than
    Python-level ASTs. Names assigned at module or class level are left out:
    they are mostly constants and attributes, which read differently from
    local variables.
    """
    tables = [table]
    while tables:
        table = tables.pop()
        in_function = table.get_type() == "function"
        for symbol in table.get_symbols():
            if symbol.is_namespace():
                if any(space.get_type() == "function" for space in symbol.get_namespaces()):
                    yield "function", symbol.get_name()
            elif in_function and (symbol.is_parameter() or (symbol.is_local() and not symbol.is_imported())):
                yield "variable", symbol.get_name()
        tables.extend(table.get_children())
