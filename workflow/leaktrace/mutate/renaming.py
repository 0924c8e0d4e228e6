"""Mutations T2a and T2b (Type-2 clones): user-defined names renamed consistently.

T2a renames each name to synonyms of its word parts, T2b to a random string
of 8 lower-case letters. Both go through the scope analysis of
`leaktrace.variants.renaming`, which renames a binding only where every
occurrence of it can change together, and never a builtin, an attribute, an
imported name, a class member, a method parameter (`self` included) or a
name in `protected`. CodeSnitch's own T2b renames builtins, `self` and string
contents as well, which breaks programs; here the entry point and every
identifier of the sample's tests are protected, so the tests still call what
they called.

T2a attempts every name T2b renames (`SynonymNames`): CodeSnitch renames
"identifiers with randomly selected synonyms", all of them, so a name is not
skipped because its words have no synonym (`i`, `numbers` where only the
table knows `nums`) or because the docstring uses its word (SrDetection's
variants keep those; CodeSnitch's mutation does not). Each name gets, in this
order, a synonym of its words (the variants' `NameProposer`: table entries
and WordNet), else an abbreviation (each word of four or more letters without
its inner vowels, as programmers shorten: `count` -> `cnt`, `numbers` ->
`nmbrs`), else the name with a number (`x` -> `x2`, the usual second name);
which one it got is recorded (`sources`). `name_kinds` says what each name
is (parameter, local, global, function, class), for the counts per kind.
"""

from __future__ import annotations

import ast
import random
import string
from collections import Counter
from collections.abc import Collection

from leaktrace.variants.naming import NameProposer, is_word, recase, split_identifier
from leaktrace.variants.renaming import Variant, make_variants

RANDOM_NAME_LENGTH = 8
# Synonym draws per name before the fallbacks (a draw may keep every word, or collide).
SYNONYM_DRAWS = 10
NAME_SOURCES = ("synonym", "abbreviation", "numbered", "random")
NAME_KINDS = ("parameter", "local", "global", "function", "class")
_VOWELS = frozenset("aeiou")


class RandomNames:
    """A name proposer (the interface of `NameProposer`) that draws CodeSnitch's
    T2b names: 8 random lower-case letters, whatever the name said."""

    def __init__(self):
        self.sources: dict[tuple[str, str], str] = {}

    def can_rename(self, name: str, fixed: Collection[str] = ()) -> bool:
        return True

    def draw(self, name: str, rng: random.Random, fixed: Collection[str] = ()) -> str:
        new = "".join(rng.choices(string.ascii_lowercase, k=RANDOM_NAME_LENGTH))
        self.sources[name, new] = "random"
        return new


def abbreviation(name: str) -> str | None:
    """`name` with each word of four or more letters written without its inner
    vowels (`count` -> `cnt`, `max_value` -> `max_vl`); None when nothing shortens."""
    pieces = []
    for piece in split_identifier(name):
        if is_word(piece) and len(piece) >= 4 and piece.isascii():
            lower = piece.lower()
            short = lower[0] + "".join(c for c in lower[1:] if c not in _VOWELS)
            pieces.append(recase(short, piece) if len(short) >= 2 else piece)
        else:
            pieces.append(piece)
    shortened = "".join(pieces)
    return shortened if shortened != name and shortened.isidentifier() else None


class SynonymNames:
    """CodeSnitch's T2a names (the interface of `NameProposer`): every name can
    be renamed; successive draws for one name try its synonyms, then its
    abbreviation, then the name (or its abbreviation) with a number 2-9, so a
    draw that collides with a name in use is followed by another kind of
    name. Make one per program: it counts the draws of each name."""

    def __init__(self, names: NameProposer):
        self._names = names
        self._draws: Counter = Counter()
        self.sources: dict[tuple[str, str], str] = {}

    def can_rename(self, name: str, fixed: Collection[str] = ()) -> bool:
        return True

    def draw(self, name: str, rng: random.Random, fixed: Collection[str] = ()) -> str:
        """The docstring's words (`fixed`) are not kept: CodeSnitch renames every identifier."""
        attempt = self._draws[name]
        self._draws[name] += 1
        synonyms = SYNONYM_DRAWS if self._names.can_rename(name) else 0
        if attempt < synonyms:
            new, source = self._names.draw(name, rng), "synonym"
        else:
            short = abbreviation(name)
            fallbacks = ([short] if short else []) + [f"{short or name}{k}" for k in range(2, 10)]
            new = fallbacks[min(attempt - synonyms, len(fallbacks) - 1)]
            source = "abbreviation" if new == short else "numbered"
        self.sources[name, new] = source
        return new


def name_kinds(code: str) -> dict[str, str]:
    """What each name the program binds is, by its first binding in the source
    (a name bound as several kinds is counted once): a function or class
    definition, a parameter (of a function or lambda), a local (bound inside a
    function) or a global (bound at module level)."""
    kinds: dict[str, tuple[tuple[int, int], str]] = {}

    def note(name: str, node: ast.AST, kind: str) -> None:
        place = (node.lineno, node.col_offset)
        if name not in kinds or place < kinds[name][0]:
            kinds[name] = (place, kind)

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                note(child.name, child, "class" if isinstance(child, ast.ClassDef) else "function")
            elif isinstance(child, ast.arg):
                note(child.arg, child, "parameter")
            elif isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
                note(child.id, child, "local" if in_function else "global")
            elif isinstance(child, ast.ExceptHandler) and child.name:
                note(child.name, child, "local" if in_function else "global")
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(ast.parse(code), False)
    return {name: kind for name, (_, kind) in kinds.items()}


def rename(
    code: str,
    entry_point: str | None,
    names: NameProposer | SynonymNames | RandomNames,
    rng: random.Random,
    protected: Collection[str],
) -> Variant | None:
    """`code` with its renamable names renamed by `names`; `entry_point` and `protected`
    keep theirs (without an entry point, the first top-level function keeps its name, as
    callers may call it). None when no name can change."""
    if entry_point is None:
        entry_point = next(
            (node.name for node in ast.parse(code).body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))),
            None,
        )
        if entry_point is None:
            raise ValueError("renaming needs an entry point or a top-level function")
    variants = make_variants(code, entry_point, names, n=1, rng=rng, reserved={entry_point, *protected})
    return variants[0] if variants else None


def rename_details(code: str, renamed: Variant | None, names: SynonymNames | RandomNames) -> dict:
    """The renames of a T2 text, with each old name's kind and its new name's source."""
    renames = renamed.renames if renamed else {}
    kinds = name_kinds(code)
    return {
        "renames": renames,
        "kinds": {old: kinds.get(old, "local") for old in renames},
        "sources": {old: names.sources.get((old, new), "synonym") for old, new in renames.items()},
    }
