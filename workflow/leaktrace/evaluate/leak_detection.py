"""LessLeak-Bench's RQ4: how well corpus-free (gray-box) detectors find the
samples a leakage scan verified as leaked.

The scan's labels are the ground truth (leaked: some corpus unit is a
verified duplicate of the sample). Per detector, over the samples every
detector of the model scored: ROC AUC on all of them, and the paper's
measure, the share of leaked samples among the top k of the ranking (their
ascending perplexity is our descending score: higher = more likely a member)
on a leaked / non-leaked set balanced by random under-sampling of the larger
class (their AutoDetectLeak-Bench, deduplicated first: ``deduplicated``).
Intervals: a percentile bootstrap drawn
within each class (class sizes kept), the same draws for every detector.

RQ4 as the paper runs it ranks by perplexity: each model's table of it
(``PERPLEXITY_SCHEMA``, one row a sample) and the samples the ranking is
evaluated on (``ranking_population``).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa

from leaktrace.evaluate.bootstrap import percentile_interval, stratified_draw
from leaktrace.evaluate.metrics import roc_auc
from leaktrace.seeding import derive_seed

PERPLEXITY_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("benchmark", pa.string()),
        ("model", pa.string()),
        ("digest", pa.string()),  # SHA-1 of the scored text: identical documents share it
        ("n_tokens", pa.int32()),
        ("truncated", pa.bool_()),  # cut to the model's context
        ("loss", pa.float64()),
        ("perplexity", pa.float64()),  # mean negative log-likelihood per token, and exp of it
    ]
)


def balanced(ids: list[str], labels: np.ndarray, rng: np.random.Generator, per_class: int | None = None) -> np.ndarray:
    """Positions of a class-balanced subset: every sample of the smaller
    class and as many of the larger one, drawn without replacement; with
    ``per_class``, at most that many of each (LessLeak's 1,300: 650 a class)."""
    pos, neg = np.flatnonzero(labels), np.flatnonzero(~labels)
    n = min(pos.size, neg.size) if per_class is None else min(pos.size, neg.size, per_class)
    keep = [rows if rows.size == n else np.sort(rng.choice(rows, n, replace=False)) for rows in (pos, neg)]
    return np.sort(np.concatenate(keep))


def deduplicated(digests: dict[str, str], leaked: set[str]) -> tuple[list[str], set[str]]:
    """LessLeak's deduplication before balancing: one sample per distinct
    document (``digests``: sample id -> a digest of its text), the first id in
    sorted order; a kept sample is leaked where any sample of its document is.
    Returns the kept ids (sorted) and the leaked among them."""
    groups: dict[str, list[str]] = defaultdict(list)
    for sid in sorted(digests):
        groups[digests[sid]].append(sid)
    kept = sorted(ids[0] for ids in groups.values())
    return kept, {ids[0] for ids in groups.values() if any(i in leaked for i in ids)}


def precision_at_k(labels: np.ndarray, scores: np.ndarray, ks: list[int]) -> np.ndarray:
    """Share of positives among the k highest scores for each k, shape
    (..., len(ks)) for ``scores`` (..., n). Scores tied at the k-th place
    count at their group's share of positives (the expected precision
    under a random tie-break), so neither the order of the samples nor a
    constant detector favours a class."""
    labels = np.broadcast_to(np.asarray(labels, dtype=bool), scores.shape)
    ordered = -np.sort(-scores, axis=-1)
    out = []
    for k in ks:
        kth = ordered[..., k - 1 : k]
        above, tied = scores > kth, scores == kth
        share = (labels & tied).sum(axis=-1) / tied.sum(axis=-1)
        out.append(((labels & above).sum(axis=-1) + (k - above.sum(axis=-1)) * share) / k)
    return np.stack(out, axis=-1)


def leak_detection_rows(
    scores: list[dict], leaked: set[str], population: set[str], *, top_k: list[int], n_resamples: int, seed: int
) -> list[dict]:
    """One row per detector and metric (``auc``, ``precision_at_k``) of one
    model's score rows. ``population``: the sample ids that may be evaluated
    (labelled by the scan); a sample needs a score of every detector.
    A k above the balanced set's size is left out; a metric a class lacks
    for is NaN."""
    by_method: dict[str, dict[str, dict]] = defaultdict(dict)
    for s in scores:
        if s["sample_id"] in population and s["score"] is not None and np.isfinite(s["score"]):
            by_method[s["method"]][s["sample_id"]] = s
    if not by_method:
        return []
    methods = sorted(by_method)
    ids = sorted(set.intersection(*(set(by_method[m]) for m in methods)))
    labels = np.array([i in leaked for i in ids], dtype=bool)
    matrix = np.array([[by_method[m][i]["score"] for i in ids] for m in methods], dtype=float).reshape(len(methods), -1)
    families = {m: next(iter(by_method[m].values()))["family"] for m in methods}
    base = {"n": len(ids), "n_leaked": int(labels.sum())}
    estimable = 0 < labels.sum() < labels.size
    results: dict[tuple[str, int | None], tuple] = {}
    if estimable:
        draw, drawn_labels = stratified_draw(
            labels, n_resamples, np.random.default_rng(derive_seed(seed, "rq4", "auc"))
        )
        low, high = percentile_interval(roc_auc(drawn_labels, matrix[:, draw]))
        results["auc", None] = (roc_auc(labels, matrix), low, high, len(ids))
        keep = balanced(ids, labels, np.random.default_rng(derive_seed(seed, "rq4", "balance")))
        draw, drawn_labels = stratified_draw(
            labels[keep], n_resamples, np.random.default_rng(derive_seed(seed, "rq4", "top-k"))
        )
        ks = [k for k in top_k if k <= keep.size]
        if ks:
            point = precision_at_k(labels[keep], matrix[:, keep], ks)  # (M, K)
            low, high = percentile_interval(
                np.moveaxis(precision_at_k(drawn_labels, matrix[:, keep][:, draw], ks), -1, 0)
            )
            for j, k in enumerate(ks):
                results["precision_at_k", k] = (point[:, j], low[j], high[j], int(keep.size))
    rows = []
    for i, method in enumerate(methods):
        if not results:
            rows.append(
                {
                    "method": method,
                    "family": families[method],
                    "metric": "auc",
                    "k": None,
                    **base,
                    "n_evaluated": len(ids),
                    "value": None,
                    "low": None,
                    "high": None,
                }
            )
        for (metric, k), (value, low, high, n_evaluated) in results.items():
            rows.append(
                {
                    "method": method,
                    "family": families[method],
                    "metric": metric,
                    "k": k,
                    **base,
                    "n_evaluated": n_evaluated,
                    "value": float(value[i]),
                    "low": float(low[i]),
                    "high": float(high[i]),
                }
            )
    return rows


def ranking_population(
    perplexity: dict[str, list[dict]], leaked: set[str], size: int | None, seed: int
) -> tuple[list[str], set[str], dict[str, int]]:
    """The samples the ranking is evaluated on: those every model scored,
    one per distinct document, balanced by under-sampling to at most
    ``size // 2`` a class (None: the smaller class whole). Returns the ids,
    the leaked among them and the counts at each step."""
    digests: dict[str, str] = {}
    for rows in perplexity.values():
        for r in rows:
            if digests.setdefault(r["sample_id"], r["digest"]) != r["digest"]:
                raise ValueError(f"{r['sample_id']}: the models scored different texts")
    common = (
        set.intersection(*({r["sample_id"] for r in rows} for rows in perplexity.values())) if perplexity else set()
    )
    ids, kept_leaked = deduplicated({sid: digests[sid] for sid in common}, leaked)
    labels = np.array([i in kept_leaked for i in ids], dtype=bool)
    keep = (
        balanced(
            ids,
            labels,
            np.random.default_rng(derive_seed(seed, "rq4", "population")),
            None if size is None else size // 2,
        )
        if 0 < labels.sum() < labels.size
        else np.arange(0)
    )
    chosen = [ids[i] for i in keep]
    counts = {
        "scored": len(common),
        "leaked_scored": len(common & leaked),
        "distinct": len(ids),
        "leaked_distinct": int(labels.sum()),
        "balanced": len(chosen),
    }
    return chosen, kept_leaked & set(chosen), counts
