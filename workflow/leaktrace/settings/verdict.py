"""The verdict page (``leaktrace verdict``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of


@settings_of("verdict")
@dataclass(frozen=True)
class PageSettings:
    """The verdict rule's slice: the run's name, calibration.alpha (per-sample
    flags), contamination.alpha (the answers' alpha), audit.max_detectable_auc,
    audit.training_data (scans whose corpus is declared training data) and
    audit.random_order (benchmarks whose published order the user declares random)."""

    run: str = config_key("run")
    calibration_alpha: float = config_key("calibration.alpha")
    contamination_alpha: float = config_key("contamination.alpha")
    max_detectable_auc: float = config_key("audit.max_detectable_auc")
    training_data: tuple[str, ...] = config_key("audit.training_data")
    random_order: tuple[str, ...] = config_key("audit.random_order")
