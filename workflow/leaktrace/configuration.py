"""How an experiment file (``--configfile``) lays over ``config/config.yaml``.

Snakemake merges mappings key by key and replaces lists and scalars whole.
leaktrace keeps that and adds one rule for the mappings whose keys name what
a run builds (``NAMED_COLLECTIONS``): an entry set to ``null`` in the overlay
removes the default's entry. So an experiment file adds an entry by naming a
new key, changes one by naming its keys, and drops one with ``null``.
Collections whose entries are only meaningful together (the models an audit
compares, the epochs, ratios and seeds trained) are lists, so an overlay
replaces them whole and never inherits a model it does not build."""

from __future__ import annotations

NAMED_COLLECTIONS = (("benchmarks",), ("corpora",), ("score", "methods"), ("leakage", "scans"), ("leakage", "clean"),
                     ("counterfactual", "sources"))


def drop_removed_entries(config: dict) -> list[str]:
    """Delete, in place, every entry of a named collection whose value is
    None; return their dotted names (for the log)."""
    removed = []
    for path in NAMED_COLLECTIONS:
        collection = config
        for key in path:
            collection = collection.get(key) if isinstance(collection, dict) else None
        if not isinstance(collection, dict):
            continue
        for name in [name for name, value in collection.items() if value is None]:
            del collection[name]
            removed.append(".".join((*path, name)))
    return removed
