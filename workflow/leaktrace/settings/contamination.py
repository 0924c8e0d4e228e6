"""The dataset-level contamination tests (``leaktrace contamination``) and the
dataset-inference block other stages share (``contamination.dataset_inference``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of


@dataclass(frozen=True)
class DatasetInferenceSettings:
    """``contamination.dataset_inference`` (config/schema.yaml has each key's default and meaning), read by
    :func:`leaktrace.config_slice.read_slice` at the entry of every stage that runs the test."""

    n_splits: int
    exclude_methods: tuple[str, ...]
    curve_sizes: tuple[int, ...]
    curve_draws: int


@dataclass(frozen=True)
class PreferenceSettings:
    """``contamination.variant_preference``'s test: the per-sample detector it reads and its resamples."""

    method: str
    n_resamples: int


@dataclass(frozen=True)
class VariantPreference(PreferenceSettings):
    reference: str | None  # the model whose preference is subtracted (resolved by preference_reference)


@dataclass(frozen=True)
class CalibrationDraws:
    """``contamination.calibration``: random draws per null (the calibrated models are the rule's flag)."""

    seeds: int


@settings_of("contamination", block="contamination")
@dataclass(frozen=True)
class ContaminationSettings:
    """The contamination rule's slice: ``contamination`` (less its exchangeability block) and
    ``calibration.alphas``, the calibration table's levels."""

    validation: tuple[str, ...]
    dataset_inference: DatasetInferenceSettings
    variant_preference: VariantPreference
    calibration: CalibrationDraws
    contamination_alpha: float = config_key("contamination.alpha")
    alphas: tuple[float, ...] = config_key("calibration.alphas")


@dataclass(frozen=True)
class DatasetInferenceCommand:
    """The ``dataset-inference`` command's settings (built from its flags, as the contamination slice spells them)."""

    contamination_alpha: float
    dataset_inference: DatasetInferenceSettings
    variant_preference: PreferenceSettings
