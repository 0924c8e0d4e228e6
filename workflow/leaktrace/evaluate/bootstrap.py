"""Bootstrap of a whole detection evaluation, for intervals and paired
comparisons that carry every source of sampling noise.

A sample is flagged where its conformal p-value against the control set (the
calibration fold's non-members) is at most alpha (``calibration.conformal``).
One replicate resamples the samples, not each method's rows: the evaluation
fold is drawn with replacement within each class (class sizes kept, so AUC
stays defined), the control set with replacement, the same draws serve every
method, and each p-value is recomputed against the drawn controls (their
multiplicities weight the exceedance matrix). A method's interval thus
includes the noise of its control set, and the difference between two
methods in a replicate is a paired difference on the same samples. All
replicates and methods are computed as one array.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from leaktrace.calibration.conformal import p_values
from leaktrace.evaluate.metrics import macro_f1, roc_auc


@dataclass(frozen=True)
class Folds:
    """The scores of M methods on the same evaluation samples, and for each
    method its exceedance matrix against the control set: E[m, c, x] = 1 when
    control c's score reaches sample x's (under the fit that left c out)."""

    evaluation_labels: np.ndarray  # (n_eval,) 1 = member
    evaluation_scores: np.ndarray  # (M, n_eval)
    exceedances: np.ndarray  # (M, n_control, n_eval) bool
    alpha: float

    def __post_init__(self):
        if np.unique(self.evaluation_labels).size < 2:
            raise ValueError(
                f"the evaluation fold needs members and non-members, got {self.evaluation_labels.size} "
                "samples of one class"
            )
        if self.exceedances.shape[1] == 0:
            raise ValueError(
                "the calibration fold has no non-member to serve as a control; raise filter.calibration_fraction"
            )


@dataclass(frozen=True)
class Replicates:
    auc: np.ndarray  # (M, B)
    macro_f1: np.ndarray  # (M, B)
    extra: np.ndarray | None = None  # (B,): ``extra``'s statistic on the same evaluation draws


def stratified_draw(labels: np.ndarray, n_resamples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices (B, n) drawn with replacement within each class, members first,
    and the labels of the drawn positions (the same in every replicate)."""
    labels = np.asarray(labels).astype(bool)
    blocks = [np.flatnonzero(labels), np.flatnonzero(~labels)]
    index = np.concatenate([rows[rng.integers(0, rows.size, (n_resamples, rows.size))] for rows in blocks], axis=1)
    return index, np.repeat([True, False], [blocks[0].size, blocks[1].size])


def predictions(folds: Folds) -> tuple[np.ndarray, np.ndarray]:
    """(M, n_eval) conformal p-values against the whole control set, and the flags p <= alpha."""
    p = (
        np.stack([p_values(e) for e in folds.exceedances])
        if len(folds.exceedances)
        else np.zeros((0, folds.evaluation_labels.size))
    )
    return p, p <= folds.alpha


def bootstrap(
    folds: Folds, n_resamples: int, rng: np.random.Generator, extra: Callable[[np.ndarray], np.ndarray] | None = None
) -> Replicates:
    """AUC and macro F1 of every method in ``n_resamples`` replicates drawn
    from ``rng`` (the same draws for every method); ``extra``, a statistic of
    the evaluation samples that needs no control set (the blind baseline's),
    is computed from each replicate's multiplicities of the evaluation
    samples ((B, n_eval) -> (B,)) on the same draws, which draws nothing more
    from ``rng``."""
    evaluation, evaluation_labels = stratified_draw(folds.evaluation_labels, n_resamples, rng)
    n_control = folds.exceedances.shape[1]
    controls = rng.integers(0, n_control, (n_resamples, n_control))
    weights = np.stack([np.bincount(row, minlength=n_control) for row in controls]).astype(float)  # (B, n_c)
    reached = np.einsum("bc,mce->mbe", weights, folds.exceedances.astype(float))  # (M, B, n_eval)
    drawn = np.take_along_axis(reached, evaluation[None], axis=-1)
    predicted = (1.0 + drawn) / (n_control + 1.0) <= folds.alpha
    scores = folds.evaluation_scores[:, evaluation]  # (M, B, n_eval)
    n_eval = folds.evaluation_labels.size
    drawn_extra = None if extra is None else extra(np.stack([np.bincount(row, minlength=n_eval) for row in evaluation]))
    return Replicates(
        auc=roc_auc(evaluation_labels, scores), macro_f1=macro_f1(evaluation_labels, predicted), extra=drawn_extra
    )


def percentile_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval over the last axis (the replicates)."""
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail], axis=-1)
    return low, high
