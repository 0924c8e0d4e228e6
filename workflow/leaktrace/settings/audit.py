"""The audit's leakage rates (``leaktrace audit-tables``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of


@dataclass(frozen=True)
class VariantCount:
    """An SrDetection detector's entry of ``score.methods``: the variants it compares with the original."""

    n_variants: int


@settings_of("audit-tables", block="audit")
@dataclass(frozen=True)
class AuditSettings:
    """The per-sample flags' level (calibration.alpha), the blind baseline's gate (contamination.alpha),
    audit.inconclusive_rate, and each configured SrDetection detector's variant count (null: not run)."""

    calibration_alpha: float = config_key("calibration.alpha")
    contamination_alpha: float = config_key("contamination.alpha")
    inconclusive_rate: float
    srdetection_graybox: VariantCount | None = config_key("score.methods.srdetection_graybox", optional=True)
    srdetection_blackbox: VariantCount | None = config_key("score.methods.srdetection_blackbox", optional=True)
