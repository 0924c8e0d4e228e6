"""The audit's leakage rates (``leaktrace audit-tables``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of


@dataclass(frozen=True)
class VariantCount:
    """An SrDetection detector's entry of ``score.methods``: the variants it compares with the original."""

    n_variants: int


@dataclass(frozen=True)
class SrDetectionMethods:
    """The SrDetection detectors of ``score.methods``; one the config leaves out is not run (null)."""

    srdetection_graybox: VariantCount | None = None
    srdetection_blackbox: VariantCount | None = None


@settings_of("audit-tables", block="audit")
@dataclass(frozen=True)
class AuditSettings:
    """The per-sample flags' level (calibration.alpha), the blind baseline's gate (contamination.alpha),
    audit.inconclusive_rate, and the configured SrDetection detectors' variant counts."""

    calibration_alpha: float = config_key("calibration.alpha")
    contamination_alpha: float = config_key("contamination.alpha")
    inconclusive_rate: float
    methods: SrDetectionMethods = config_key("score.methods")
