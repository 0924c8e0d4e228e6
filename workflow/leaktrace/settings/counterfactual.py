"""Counterfactual generation (``leaktrace counterfactual``): its settings (its two
models are :class:`~leaktrace.settings.models.AdaptedModel`)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import settings_of


@settings_of("counterfactual", block="counterfactual")
@dataclass(frozen=True)
class CounterfactualSettings:
    """P (tokens of preceding context), the generation budget and the prompts per batch."""

    context_tokens: int
    max_new_tokens: int
    batch_size: int
