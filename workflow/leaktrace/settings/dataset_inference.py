"""``contamination.dataset_inference``: the dataset-level test's settings,
a nested part of the slice of every stage that runs the test (no command of
its own)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DatasetInferenceSettings:
    """``contamination.dataset_inference`` (config/schema.yaml has each key's default and meaning), read by
    :func:`leaktrace.config_slice.read_slice` at the entry of every stage that runs the test."""

    n_splits: int
    exclude_methods: tuple[str, ...]
    curve_sizes: tuple[int, ...]
    curve_draws: int
