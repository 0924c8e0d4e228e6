"""How well membership scores separate members from non-members.

Labels are 1 for a member (the positive class) and 0 for a non-member; every
score is oriented so that higher means "more likely a member". The metrics are
the ones the seed papers report: ROC AUC and TPR at a fixed low FPR
(threshold-free; MIMIR, CodeSnitch), accuracy and macro precision / recall / F1
of decisions (averaged as SrDetection's Tables 1-2 average them; member-class
ones beside them; ``evaluate.detection`` applies them to the conformal decision
at alpha and to each detector's own, SrDetection's rule) and CodeSnitch's best balanced
accuracy. Threshold-free metrics need both classes; with only one present they
return NaN rather than raise, so a degenerate split shows up as a missing
value in a results table. ``roc_auc`` and ``macro_f1``
also take scores (or predictions) with leading batch axes over one label
vector, which is how the bootstrap evaluates every replicate at once.
"""

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import rankdata
from sklearn.metrics import roc_curve


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


def roc_auc(labels: ArrayLike, scores: ArrayLike) -> float | np.ndarray:
    """Area under the ROC curve; NaN when only one class is present.

    Computed as the Mann-Whitney U statistic from average ranks (ties count
    one half), which equals sklearn's ``roc_auc_score`` but costs a sort, not
    input validation. ``scores`` of shape (..., n) give an AUC per leading index."""
    labels = np.asarray(labels).astype(bool)
    scores = np.asarray(scores, dtype=float)
    if not _both_classes(labels):
        return float("nan") if scores.ndim == 1 else np.full(scores.shape[:-1], np.nan)
    ranks = rankdata(scores, axis=-1)
    n_pos = int(labels.sum())
    n_neg = labels.size - n_pos
    auc = (ranks[..., labels].sum(axis=-1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return float(auc) if scores.ndim == 1 else auc


def pooled_auc(seen: np.ndarray, unseen: np.ndarray) -> float:
    """AUC of the scores under the model that saw each sample (label member)
    against the scores under the one that did not: the complement twin's
    pooled AUC, each sample once on each side."""
    return roc_auc(np.r_[np.ones(seen.size, bool), np.zeros(unseen.size, bool)], np.r_[seen, unseen])


def tpr_at_fpr(labels: ArrayLike, scores: ArrayLike, fpr: float) -> float:
    """Highest TPR among the ROC curve's points whose FPR is at most ``fpr``.

    Only thresholds that exist are used (no interpolation between points),
    so the FPR budget is never exceeded. NaN when only one class is present,
    and NaN (not estimable) when ``fpr`` is below 1 / (number of
    non-members): the smallest FPR above 0 such a sample can show, so the
    only point within the budget would be FPR 0, a different quantity.
    """
    points = _roc_points(labels, scores)
    if points is None or fpr * int(np.sum(np.asarray(labels) == 0)) < 1:
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
        return np.divide(2 * hits, denominator, out=np.zeros(np.shape(hits)), where=denominator > 0)

    return (f1(tp, fp + fn) + f1(tn, fn + fp)) / 2


def _confusion(labels: ArrayLike, predictions: ArrayLike) -> tuple[np.ndarray, ...]:
    """tp, fp, fn, tn of 0/1 predictions, one count per leading index of ``predictions``."""
    labels, predictions = np.asarray(labels).astype(bool), np.asarray(predictions).astype(bool)
    return tuple(
        np.sum(a & b, axis=-1)
        for a, b in ((labels, predictions), (~labels, predictions), (labels, ~predictions), (~labels, ~predictions))
    )


def macro_f1(labels: ArrayLike, predictions: ArrayLike) -> float | np.ndarray:
    """Macro F1 of 0/1 predictions from confusion counts; ``predictions`` of
    shape (..., n) give a macro F1 per leading index."""
    f1 = _macro_f1(*_confusion(labels, predictions))
    return float(f1) if np.ndim(predictions) == 1 else f1


def decision_metrics(labels: ArrayLike, predictions: ArrayLike) -> dict[str, float]:
    """Accuracy and precision, recall and F1 of 0/1 predictions, macro-averaged over
    the member and the non-member class as SrDetection's Tables 1-2 report them
    ("F1-Macro"), and of the member class alone (``member_*``).

    Undefined ratios (a class never predicted or never present) count as 0,
    and the macro averages always average over both classes (sklearn's
    ``average="macro", zero_division=0``).
    """
    tp, fp, fn, tn = (int(c) for c in _confusion(labels, predictions))

    def ratio(hits: int, total: int) -> float:
        return hits / total if total else 0.0

    member_precision, member_recall = ratio(tp, tp + fp), ratio(tp, tp + fn)
    other_precision, other_recall = ratio(tn, tn + fn), ratio(tn, tn + fp)
    return {
        "accuracy": (tp + tn) / (tp + fp + fn + tn),
        "macro_precision": (member_precision + other_precision) / 2,
        "macro_recall": (member_recall + other_recall) / 2,
        "macro_f1": macro_f1(labels, predictions),
        "member_precision": member_precision,
        "member_recall": member_recall,
        "member_f1": ratio(2 * tp, 2 * tp + fp + fn),
    }
