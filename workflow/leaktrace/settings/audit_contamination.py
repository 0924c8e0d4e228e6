"""The audit's dataset-level test and verdict table (``leaktrace audit-contamination``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of
from leaktrace.settings.contamination import DatasetInferenceSettings


@dataclass(frozen=True)
class NullDraws:
    """``contamination.calibration``: random halves of the controls per null."""

    seeds: int


@dataclass(frozen=True)
class AuditReference:
    """``audit.reference``: the model (null: none) and the detector it is compared on."""

    model: str | None
    method: str


@settings_of("audit-contamination", block="audit")
@dataclass(frozen=True)
class AuditContaminationSettings:
    """contamination.alpha, .dataset_inference and .calibration.seeds; the verdict table's levels
    (audit.pac_delta, inconclusive_auc, inconclusive_rate), audit.reference and audit.negative_controls."""

    contamination_alpha: float = config_key("contamination.alpha")
    dataset_inference: DatasetInferenceSettings = config_key("contamination.dataset_inference")
    calibration: NullDraws = config_key("contamination.calibration")
    pac_delta: float
    inconclusive_auc: float
    inconclusive_rate: float
    reference: AuditReference
    negative_controls: tuple[str, ...]

    def unexposed(self) -> list[str]:
        """The declared negative controls: audit.negative_controls and the contrast's reference."""
        return list(dict.fromkeys([*self.negative_controls, *([self.reference.model] if self.reference.model else [])]))
