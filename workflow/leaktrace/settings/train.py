"""The training mix and the LoRA runs (``leaktrace train``; ``mix`` and
``sham-mix`` read no config block beyond the model their rule passes)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import settings_of


@dataclass(frozen=True)
class LoraAdapter:
    """``train.lora``: the adapter."""

    rank: int
    alpha: int
    dropout: float
    target_modules: tuple[str, ...]


@settings_of("train", block="train")
@dataclass(frozen=True)
class TrainSettings:
    """What a LoRA run reads of ``train`` (``train.lora.LoraSettings.from_config``)."""

    epochs: tuple[int, ...]
    learning_rate: float
    batch_size: int
    gradient_accumulation: int
    effective_batch_size: int | None
    warmup_steps: int
    mixed_precision: str
    group_by_length: bool
    gradient_checkpointing: bool
    load_in_4bit: bool
    checkpoint_every: int
    lora: LoraAdapter
