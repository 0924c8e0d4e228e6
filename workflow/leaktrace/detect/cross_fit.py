"""Cross-fitting a learned detector (DPDLLM, VeilProbe), so that no sample is
scored by a classifier that saw its label.

The labelled samples (the split's calibration fold) are cut into K folds,
stratified by class; fit k is trained on the labelled samples outside fold
k, and the full fit on all of them. A labelled sample reports fit k's score
for the fold k that held it out; every other sample the full fit's. Every
fit scores every sample (``fold_scores``): a control of fold k and a tested
sample compared under the same fit k is what a cross-conformal p-value
needs (``calibration.conformal``). Dataset inference reads the reported
scores, so a feature never carries the label it is tested against.

A detector is given as ``fit_many(tasks)``: for each task (training indices,
their labels) the fitted classifier's member score and decision of every
sample, (tasks × samples) each, so that many fits can run as one batch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import StratifiedKFold

Task = tuple[np.ndarray, np.ndarray]  # (training indices, their labels: True = member)
FitMany = Callable[[Sequence[Task]], tuple[np.ndarray, np.ndarray]]
UNLABELLED = -1  # the fold of a sample outside the labelled set: it is scored by the full fit


@dataclass(frozen=True)
class CrossFit:
    scores: np.ndarray  # (n,) each sample's score from a fit that never saw its label
    decisions: np.ndarray  # (n,) the same fit's decision
    fold: np.ndarray  # (n,) int: the fold that held a labelled sample out; UNLABELLED for the others
    fold_scores: np.ndarray  # (K, n): fit k's score of every sample
    trained_on: list[np.ndarray]  # the indices each fit was trained on: folds 0..K-1, then the full fit (if made)


@dataclass(frozen=True)
class Problem:
    """One cross-fit: ``labelled`` indices of the n samples with their ``labels``."""

    labelled: np.ndarray
    labels: np.ndarray
    seed: int


def stratified_share(labels: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Positions of a stratified random share of ``labels`` (every one at
    ``fraction`` 1; at least 2 per class), in their order."""
    labels = np.asarray(labels).astype(bool)
    if fraction >= 1:
        return np.arange(labels.size)
    chosen = [
        rng.permutation(np.flatnonzero(labels == member))[: max(2, round(fraction * int((labels == member).sum())))]
        for member in (True, False)
    ]
    return np.sort(np.concatenate(chosen))


def n_folds_for(labels: np.ndarray, n_folds: int) -> int:
    """The folds a labelled set allows: ``n_folds``, fewer where a class has
    fewer samples (each fold needs one of each); at least 2."""
    labels = np.asarray(labels).astype(bool)
    smallest = min(int(labels.sum()), int((~labels).sum()))
    if smallest < 2 or n_folds < 2:
        raise ValueError(
            f"cross-fitting needs 2 folds with a member and a non-member each; {int(labels.sum())} members, "
            f"{int((~labels).sum())} non-members labelled, {n_folds} folds asked"
        )
    return min(n_folds, smallest)


def assign_folds(labels: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """The fold of each labelled sample: stratified, shuffled by ``seed``."""
    labels = np.asarray(labels).astype(bool)
    k = n_folds_for(labels, n_folds)
    folds = np.empty(labels.size, dtype=np.int64)
    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed % 2**32)
    for fold, (_, held_out) in enumerate(splitter.split(np.zeros(labels.size), labels)):
        folds[held_out] = fold
    return folds


def _tasks(problem: Problem, folds: np.ndarray, full: bool) -> list[Task]:
    labelled, labels = np.asarray(problem.labelled), np.asarray(problem.labels).astype(bool)
    tasks = [(labelled[folds != k], labels[folds != k]) for k in range(int(folds.max()) + 1)]
    return tasks + ([(labelled, labels)] if full else [])


def cross_fit_many(
    problems: Sequence[Problem], n_samples: int, fit_many: FitMany, n_folds: int, *, full: bool = True
) -> list[CrossFit]:
    """Every problem's cross-fit, all fits in one call of ``fit_many``.
    Without the ``full`` fit, a sample outside the labelled set reports no
    score (NaN); its fold scores are what the calibration checks use."""
    folds = [assign_folds(p.labels, n_folds, p.seed) for p in problems]
    tasks = [_tasks(p, f, full) for p, f in zip(problems, folds, strict=True)]
    flat = [t for group in tasks for t in group]
    scores, decisions = fit_many(flat) if flat else (np.zeros((0, n_samples)), np.zeros((0, n_samples), bool))
    results, start = [], 0
    for problem, fold_of, group in zip(problems, folds, tasks, strict=True):
        k = int(fold_of.max()) + 1
        s, d = scores[start : start + len(group)], decisions[start : start + len(group)]
        start += len(group)
        fold = np.full(n_samples, UNLABELLED, dtype=np.int64)
        fold[np.asarray(problem.labelled)] = fold_of
        reported = s[k] if full else np.full(n_samples, np.nan)
        decided = d[k] if full else np.zeros(n_samples, dtype=bool)
        labelled = fold != UNLABELLED
        reported = np.where(labelled, s[np.where(labelled, fold, 0), np.arange(n_samples)], reported)
        decided = np.where(labelled, d[np.where(labelled, fold, 0), np.arange(n_samples)], decided)
        results.append(CrossFit(reported, decided, fold, s[:k], [t[0] for t in group]))
    return results


def cross_fit(
    labelled: np.ndarray, labels: np.ndarray, n_samples: int, fit_many: FitMany, n_folds: int, seed: int
) -> CrossFit:
    """One cross-fit with its full fit."""
    return cross_fit_many([Problem(np.asarray(labelled), np.asarray(labels), seed)], n_samples, fit_many, n_folds)[0]


def conformal_inputs(
    scores: np.ndarray, fold: np.ndarray, fold_scores: np.ndarray, controls: np.ndarray, tested: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A cross-fit's inputs to a cross-conformal p-value (``calibration.conformal``):
    each control's reported score, the tested samples' scores under every fit
    (K + 1, n_t: the K folds', then the reported one, the full fit's for a
    sample outside the labelled set), and the fit each control is compared
    under (its fold; the full fit for a control outside the labelled set)."""
    k = fold_scores.shape[0]
    fits = np.vstack([fold_scores[:, tested], scores[tested][None]])
    return scores[controls], fits, np.where(fold[controls] == UNLABELLED, k, fold[controls])


def row_conformal_inputs(
    rows: dict[str, dict], controls: list[str], tested: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The same from one method's score rows (sample_id -> row of
    ``scores.parquet``); a detector without a cross-fit compares every
    control with every tested sample under its one score (fit index None)."""
    ids = [*controls, *tested]
    scores = np.array([rows[s]["score"] for s in ids], dtype=float)
    if not controls or rows[controls[0]].get("fold_scores") is None:
        return scores[: len(controls)], scores[len(controls) :], None
    fold = np.array([rows[s]["fold"] for s in ids], dtype=np.int64)
    fold_scores = np.array([rows[s]["fold_scores"] for s in ids], dtype=float).T.reshape(-1, len(ids))
    return conformal_inputs(scores, fold, fold_scores, np.arange(len(controls)), np.arange(len(controls), len(ids)))
