"""Two checks of the conformal decisions, each under a null the testbed
knows to be true: a non-member of the split was never trained on.

- ``calibration fold``: the decisions as users get them. Control set the
  calibration fold's non-members, tested the evaluation fold's non-members,
  the deployed scores (a learned detector's cross-fit included): the count
  of tested non-members flagged at alpha. The flags share one control set,
  so the count is judged by its beta-binomial distribution
  (``validity_rules.shared_controls``), not as independent flags; noisy,
  but a gross violation shows (a classifier fitted on its controls).
- ``re-partitioned``: the guarantee itself, which holds on average over the
  draw of the control set. Random re-partitions of all non-members into a
  control part and an evaluation part of the split's sizes; a learned
  detector is refitted inside each partition (its cross-fit over the
  calibration fold's members and the control part: its classifiers, its
  t-test mask), so that no label-dependent step sees an evaluation part.
  The mean false-positive rate over partitions, judged against its exact
  expectation with its Monte Carlo error (``validity_rules.repartition_mean``):
  for a detector without a fit, the expectation over partitions of these
  scores (``repartition_expected_rate``, at most alpha); for a refitted one,
  whose scores change with the partition, alpha itself, the level its
  cross-conformal p-values promise in practice (their worst case is 2 alpha).

No KS test: the p-values of one control set, or of re-partitions of one
pool, are dependent, and a KS test of them rejects a perfectly calibrated
detector about half the time; the rate rules at every alpha judge the same
decisions validly."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from leaktrace.calibration.conformal import conformal_p_values, exceedances, p_values
from leaktrace.calibration.table import CALIBRATION_FOLD, REPARTITIONED, average_row, count_row
from leaktrace.calibration.validity_rules import repartition_expected_rate, shared_controls
from leaktrace.detect.cross_fit import (
    FitMany,
    Problem,
    conformal_inputs,
    cross_fit_many,
    row_conformal_inputs,
    stratified_share,
)
from leaktrace.seeding import derive_seed


def calibration_fold_rows(
    method: str,
    model: str,
    rows: dict[str, dict],
    controls: Sequence[str],
    tested: Sequence[str],
    alphas: Sequence[float],
) -> list[dict]:
    """Check (a) of one method (``rows``: sample_id -> its score row)."""
    control, test, fit = row_conformal_inputs(rows, list(controls), list(tested))
    p = p_values(exceedances(control, test, fit))
    note = (
        f"{len(controls)} calibration-fold non-members as controls (smallest p-value 1/{len(controls) + 1}), "
        f"{len(tested)} evaluation-fold non-members tested; the flags share the controls: judged beta-binomial"
    )
    rows = []
    for a in alphas:
        flagged = int((p <= a).sum())
        rows.append(
            count_row(
                method,
                model,
                CALIBRATION_FOLD,
                a,
                flagged,
                len(tested),
                shared_controls(flagged, len(tested), len(controls), a),
                note=note,
            )
        )
    return rows


def _rows(
    method: str, model: str, rates: dict[float, list[float]], expected: dict[float, float], note: str
) -> list[dict]:
    return [average_row(method, model, REPARTITIONED, a, r, expected[a], note=note) for a, r in rates.items()]


def repartitioned_rows(
    method: str, model: str, scores: np.ndarray, n_control: int, repartitions: int, alphas: Sequence[float], seed: int
) -> list[dict]:
    """Check (b) of a detector without a fit: ``scores`` of all non-members,
    ``n_control`` of them the control part of each partition."""
    scores = np.asarray(scores, dtype=float)
    if not 0 < n_control < scores.size:
        raise ValueError(
            f"{method} under {model}: {n_control} controls out of {scores.size} non-members leave no part to test"
        )
    rng = np.random.default_rng(seed)
    rates: dict[float, list[float]] = {a: [] for a in alphas}
    for _ in range(repartitions):
        order = rng.permutation(scores.size)
        control, tested = scores[order[:n_control]], scores[order[n_control:]]
        p = conformal_p_values(control, tested)
        for a in alphas:
            rates[a].append(float(np.mean(p <= a)))
    expected = {a: repartition_expected_rate(scores, n_control, a) for a in alphas}
    return _rows(
        method,
        model,
        rates,
        expected,
        f"{repartitions} partitions of {scores.size} non-members, {n_control} "
        "controls each; the mean against its exact expectation over partitions",
    )


@dataclass(frozen=True)
class Refit:
    """A learned detector to refit inside each partition: ``fit_many`` over
    its samples (positions 0..n-1), labelled as in its deployed fit."""

    fit_many: FitMany
    n_samples: int
    folds: int
    labelled_fraction: float = 1.0


def refitted_repartitioned_rows(
    method: str,
    model: str,
    refit: Refit,
    members: np.ndarray,
    non_members: np.ndarray,
    n_control: int,
    repartitions: int,
    alphas: Sequence[float],
    seed: int,
) -> list[dict]:
    """Check (b) of a learned detector: in each partition, its cross-fit over
    the calibration fold's ``members`` and the partition's control part
    (positions in the detector's samples), every evaluation part scored by
    every fold's fit (by the full fit where some controls are unlabelled)."""
    members, non_members = np.asarray(members), np.asarray(non_members)
    if not 0 < n_control < non_members.size:
        raise ValueError(
            f"{method} under {model}: {n_control} controls out of {non_members.size} non-members leave no part to test"
        )
    rng = np.random.default_rng(seed)
    orders = [rng.permutation(non_members) for _ in range(repartitions)]
    problems = []
    for k, order in enumerate(orders):
        labelled = np.concatenate([members, order[:n_control]])
        labels = np.r_[np.ones(members.size, bool), np.zeros(n_control, bool)]
        chosen = stratified_share(
            labels, refit.labelled_fraction, np.random.default_rng(derive_seed(seed, "labelled", k))
        )
        problems.append(Problem(labelled[chosen], labels[chosen], derive_seed(seed, "folds", k)))
    fits = cross_fit_many(problems, refit.n_samples, refit.fit_many, refit.folds, full=refit.labelled_fraction < 1)
    rates: dict[float, list[float]] = {a: [] for a in alphas}
    for order, fit in zip(orders, fits, strict=True):
        control, test, fit_of = conformal_inputs(
            fit.scores, fit.fold, fit.fold_scores, order[:n_control], order[n_control:]
        )
        p = p_values(exceedances(control, test, fit_of))
        for a in alphas:
            rates[a].append(float(np.mean(p <= a)))
    note = (
        f"{repartitions} partitions of {non_members.size} non-members, {n_control} controls each; cross-fit over "
        f"{members.size} calibration members and the controls refitted in each; the mean against alpha, the "
        "cross-conformal level in practice"
    )
    return _rows(method, model, rates, {a: float(a) for a in alphas}, note)
