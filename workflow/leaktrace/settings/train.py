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


@dataclass(frozen=True)
class LoraRun:
    """What a LoRA run reads of ``train`` but its epochs (``train.lora.LoraSettings.from_config``):
    the testbed's runs add ``train.epochs``, DPDLLM's reference adapter its own."""

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


@settings_of("train", block="train")
@dataclass(frozen=True)
class TrainSettings(LoraRun):
    """What a LoRA run of the testbed reads of ``train``: a run's keys and the epochs it saves an adapter after."""

    epochs: tuple[int, ...]
