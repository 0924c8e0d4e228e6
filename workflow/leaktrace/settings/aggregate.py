"""The testbed's tables (``leaktrace aggregate``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of


@dataclass(frozen=True)
class GrayboxInstances:
    """``score.methods.srdetection_graybox``: the instances the null check covers."""

    n_variants: int
    sensitivity: tuple[int, ...]
    generators: tuple[str, ...]


@settings_of("aggregate", block="aggregate")
@dataclass(frozen=True)
class AggregateSettings:
    """The detection tables' bootstrap and filtered-subset floor, the decisions' level
    (``calibration.alpha``) and SrDetection gray-box's instances for the null check
    (null where that family is not run)."""

    bootstrap_resamples: int
    filtered_min_per_class: int
    calibration_alpha: float = config_key("calibration.alpha")
    srdetection_graybox: GrayboxInstances | None = config_key("score.methods.srdetection_graybox", default=None)
