"""The audit's blind baseline (``leaktrace audit-blind``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of


@settings_of("audit-blind", block="audit")
@dataclass(frozen=True)
class AuditBlindSettings:
    """The gate's level (contamination.alpha) and the blind baseline's permutations and repeated splits."""

    contamination_alpha: float = config_key("contamination.alpha")
    blind_permutations: int
    blind_repeats: int
