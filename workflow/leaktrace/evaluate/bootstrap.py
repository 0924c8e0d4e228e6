"""Bootstrap of a whole detection evaluation, for intervals and paired
comparisons that carry every source of sampling noise.

One replicate resamples the samples, not each method's rows: the calibration
and the evaluation fold are each drawn with replacement within each class
(class sizes kept, so AUC stays defined), the same draw serves every method,
and each threshold-based method's threshold is refitted on the drawn
calibration fold before it is applied to the drawn evaluation fold. A
method's interval thus includes the noise of its threshold, and the
difference between two methods in a replicate is a paired difference on the
same samples. All replicates and methods are computed as one array.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leaktrace.evaluate.metrics import choose_threshold, macro_f1, roc_auc


@dataclass(frozen=True)
class Folds:
    """The scores of M methods on the same samples. Threshold-free methods
    (``threshold_free[m]``) predict with their own decisions; the others with
    a threshold fitted on the calibration fold."""

    calibration_labels: np.ndarray  # (n_cal,) 1 = member
    calibration_scores: np.ndarray  # (M, n_cal)
    evaluation_labels: np.ndarray  # (n_eval,)
    evaluation_scores: np.ndarray  # (M, n_eval)
    evaluation_decisions: np.ndarray  # (M, n_eval) bool; read where threshold_free
    threshold_free: np.ndarray  # (M,) bool

    def __post_init__(self):
        for name, labels in (("calibration", self.calibration_labels), ("evaluation", self.evaluation_labels)):
            needed = name == "evaluation" or not self.threshold_free.all()
            if needed and np.unique(labels).size < 2:
                raise ValueError(f"the {name} fold needs members and non-members, got {labels.size} samples of one class"
                                 + ("; raise filter.calibration_fraction" if name == "calibration" else ""))


@dataclass(frozen=True)
class Replicates:
    auc: np.ndarray  # (M, B)
    macro_f1: np.ndarray  # (M, B)


def stratified_draw(labels: np.ndarray, n_resamples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices (B, n) drawn with replacement within each class, members first,
    and the labels of the drawn positions (the same in every replicate)."""
    labels = np.asarray(labels).astype(bool)
    blocks = [np.flatnonzero(labels), np.flatnonzero(~labels)]
    index = np.concatenate([rows[rng.integers(0, rows.size, (n_resamples, rows.size))] for rows in blocks], axis=1)
    return index, np.repeat([True, False], [blocks[0].size, blocks[1].size])


def predictions(folds: Folds, thresholds: np.ndarray, scores: np.ndarray, decisions: np.ndarray) -> np.ndarray:
    """Member predictions: each method's decisions if threshold-free, else
    score >= its threshold. ``thresholds`` (M, ...) broadcasts against the
    leading axes of ``scores`` and ``decisions`` (M, ..., n)."""
    free = folds.threshold_free.reshape((-1,) + (1,) * (scores.ndim - 1))
    return np.where(free, decisions, scores >= thresholds[..., None])


def fitted_thresholds(folds: Folds) -> np.ndarray:
    """(M,) thresholds fitted on the whole calibration fold; NaN for threshold-free methods."""
    if folds.threshold_free.all():
        return np.full(folds.threshold_free.shape, np.nan)
    fitted = choose_threshold(folds.calibration_labels, folds.calibration_scores)
    return np.where(folds.threshold_free, np.nan, fitted)


def bootstrap(folds: Folds, n_resamples: int, rng: np.random.Generator) -> Replicates:
    """AUC and macro F1 of every method in ``n_resamples`` replicates drawn
    from ``rng`` (the same draws for every method)."""
    evaluation, evaluation_labels = stratified_draw(folds.evaluation_labels, n_resamples, rng)
    scores = folds.evaluation_scores[:, evaluation]  # (M, B, n_eval)
    if folds.threshold_free.all():
        thresholds = np.full(scores.shape[:2], np.nan)
    else:
        calibration, calibration_labels = stratified_draw(folds.calibration_labels, n_resamples, rng)
        thresholds = choose_threshold(calibration_labels, folds.calibration_scores[:, calibration])  # (M, B)
    predicted = predictions(folds, thresholds, scores, folds.evaluation_decisions[:, evaluation])
    return Replicates(auc=roc_auc(evaluation_labels, scores), macro_f1=macro_f1(evaluation_labels, predicted))


def percentile_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval over the last axis (the replicates)."""
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail], axis=-1)
    return low, high
