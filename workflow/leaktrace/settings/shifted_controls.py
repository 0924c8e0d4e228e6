"""The shifted-control experiment (``leaktrace shifted-controls``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of
from leaktrace.settings.contamination import DatasetInferenceSettings


@settings_of("shifted-controls", block="audit.shifted_controls")
@dataclass(frozen=True)
class ShiftedControlsSettings:
    """The shifted-controls rule's slice, each field the config key it carries (config/schema.yaml)."""

    contamination_alpha: float = config_key("contamination.alpha")
    pac_delta: float = config_key("audit.pac_delta")
    inconclusive_auc: float = config_key("audit.inconclusive_auc")
    inconclusive_rate: float = config_key("audit.inconclusive_rate")
    dataset_inference: DatasetInferenceSettings = config_key("contamination.dataset_inference")
    exclude_methods: tuple[str, ...] = config_key("contamination.dataset_inference.exclude_methods")
    blind_permutations: int
    blind_repeats: int = config_key("audit.blind_repeats")
    reference_method: str = config_key("audit.reference.method")
    draws: int
    n_suspect: int
    n_control: int
    max_detectable_auc: float = config_key("audit.max_detectable_auc")
