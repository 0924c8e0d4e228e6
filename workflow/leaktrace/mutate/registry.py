"""Every mutation by name, its place in the clone-type order, and one call that applies it.

Names: ``T1``, ``T2a``, ``T2b``, ``T3-<target>`` (e.g. ``T3-0.7``) and
``hybrid-<target>`` (T3 at that target on top of T2a; CodeSnitch's is
``hybrid-0.8``). The clone-type order (`clone_key`) is what Setting 2 reads:
under a Type-l definition the mutations up to l keep membership. Type 1 <
Type 2 < Type 3, and within Type 3 a higher similarity is the closer clone.

Languages: Python (libcst and the variants' scope analysis), Java and C++
(tree-sitter: `tree_renaming`, `tree_statements`); T1 formats all three.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from leaktrace.mutate import tree_renaming, tree_statements
from leaktrace.mutate.formatting import reformat
from leaktrace.mutate.hybrid import hybrid
from leaktrace.mutate.renaming import RandomNames, SynonymNames, rename, rename_details
from leaktrace.mutate.statements import line_similarity, rewrite_statements
from leaktrace.variants.naming import NameProposer

KINDS = ("T1", "T2a", "T2b", "T3", "hybrid")
_CLONE_TYPE = {"T1": 1, "T2a": 2, "T2b": 2, "T3": 3, "hybrid": 3}


@dataclass(frozen=True)
class Mutation:
    kind: str
    target: float | None = None  # T3 and hybrid: the target similarity of the statement step

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown mutation kind {self.kind!r}; expected one of {KINDS}")
        if (self.target is not None) != (self.kind in ("T3", "hybrid")):
            raise ValueError(f"{self.kind} {'needs' if self.target is None else 'takes no'} target similarity")

    @property
    def name(self) -> str:
        return self.kind if self.target is None else f"{self.kind}-{self.target:g}"

    @property
    def clone_key(self) -> tuple[int, float]:
        """Order of clone types: (type, -similarity); smaller is a closer clone."""
        return _CLONE_TYPE[self.kind], -(self.target if self.target is not None else 1.0)

    @classmethod
    def parse(cls, name: str) -> Mutation:
        kind, _, target = name.partition("-")
        return cls(kind, float(target) if target else None)


def configured_mutations(kinds: Sequence[str], t3_targets: Sequence[float], hybrid_target: float) -> list[Mutation]:
    """The `mutate` config block's mutations (its kinds, T3's targets and Hybrid's), in clone-type order."""
    mutations = []
    for kind in kinds:
        if kind == "T3":
            mutations += [Mutation("T3", t) for t in t3_targets]
        elif kind == "hybrid":
            mutations.append(Mutation("hybrid", hybrid_target))
        else:
            mutations.append(Mutation(kind))
    return sorted(set(mutations), key=lambda m: (m.clone_key, m.name))


@dataclass(frozen=True)
class Mutated:
    text: str
    entry_point: str
    similarity: float  # T3/hybrid: the statement step's achieved value; else unchanged lines / total lines
    reached: bool  # T3/hybrid: within one line of the target; else whether the text changed at all
    details: dict = field(default_factory=dict)  # renames, rewrites applied


def apply_mutation(
    mutation: Mutation,
    code: str,
    language: str,
    entry_point: str | None,
    rng: random.Random,
    *,
    names: NameProposer | None = None,
    protected: Collection[str] = (),
) -> Mutated:
    """`code` mutated by `mutation`. `protected` names (those the tests use) keep theirs
    and are never introduced; the entry point keeps its name."""
    if mutation.kind == "T1":
        text = reformat(code, language, rng)
        return Mutated(text, entry_point, line_similarity(code, text), text != code)
    if mutation.kind in ("T2a", "hybrid") and names is None:
        raise ValueError(f"{mutation.kind} needs a name proposer (synonyms)")
    if language.lower() in ("java", "cpp", "c++"):
        return _apply_to_tree(mutation, code, language, entry_point, rng, names, protected)
    if language.lower() != "python":
        raise ValueError(f"{mutation.name} rewrites Python, Java and C++, not {language!r}")
    if mutation.kind in ("T2a", "T2b"):
        proposer = SynonymNames(names) if mutation.kind == "T2a" else RandomNames()
        renamed = rename(code, entry_point, proposer, rng, protected)
        text = renamed.text if renamed else code
        return Mutated(
            text, entry_point, line_similarity(code, text), renamed is not None, rename_details(code, renamed, proposer)
        )
    if mutation.kind == "T3":
        result = rewrite_statements(
            code, mutation.target, rng, protected={*protected, *([entry_point] if entry_point else [])}
        )
        return Mutated(result.text, entry_point, result.similarity, result.reached, {"rewrites": list(result.rewrites)})
    result = hybrid(code, entry_point, names, mutation.target, rng, protected)
    return Mutated(
        result.statements.text,
        entry_point,
        result.statements.similarity,
        result.statements.reached,
        {**result.renames, "rewrites": list(result.statements.rewrites)},
    )


def _apply_to_tree(
    mutation: Mutation,
    code: str,
    language: str,
    entry_point: str | None,
    rng: random.Random,
    names: NameProposer | None,
    protected: Collection[str],
) -> Mutated:
    """T2a, T2b, T3 and Hybrid of Java and C++, on tree-sitter's tree (`tree_renaming`, `tree_statements`)."""
    protected = {*protected, *([entry_point] if entry_point else [])}
    details: dict = {}
    text = code
    if mutation.kind in ("T2a", "T2b", "hybrid"):
        proposer = RandomNames() if mutation.kind == "T2b" else SynonymNames(names)
        text, renames, kinds = tree_renaming.rename(code, language, proposer, rng, protected)
        details = {
            "renames": renames,
            "kinds": kinds,
            "sources": {old: proposer.sources.get((old, new), "synonym") for old, new in renames.items()},
        }
        if mutation.kind != "hybrid":
            return Mutated(text, entry_point, line_similarity(code, text), bool(renames), details)
    result = tree_statements.rewrite_statements(text, language, mutation.target, rng, protected)
    return Mutated(
        result.text, entry_point, result.similarity, result.reached, {**details, "rewrites": list(result.rewrites)}
    )
