"""Per-sample detector scores as a feature matrix: the long score tables
(one row per sample and method) pivoted to samples × methods."""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence

import numpy as np

log = logging.getLogger(__name__)


def score_lookup(scores: Iterable[dict], exclude: Collection[str] = ()) -> dict[str, dict[str, float]]:
    """method -> sample_id -> score, leaving out the ``exclude`` methods and
    scores that are not finite."""
    table: dict[str, dict[str, float]] = defaultdict(dict)
    for s in scores:
        if s["method"] not in exclude and s["score"] is not None and math.isfinite(s["score"]):
            table[s["method"]][s["sample_id"]] = float(s["score"])
    return dict(table)


def shared_methods(lookups: Sequence[dict[str, dict[str, float]]], groups: Sequence[Collection[str]]) -> list[str]:
    """The methods that scored every sample of every group in its lookup
    (group i is read from lookup i), sorted; a method that missed some sample
    is dropped (logged) rather than the sample, since the test's power is in
    its samples."""
    names = sorted(set.intersection(*(set(lookup) for lookup in lookups)))
    kept = [m for m in names if all(set(ids) <= set(lookup[m]) for lookup, ids in zip(lookups, groups, strict=True))]
    dropped = sorted(set(names) - set(kept))
    if dropped:
        log.info("features left out (not scored for every sample): %s", ", ".join(dropped))
    return kept


def feature_matrix(
    lookup: dict[str, dict[str, float]], sample_ids: Sequence[str], methods: Sequence[str]
) -> np.ndarray:
    """Rows ``sample_ids``, columns ``methods``."""
    return np.array([[lookup[m][sid] for m in methods] for sid in sample_ids], dtype=float).reshape(
        len(sample_ids), len(methods)
    )
