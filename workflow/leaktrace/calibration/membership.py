"""Dataset inference's null without label leakage: under a model that never
saw the split (``unexposed``), the real member / non-member assignment is
one random assignment among many, so dataset inference on random
assignments must reject at alpha about as often as alpha. Each draw
shuffles the labels within each fold (the split's class sizes kept), refits
every label-dependent feature on the shuffled calibration labels (the
learned detectors' cross-fits) and runs dataset inference with the shuffled
members as the suspect set. The label-free features are read once; only the
classifier fits repeat, all draws' fits as one batch.

Draws that ignore the labels (random halves of all samples) cannot see a
feature fitted on the labels it is then tested against; these can: such a
feature separates the shuffled classes as well as the real ones."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from leaktrace.calibration.conformal_checks import Refit
from leaktrace.calibration.table import REMEMBERSHIP, count_row, ks_uniform
from leaktrace.contamination.dataset_inference import dataset_inference
from leaktrace.contamination.features import feature_matrix, shared_methods
from leaktrace.detect.cross_fit import Problem, cross_fit_many
from leaktrace.seeding import derive_seed
from leaktrace.settings.contamination import DatasetInferenceSettings

METHOD = "dataset_inference"


def shuffled_labels(members: np.ndarray, folds: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The labels permuted within each fold."""
    shuffled = np.array(members, dtype=bool)
    for fold in np.unique(folds):
        where = np.flatnonzero(folds == fold)
        shuffled[where] = shuffled[rng.permutation(where)]
    return shuffled


def membership_rows(
    model: str,
    lookup: dict[str, dict[str, float]],
    split: dict[str, tuple[bool, str]],
    refits: dict[str, tuple[Refit, list[str]]],
    di: DatasetInferenceSettings,
    alphas: Sequence[float],
    draws: int,
    seed: int,
) -> list[dict]:
    """``lookup``: method -> sample_id -> score (the label-free features);
    ``split``: sample_id -> (member, fold); ``refits``: learned method ->
    (its refit, the sample ids of its positions). A learned detector that
    did not score every sample of the split is left out, as dataset
    inference leaves it out of the real test."""
    ids = sorted(split)
    fixed = shared_methods([{m: v for m, v in lookup.items() if m not in refits}], [ids])
    x_fixed = feature_matrix(lookup, ids, fixed)
    learned = {m: (refit, positions) for m, (refit, positions) in refits.items() if set(ids) <= set(positions)}
    members = np.array([split[s][0] for s in ids])
    folds = np.array([split[s][1] for s in ids])
    rng = np.random.default_rng(seed)
    labels = [shuffled_labels(members, folds, rng) for _ in range(draws)]
    columns = []
    for method, (refit, positions) in learned.items():
        where = {sid: i for i, sid in enumerate(positions)}
        at = np.array([where[s] for s in ids])
        calibration = np.flatnonzero(folds == "calibration")
        problems = [
            Problem(at[calibration], y[calibration], derive_seed(seed, method, "folds", k))
            for k, y in enumerate(labels)
        ]
        fits = cross_fit_many(problems, refit.n_samples, refit.fit_many, refit.folds)
        columns.append(np.stack([f.scores[at] for f in fits]))  # (draws, samples)
    ps, first = [], []
    for k, y in enumerate(labels):
        x = np.column_stack([x_fixed, *(c[k] for c in columns)])
        result = dataset_inference(x[y], x[~y], n_splits=di.n_splits, seed=derive_seed(seed, "dataset-inference", k))
        ps.append(result.p_value)
        first.append(result.split_p_values[0])
    ps = np.array(ps)
    note = (
        f"{draws} within-fold shuffles of {int(members.sum())} members and {int((~members).sum())} non-members; "
        f"features {', '.join([*fixed, *learned])}, the learned ones refitted per draw; KS of the first split's "
        "p-value (exact; the combined one is conservative by design)"
    )
    return [
        count_row(METHOD, model, REMEMBERSHIP, a, int((ps <= a).sum()), draws, **ks_uniform(first), note=note)
        for a in alphas
    ]
