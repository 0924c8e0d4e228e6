"""Dataset inference of one suspect set against one validation set, as the
row every dataset-level table prints (the testbed's contamination table and
the audit's): the features both sets share, the p-value, and the p-value
curve over growing set sizes with the smallest size that reaches alpha."""

from __future__ import annotations

from collections.abc import Sequence

from leaktrace.contamination.combine import COMBINATION
from leaktrace.contamination.dataset_inference import dataset_inference, p_value_curve, smallest_n
from leaktrace.contamination.features import feature_matrix, shared_methods
from leaktrace.seeding import derive_seed
from leaktrace.settings.contamination import DatasetInferenceSettings

DI = "dataset_inference"  # the test's name in every table


def dataset_inference_row(
    suspect_lookup: dict,
    suspect_ids: Sequence[str],
    validation_lookup: dict,
    validation_ids: Sequence[str],
    di: DatasetInferenceSettings,
    alpha: float,
    seed: int,
    *,
    curve: bool = True,
) -> tuple[dict, list[tuple[int, float]]]:
    """The row and its p-value curve."""
    methods = shared_methods([suspect_lookup, validation_lookup], [suspect_ids, validation_ids])
    suspect = feature_matrix(suspect_lookup, suspect_ids, methods)
    validation = feature_matrix(validation_lookup, validation_ids, methods)
    result = dataset_inference(suspect, validation, n_splits=di.n_splits, seed=seed)
    points = (
        p_value_curve(
            suspect,
            validation,
            di.curve_sizes,
            n_draws=di.curve_draws,
            n_splits=di.n_splits,
            seed=derive_seed(seed, "curve"),
        )
        if curve
        else []
    )
    row = {
        "test": DI,
        "n_suspect": len(suspect_ids),
        "n_validation": len(validation_ids),
        "features": ",".join(methods),
        "p_value": result.p_value,
        "combination": COMBINATION,
        "smallest_n": smallest_n(points, alpha) if curve else None,
    }
    return row, points
