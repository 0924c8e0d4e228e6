"""The exposure-dose experiment's table (``leaktrace dose``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of
from leaktrace.settings.contamination import DatasetInferenceSettings


@dataclass(frozen=True)
class DoseLevels:
    """``dose.alpha``, ``dose.fpr``, ``dose.power`` (config/schema.yaml): the levels the table is read at."""

    alpha: float
    fpr: float
    power: float


@settings_of("dose", block="dose")
@dataclass(frozen=True)
class DoseSettings(DoseLevels):
    """The dose rule's slice: ``dose``'s levels and ``contamination.dataset_inference``."""

    dataset_inference: DatasetInferenceSettings = config_key("contamination.dataset_inference")
