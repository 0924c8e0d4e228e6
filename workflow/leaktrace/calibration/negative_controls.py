"""A ConStat-style test against several negative-control models.

A negative control is a model the user declares unexposed to the suspects
and the controls alike. With one, its own observational tests are a gate
(:func:`leaktrace.calibration.audit_verdicts.negative_control_gate`): if it
too "finds" the suspects, the control set differs in a way models see. With
two or more, the audited model's effect can be compared with theirs, with
a null that carries the variation between models as well as between
samples (Dekoninck et al. 2024, ConStat: contamination as performance that
does not generalise across reference models).

Per model j, the effect is the AUC of its scores of the suspects over the
controls (Mann-Whitney, higher score = more member-like). The statistic is
the audited model's AUC minus the negative controls' mean AUC. A bootstrap
draws, jointly for every model, the suspects and the controls with
replacement (paired: the same draw for each model) and the K negative
controls with replacement; p = (1 + #{statistic* <= 0}) / (B + 1), the
share of draws in which the audited model's effect does not exceed the
negative controls'. Its assumption: the audited model responds to whatever
separates suspects from controls as a model drawn from the negative
controls does; it is observational, never proof of exposure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
MIN_NEGATIVE_CONTROLS = 2
ASSUMPTION = (
    "assumes the audited model responds to any difference between suspects and controls as a model drawn "
    "from the negative controls does"
)


@dataclass(frozen=True)
class Bootstrap:
    auc_target: float
    auc_negative: float  # mean over the negative controls
    difference: float
    ci_low: float  # percentile 95% of the difference
    ci_high: float
    p_value: float
    resamples: int


def _auc(suspects: np.ndarray, controls: np.ndarray) -> np.ndarray:
    """Row-wise Mann-Whitney AUC (ties count a half) of (R, n) suspects over (R, m) controls."""
    greater = (suspects[:, :, None] > controls[:, None, :]).mean(axis=(1, 2))
    ties = (suspects[:, :, None] == controls[:, None, :]).mean(axis=(1, 2))
    return greater + 0.5 * ties


def bootstrap_test(
    target: dict[str, float],
    negatives: Sequence[dict[str, float]],
    suspects: Sequence[str],
    controls: Sequence[str],
    *,
    seed: int,
    resamples: int = RESAMPLES,
) -> Bootstrap:
    """The test of ``target`` (sample -> score) against ``negatives`` (one
    such lookup per negative-control model) on ``suspects`` over ``controls``;
    every id must be scored under every model."""
    if len(negatives) < MIN_NEGATIVE_CONTROLS:
        raise ValueError(
            f"the negative-control bootstrap needs {MIN_NEGATIVE_CONTROLS} negative controls, got {len(negatives)}"
        )
    if not suspects or not controls:
        raise ValueError("the negative-control bootstrap needs suspects and controls")
    models = [target, *negatives]
    s = np.array([[m[i] for i in suspects] for m in models])  # (K + 1, n)
    c = np.array([[m[i] for i in controls] for m in models])
    observed = _auc(s, c)
    rng = np.random.default_rng(seed)
    n, m, k = s.shape[1], c.shape[1], len(negatives)
    diffs = np.empty(resamples)
    for b in range(resamples):
        si, ci = rng.integers(0, n, n), rng.integers(0, m, m)
        aucs = _auc(s[:, si], c[:, ci])
        chosen = 1 + rng.integers(0, k, k)
        diffs[b] = aucs[0] - aucs[chosen].mean()
    low, high = np.quantile(diffs, [0.025, 0.975])
    return Bootstrap(
        auc_target=float(observed[0]),
        auc_negative=float(observed[1:].mean()),
        difference=float(observed[0] - observed[1:].mean()),
        ci_low=float(low),
        ci_high=float(high),
        p_value=float((1 + np.sum(diffs <= 0)) / (resamples + 1)),
        resamples=resamples,
    )
