"""CodeSnitch's robustness study (``leaktrace mutations``, ``mutation-tokens``, ``mutation-study``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from leaktrace.config_slice import config_key, settings_of
from leaktrace.settings.sandbox import SandboxSettings

Kind = Literal["T1", "T2a", "T2b", "T3", "hybrid"]
Fold = Literal["calibration", "evaluation"]


@settings_of("mutations", block="mutate")
@dataclass(frozen=True)
class MutationsSettings:
    """The mutations made (kinds, T3's and Hybrid's targets), the folds mutated,
    Neighbor's neighbours per text, and the sandbox limits the variants use."""

    kinds: tuple[Kind, ...]
    t3_targets: tuple[float, ...]
    hybrid_target: float
    neighbors: int
    folds: tuple[Fold, ...]
    sandbox: SandboxSettings = config_key("variants.sandbox")


@settings_of("mutation-study", block="mutate")
@dataclass(frozen=True)
class MutationStudySettings:
    """The mutations studied, the folds evaluated, Neighbor's neighbours per
    text, the code-length buckets, and the detectors run (``score.methods``)."""

    kinds: tuple[Kind, ...]
    t3_targets: tuple[float, ...]
    hybrid_target: float
    neighbors: int
    folds: tuple[Fold, ...]
    length_edges: tuple[int, ...]
    methods: dict[str, dict[str, Any]] = config_key("score.methods")


@dataclass(frozen=True)
class RecallParams:
    """ReCaLL's prefix (``score.methods.recall``): ``--recall``."""

    n_shots: int
    max_prefix_tokens: int | None
