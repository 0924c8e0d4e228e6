"""The member / non-member split (``leaktrace split``; ``twin-split`` reads no config)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import settings_of


@settings_of("split", block="filter.split")
@dataclass(frozen=True)
class SplitSettings:
    """``filter.split`` (config/schema.yaml has each key's default and meaning)."""

    pre_exposure: str | bool  # one of data.split.PRE_EXPOSURE_MODES
    min_valid_variants: int
    member_fraction: float
    calibration_fraction: float
