"""The token passes and the detectors (``leaktrace tokens``,
``recall-tokens``, ``token-counts``, ``blackbox``, ``scores``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import settings_of


@settings_of("tokens", block="score.tokens")
@dataclass(frozen=True)
class TokenBatch:
    """The batches of a model pass (the token pass's settings, and the
    ``--batch`` of every other pass that reads ``score.tokens``)."""

    batch_size: int
    token_budget: int | None


@settings_of("recall-tokens", block="score.methods.recall")
@dataclass(frozen=True)
class RecallSettings:
    """ReCaLL's prefix: up to ``n_shots`` held-out non-members, at most
    ``max_prefix_tokens`` tokens (null: only the context limits it)."""

    n_shots: int
    max_prefix_tokens: int | None
