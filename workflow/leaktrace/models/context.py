"""The context a model may be run with, and fitting a conditioning prefix into it.

A model is only trusted at the positions it was trained on: its config's
``max_position_embeddings`` (or its architecture's name for it) says how many
that is; pretraining writes its training context there. Training, scoring and
ReCaLL's prefixed pass all use the same limit: that number, capped by the
run's config."""

from __future__ import annotations

from collections.abc import Sequence

# What architectures call their trained context, in order of preference.
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


def trained_context(model_config) -> int:
    """The number of positions ``model_config`` (a transformers config) declares."""
    for key in CONTEXT_KEYS:
        value = getattr(model_config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    raise ValueError(f"the model config declares no context length (none of {', '.join(CONTEXT_KEYS)})")


def context_limit(model_config, cap: int | None) -> int:
    """Tokens per sequence (BOS included): the model's trained context, capped
    by the config's ``cap`` (None: no cap)."""
    limit = trained_context(model_config)
    if cap is None:
        return limit
    if cap < 2:
        raise ValueError(f"a context of {cap} tokens leaves no room for a text after BOS")
    return min(limit, cap)


def fit_prefix(shots: Sequence[Sequence[int]], budget: int) -> tuple[list[int], int]:
    """The conditioning prefix that fits ``budget`` tokens, from shots given
    as token ids in prefix order: whole shots are dropped from the front
    until the rest fits, and the first shot kept is cut from its front when
    even it alone is too long, so the tokens nearest the text are the ones
    kept. Returns (prefix ids, number of shots with at least one token in it)."""
    kept: list[int] = []
    n_shots = 0
    for shot in reversed(shots):
        room = budget - len(kept)
        if room <= 0:
            break
        kept = [*shot[max(0, len(shot) - room) :], *kept]
        n_shots += 1
    return kept, n_shots
