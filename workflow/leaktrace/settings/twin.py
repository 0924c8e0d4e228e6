"""The complement twin's paired test (``leaktrace twin``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of


@settings_of("twin")
@dataclass(frozen=True)
class TwinSettings:
    """The level of the twin's decisions."""

    contamination_alpha: float = config_key("contamination.alpha")
