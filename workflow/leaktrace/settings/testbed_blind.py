"""The testbed's blind baseline (``leaktrace testbed-blind``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of


@settings_of("testbed-blind", block="aggregate")
@dataclass(frozen=True)
class TestbedBlindSettings:
    """The permutation test's level and relabellings, and the cross-validation's repeats."""

    blind_permutations: int
    contamination_alpha: float = config_key("contamination.alpha")
    blind_repeats: int = config_key("audit.blind_repeats")
