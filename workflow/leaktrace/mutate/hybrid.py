"""The Hybrid mutation: T3's statement rewrites on top of T2a's synonyms (CodeSnitch: T3 at 0.8).

The similarity target applies to the statement step, measured against the
renamed text it starts from, as CodeSnitch applies its T3 to T2a's output.
"""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import dataclass

from leaktrace.mutate.renaming import SynonymNames, rename, rename_details
from leaktrace.mutate.statements import StatementMutation, rewrite_statements
from leaktrace.variants.naming import NameProposer


@dataclass(frozen=True)
class HybridMutation:
    renames: dict  # rename_details: renames, kinds, sources
    statements: StatementMutation


def hybrid(
    code: str, entry_point: str, names: NameProposer, target: float, rng: random.Random, protected: Collection[str]
) -> HybridMutation:
    synonyms = SynonymNames(names)
    renamed = rename(code, entry_point, synonyms, rng, protected)
    text = renamed.text if renamed else code
    statements = rewrite_statements(text, target, rng, protected={entry_point, *protected})
    return HybridMutation(renames=rename_details(code, renamed, synonyms), statements=statements)
