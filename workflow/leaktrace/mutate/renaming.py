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
"""

from __future__ import annotations

import ast
import random
import string
from collections.abc import Collection

from leaktrace.variants.naming import NameProposer
from leaktrace.variants.renaming import Variant, make_variants

RANDOM_NAME_LENGTH = 8


class RandomNames:
    """A name proposer (the interface of `NameProposer`) that draws CodeSnitch's
    T2b names: 8 random lower-case letters, whatever the name said."""

    def can_rename(self, name: str, fixed: Collection[str] = ()) -> bool:
        return True

    def draw(self, name: str, rng: random.Random, fixed: Collection[str] = ()) -> str:
        return "".join(rng.choices(string.ascii_lowercase, k=RANDOM_NAME_LENGTH))


def rename(code: str, entry_point: str | None, names: NameProposer | RandomNames, rng: random.Random,
           protected: Collection[str]) -> Variant | None:
    """`code` with its renamable names renamed by `names`; `entry_point` and `protected`
    keep theirs (without an entry point, the first top-level function keeps its name, as
    callers may call it). None when no name can change."""
    if entry_point is None:
        entry_point = next((node.name for node in ast.parse(code).body
                            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if entry_point is None:
            raise ValueError("renaming needs an entry point or a top-level function")
    variants = make_variants(code, entry_point, names, n=1, rng=rng, reserved={entry_point, *protected})
    return variants[0] if variants else None
