"""How well membership scores separate members from non-members.

Labels are 1 for a member (the positive class) and 0 for a non-member; every
score is oriented so that higher means "more likely a member". The metrics are
the ones the seed papers report: ROC AUC and TPR at a fixed low FPR
(threshold-free; MIMIR, CodeSnitch), accuracy / precision / recall / macro F1
at a threshold (SrDetection Tables 1-2), CodeSnitch's best balanced accuracy,
and bootstrap confidence intervals over samples. Threshold-free metrics need
both classes; with only one present they return NaN rather than raise, so a
degenerate split shows up as a missing value in a results table.
"""

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import rankdata
from sklearn.metrics import (
    accuracy_score,
    f1_score,
    precision_score,
    recall_score,
    roc_curve,
)


def _both_classes(labels: np.ndarray) -> bool:
    return np.unique(labels).size == 2


def _roc_points(labels: ArrayLike, scores: ArrayLike) -> tuple[np.ndarray, np.ndarray] | None:
    """FPR and TPR at every distinct threshold, or None if a class is missing.

    ``drop_intermediate=False`` keeps collinear points, which a search for
    the best TPR under an FPR budget must be able to land on.
    """
    labels = np.asarray(labels)
    if not _both_classes(labels):
        return None
    fpr, tpr, _ = roc_curve(labels, scores, drop_intermediate=False)
    return fpr, tpr


def roc_auc(labels: ArrayLike, scores: ArrayLike) -> float:
    """Area under the ROC curve; NaN when only one class is present.

    Computed as the Mann-Whitney U statistic from average ranks (ties count
    one half), which equals sklearn's ``roc_auc_score`` but costs a sort, not
    input validation: the bootstrap calls it thousands of times."""
    labels = np.asarray(labels).astype(bool)
    if not _both_classes(labels):
        return float("nan")
    ranks = rankdata(np.asarray(scores, dtype=float))
    n_pos = int(labels.sum())
    n_neg = labels.size - n_pos
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def tpr_at_fpr(labels: ArrayLike, scores: ArrayLike, fpr: float) -> float:
    """Highest TPR among the ROC curve's points whose FPR is at most ``fpr``.

    Only thresholds that exist are used (no interpolation between points),
    so the FPR budget is never exceeded. NaN when only one class is present.
    """
    points = _roc_points(labels, scores)
    if points is None:
        return float("nan")
    fprs, tprs = points
    return float(tprs[fprs <= fpr].max())


def best_balanced_accuracy(labels: ArrayLike, scores: ArrayLike) -> float:
    """max over thresholds of 1 - (FPR + FNR) / 2, CodeSnitch's "accuracy".

    At least 0.5 (a threshold above every score); NaN when only one class is
    present.
    """
    points = _roc_points(labels, scores)
    if points is None:
        return float("nan")
    fprs, tprs = points
    return float(np.max(1.0 - (fprs + (1.0 - tprs)) / 2.0))


def _macro_f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, tn: np.ndarray) -> np.ndarray:
    """Mean of the member and non-member F1 from confusion counts, 0 where a class is empty."""

    def f1(hits: np.ndarray, misses: np.ndarray) -> np.ndarray:
        denominator = 2 * hits + misses
        return np.divide(2 * hits, denominator, out=np.zeros(len(hits)), where=denominator > 0)

    return (f1(tp, fp + fn) + f1(tn, fn + fp)) / 2


def choose_threshold(labels: ArrayLike, scores: ArrayLike) -> float:
    """Threshold for ``score >= threshold -> member`` that maximises macro F1.

    Fit it on a calibration split disjoint from the one it is applied to; the
    seed papers do not say how their thresholds were set. Every split of the
    sorted scores is tried: the lowest score (everyone a member), the midpoint
    between each pair of adjacent distinct scores (so a threshold never sits
    on a score, and the same split on nearby data behaves the same), and
    +inf (no one a member). Ties in macro F1 go to the lowest threshold.
    """
    labels = np.asarray(labels).astype(bool)
    scores = np.asarray(scores, dtype=float)
    distinct = np.unique(scores)
    thresholds = np.concatenate([distinct[:1], (distinct[:-1] + distinct[1:]) / 2, [np.inf]])
    members, non_members = np.sort(scores[labels]), np.sort(scores[~labels])
    tp = members.size - np.searchsorted(members, thresholds, side="left")
    fp = non_members.size - np.searchsorted(non_members, thresholds, side="left")
    f1 = _macro_f1(tp, fp, fn=members.size - tp, tn=non_members.size - fp)
    return float(thresholds[np.argmax(f1)])


def macro_f1(labels: ArrayLike, predictions: ArrayLike) -> float:
    """Macro F1 of 0/1 predictions from confusion counts (what ``decision_metrics``
    reports, without sklearn's overhead, for the bootstrap)."""
    labels, predictions = np.asarray(labels).astype(bool), np.asarray(predictions).astype(bool)
    tp = np.array([np.sum(labels & predictions)])
    fp = np.array([np.sum(~labels & predictions)])
    fn = np.array([np.sum(labels & ~predictions)])
    tn = np.array([np.sum(~labels & ~predictions)])
    return float(_macro_f1(tp, fp, fn, tn)[0])


def decision_metrics(labels: ArrayLike, predictions: ArrayLike) -> dict[str, float]:
    """Accuracy, member-class precision and recall, and macro F1 of 0/1 predictions.

    Undefined ratios (no predicted or no actual members) count as 0, and
    macro F1 always averages over both classes.
    """
    return {
        "accuracy": float(accuracy_score(labels, predictions)),
        "precision": float(precision_score(labels, predictions, zero_division=0)),
        "recall": float(recall_score(labels, predictions, zero_division=0)),
        "macro_f1": float(
            f1_score(labels, predictions, labels=[0, 1], average="macro", zero_division=0)
        ),
    }


def bootstrap_ci(
    labels: ArrayLike,
    values: ArrayLike,
    statistic: Callable[[np.ndarray, np.ndarray], float],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of ``statistic(labels, values)``.

    Samples are resampled with replacement within each class, keeping the
    class sizes, so every resample has both classes and threshold-free
    metrics stay defined. ``values`` may be scores or 0/1 predictions.
    Resamples where the statistic is NaN are skipped; (NaN, NaN) if all are.
    """
    labels, values = np.asarray(labels), np.asarray(values)
    rng = np.random.default_rng(seed)
    by_class = [np.flatnonzero(labels == label) for label in np.unique(labels)]
    estimates = np.empty(n_resamples)
    for i in range(n_resamples):
        index = np.concatenate([rng.choice(rows, size=rows.size) for rows in by_class])
        estimates[i] = statistic(labels[index], values[index])
    estimates = estimates[~np.isnan(estimates)]
    if estimates.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(estimates, [tail, 1.0 - tail])
    return float(low), float(high)
