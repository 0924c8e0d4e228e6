"""The model interface every stage talks to. Backends (Hugging Face
transformers here; vLLM or an HTTP endpoint later) implement it, so GPU-only
code stays behind this line and the stages never import a framework."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class TokenStats:
    """Per-token statistics of one text under one model, from one forward pass.

    ``logprobs[t]`` is log p(x_t | x_<t); ``mu[t]`` and ``sigma[t]`` are the mean
    and standard deviation of log p(v | x_<t) under v ~ p(· | x_<t), the local
    statistics Min-K%++ normalises by (None where a pass was asked for the
    log-probabilities only). The first text token is conditioned on the BOS
    token, so every text token is scored. A pass conditioned on a prefix
    (ReCaLL) records how many shots and tokens of it preceded the text; a
    plain pass has none."""

    token_ids: np.ndarray
    logprobs: np.ndarray
    mu: np.ndarray | None
    sigma: np.ndarray | None
    truncated: bool
    prefix_shots: int = 0
    prefix_tokens: int = 0

    @property
    def n_tokens(self) -> int:
        return len(self.token_ids)


@dataclass(frozen=True)
class ModelSpec:
    """What the config says about a model: where it is, which adapter, how to run it."""

    name_or_path: str
    adapter: str | None = None
    dtype: str = "float32"
    device: str = "cpu"
    revision: str | None = None


def is_hub_id(name_or_path: str) -> bool:
    """Whether a configured model name is a Hugging Face hub id ("gpt2",
    "org/name") rather than a local path: it does not exist locally, is not
    written as a path, and has at most one slash."""
    return not Path(name_or_path).exists() and not name_or_path.startswith((".", "/")) and name_or_path.count("/") <= 1


StopCondition = Callable[[str], bool]


class LanguageModel(Protocol):
    name: str
    max_length: int  # tokens per sequence (BOS included): the trained context, capped by the config

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens."""

    def decode(self, ids: Sequence[int]) -> str: ...

    def score(self, texts: Sequence[str], *, moments: Sequence[bool] | None = None) -> list[TokenStats]:
        """Token statistics for every text, batched internally; ``moments[i]``
        False: text i needs its log-probabilities only (mu, sigma may be None)."""

    def score_conditioned(self, shots: Sequence[str], texts: Sequence[str], *,
                          max_prefix_tokens: int | None = None) -> list[TokenStats]:
        """Log-probabilities of every text conditioned on a prefix of ``shots``
        (ReCaLL; mu and sigma None): BOS + prefix tokens + text tokens, no second BOS, prefix
        tokens unscored, each text tokenised on its own so its token ids equal
        those of ``score`` (cut to the context as there, never for the
        prefix); per text the prefix keeps the shots nearest the text that fit
        the context (``models.context.fit_prefix``)."""

    def generate(
        self, prompts: Sequence[list[int]], *, max_new_tokens: int, stops: Sequence[StopCondition] | None = None
    ) -> list[str]:
        """Greedy continuations of tokenised prompts (BOS is added by the
        backend); row i ends early once ``stops[i](its text so far)`` holds."""

    def sample(self, prompts: Sequence[list[int]], *, max_new_tokens: int, temperature: float, seed: int,
               stops: Sequence[StopCondition] | None = None) -> list[str]:
        """Like ``generate``, but each token sampled at ``temperature`` (no top-k
        or top-p cut), from a generator seeded with ``seed``: the same prompts,
        batch size and seed give the same continuations."""

    def chat(self, messages: list[dict], *, max_new_tokens: int) -> str:
        """Greedy reply to ``messages`` ([{"role": ..., "content": ...}, ...])
        formatted by the model's chat template; a clear error if it has none."""
