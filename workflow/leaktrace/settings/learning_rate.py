"""The learning-rate selection (``leaktrace select-lr``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import settings_of
from leaktrace.settings.train import TrainSettings


@dataclass(frozen=True)
class Selection:
    """``train.learning_rate_selection``: the rates tried and the held-out general-text chunks each is scored on."""

    grid: tuple[float, ...]
    held_out_texts: int


@settings_of("select-lr", block="train")
@dataclass(frozen=True)
class SelectionSettings(TrainSettings):
    """A LoRA run's ``train`` keys (each rate is trained as ``leaktrace train``
    trains) and ``train.learning_rate_selection``."""

    learning_rate_selection: Selection
