"""Conformal p-values (Vovk, Gammerman & Shafer; Bates, Candès, Lei, Romano
& Sesia, "Testing for outliers with conformal p-values", Ann. Statist.
2023): how unusual a sample's score is among a control set C of known
non-members scored by the same model,

    p(x) = (1 + #{c in C : s(c) >= s(x)}) / (|C| + 1),

so that P(p <= alpha) <= alpha for a non-member exchangeable with C,
whatever the detector. A detector whose score function was fitted on labels
that include the controls (DPDLLM, VeilProbe) is cross-conformal (Vovk 2015;
Barber et al., "Predictive inference with the jackknife+", Ann. Statist.
2021): the labelled set is cut into K folds, s_k is fitted without fold k,
a control c of fold k is scored by s_k and so is every tested sample, and

    p(x) = (1 + sum_k #{c in C_k : s_k(c) >= s_k(x)}) / (|C| + 1),

valid up to 2 alpha in the worst case and about alpha in practice.

Both reduce to an exceedance matrix E[c, x] = 1[control c's score >= x's
score, both under the fit that left c out]; p is (1 + w . E) / (sum w + 1)
for control weights w (all ones; a bootstrap's multiplicities), so the
bootstrap resamples the control set without ranking again. Ties count
against x (>=), which keeps the p-value valid; ``randomised_p_values``
breaks them with a uniform draw instead, which makes it exactly uniform
under exchangeability: the form to compare with U(0, 1)."""

from __future__ import annotations

import numpy as np


def _fold_scores(test: np.ndarray, control_fold: np.ndarray | None, n_control: int) -> np.ndarray:
    """(n_c, n_t): each control's fit's scores of the tested samples."""
    test = np.asarray(test, dtype=float)
    if control_fold is None:
        if test.ndim != 1:
            raise ValueError(f"split-conformal test scores are one per sample, got shape {test.shape}")
        return np.broadcast_to(test, (n_control, test.size))
    control_fold = np.asarray(control_fold)
    if test.ndim != 2:
        raise ValueError(f"cross-conformal test scores are (folds, samples), got shape {test.shape}")
    if control_fold.shape != (n_control,) or (control_fold < 0).any() or (control_fold >= test.shape[0]).any():
        raise ValueError(f"control folds {control_fold.tolist()} do not index the {test.shape[0]} fits")
    return test[control_fold]


def exceedances(control: np.ndarray, test: np.ndarray, control_fold: np.ndarray | None = None) -> np.ndarray:
    """E[c, x] (n_c, n_t) bool. Split conformal: ``control`` (n_c,) and
    ``test`` (n_t,) under one score function. Cross-conformal: ``control``
    each control's score under the fit that left it out, ``control_fold``
    that fit's index, ``test`` (K, n_t) every fit's scores of the tested samples."""
    control = np.asarray(control, dtype=float)
    return control[:, None] >= _fold_scores(test, control_fold, control.size)


def p_values(exceed: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """(1 + w . E) / (sum w + 1): one p-value per tested sample; ``weights``
    (..., n_c) give one row of p-values per leading index (bootstrap replicates)."""
    exceed = np.asarray(exceed, dtype=float)
    if exceed.shape[0] == 0:
        raise ValueError("a conformal p-value needs at least one control")
    if weights is None:
        return (1.0 + exceed.sum(axis=0)) / (exceed.shape[0] + 1.0)
    weights = np.asarray(weights, dtype=float)
    return (1.0 + weights @ exceed) / (weights.sum(axis=-1, keepdims=True) + 1.0)


def conformal_p_values(control: np.ndarray, test: np.ndarray, control_fold: np.ndarray | None = None) -> np.ndarray:
    """The p-value of each tested sample against the control set (see ``exceedances``)."""
    return p_values(exceedances(control, test, control_fold))


def randomised_p_values(
    control: np.ndarray, test: np.ndarray, rng: np.random.Generator, control_fold: np.ndarray | None = None
) -> np.ndarray:
    """(#{s(c) > s(x)} + U (1 + #{s(c) = s(x)})) / (|C| + 1), U uniform on
    [0, 1): ties broken at random, exactly U(0, 1) for a non-member
    exchangeable with the controls (no atoms), so a KS test against the
    uniform measures miscalibration, not the p-values' discreteness."""
    control = np.asarray(control, dtype=float)
    if control.size == 0:
        raise ValueError("a conformal p-value needs at least one control")
    scores = _fold_scores(test, control_fold, control.size)
    above = (control[:, None] > scores).sum(axis=0)
    tied = (control[:, None] == scores).sum(axis=0)
    return (above + rng.random(above.shape) * (1 + tied)) / (control.size + 1.0)
