"""The calibration table's rows of the per-sample detectors and of dataset
inference (``leaktrace calibration-conformal``, ``leaktrace calibration-membership``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of
from leaktrace.settings.contamination import DatasetInferenceSettings


@dataclass(frozen=True)
class VeilprobeRefit:
    """``score.methods.veilprobe``: what a refit of VeilProbe's classifier reads."""

    p_value: float
    proto_epochs: int
    labelled_fraction: float


@settings_of("calibration-conformal", block="calibration")
@dataclass(frozen=True)
class ConformalSettings:
    """The levels checked, the learned detectors' cross-fit folds, the re-partitions of the non-members,
    and VeilProbe's refit (null where that family is not run)."""

    alphas: tuple[float, ...]
    cross_fit_folds: int
    repartitions: int
    veilprobe: VeilprobeRefit | None = config_key("score.methods.veilprobe", default=None)


@settings_of("calibration-membership", block="calibration")
@dataclass(frozen=True)
class MembershipSettings:
    """The levels checked, the learned detectors' cross-fit folds, the re-randomised memberships,
    VeilProbe's refit (null where that family is not run) and dataset inference's settings."""

    alphas: tuple[float, ...]
    cross_fit_folds: int
    memberships: int
    dataset_inference: DatasetInferenceSettings = config_key("contamination.dataset_inference")
    veilprobe: VeilprobeRefit | None = config_key("score.methods.veilprobe", default=None)
