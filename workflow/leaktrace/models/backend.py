"""The model interface every stage talks to. Backends (Hugging Face
transformers here; vLLM or an HTTP endpoint later) implement it, so GPU-only
code stays behind this line and the stages never import a framework."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import Enum
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
    backend: str = "transformers"  # transformers | vllm | openai (models.select)


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

    def score_conditioned(
        self, shots: Sequence[str], texts: Sequence[str], *, max_prefix_tokens: int | None = None
    ) -> list[TokenStats]:
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

    def sample(
        self,
        prompts: Sequence[list[int]],
        *,
        max_new_tokens: int,
        temperature: float,
        seed: int,
        stops: Sequence[StopCondition] | None = None,
    ) -> list[str]:
        """Like ``generate``, but each token sampled at ``temperature`` (no top-k
        or top-p cut), from a generator seeded with ``seed``: the same prompts,
        batch size and seed give the same continuations."""

    def chat(self, messages: list[dict], *, max_new_tokens: int) -> str:
        """Greedy reply to ``messages`` ([{"role": ..., "content": ...}, ...])
        formatted by the model's chat template; a clear error if it has none."""


class Capability(str, Enum):
    """What a backend can do; a stage names the ones its method needs
    (``models.select.select_backend``)."""

    GENERATE = "generate"  # text continuations (greedy or sampled, stop strings)
    CHAT = "chat"  # replies to a conversation through the model's chat template
    PROMPT_LOGPROBS = "prompt_logprobs"  # log p(x_t | x_<t) of every token of a given text
    NEXT_TOKEN_DISTRIBUTION = "next_token_distribution"  # mean and sd of log p over the vocabulary (Min-K%++)
    ADAPTERS = "adapters"  # a PEFT/LoRA adapter on top of the base model


# What each backend can do, known without loading it. vLLM returns the top
# log-probabilities of each position, never the whole next-token
# distribution Min-K%++'s mean and sd are taken over; an OpenAI-compatible
# server gives prompt log-probabilities only where the config says it does.
BACKEND_CAPABILITIES = {
    "transformers": frozenset(Capability),
    "vllm": frozenset({Capability.GENERATE, Capability.CHAT, Capability.PROMPT_LOGPROBS, Capability.ADAPTERS}),
    "openai": frozenset({Capability.GENERATE, Capability.CHAT}),
}


Message = Mapping[str, str]  # {"role": "system" | "user" | "assistant", "content": ...}


@dataclass(frozen=True)
class Sampling:
    """Sampling parameters of one LLM call, the same for every backend (and
    part of the response cache's key). ``temperature`` 0 is greedy decoding;
    ``seed`` makes a sampled call repeatable where the backend honours it;
    the text stops before the first of ``stop`` (not included)."""

    max_new_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def __post_init__(self):
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {self.max_new_tokens}")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError(f"temperature must be >= 0 and top_p in (0, 1], got {self.temperature}, {self.top_p}")
        object.__setattr__(self, "stop", tuple(self.stop))

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def as_dict(self) -> dict:
        return {**asdict(self), "stop": list(self.stop)}


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """``text`` up to the earliest occurrence of any stop string, and whether one occurred."""
    ends = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return (text[: min(ends)], True) if ends else (text, False)


class _Outcome:
    """``ok`` and the counted outcome of a result that carries ``error``."""

    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def outcome(self) -> str:
        """The counted outcome: "ok" or the error's kind."""
        return "ok" if self.error is None else self.error.split(":", 1)[0]


@dataclass(frozen=True)
class Completion(_Outcome):
    """One answer of one call: its text and why it ended ("stop", "length"),
    or, when the call failed, ``error``, the cause ("timeout: ...",
    "connection: ...", "bad_response: ...", "http_500: ..."), never a crash."""

    text: str | None
    finish_reason: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class PromptLogprobs(_Outcome):
    """log p(token | tokens before) of every token of a text as the backend
    tokenised it (``None`` where a server gives none, e.g. its first token),
    or ``error`` as in :class:`Completion`."""

    tokens: tuple[str, ...] = ()
    logprobs: tuple[float | None, ...] = ()
    error: str | None = None


class TextModel(Protocol):
    """The LLM-call interface every backend offers (transformers, vLLM, an
    OpenAI-compatible server), text in and text out, batched. Judges, LLM
    variant generators and test-case rewriters talk to this, through the
    response cache (``models.cache``). A failed item comes back with its
    ``error`` set; the rest of the batch is unaffected."""

    name: str
    spec: ModelSpec
    capabilities: frozenset[Capability]

    def complete(self, prompts: Sequence[str], sampling: Sampling) -> list[Completion]:
        """Continuations of raw text prompts (no chat template)."""

    def chat_many(self, conversations: Sequence[Sequence[Message]], sampling: Sampling) -> list[Completion]:
        """A reply to each conversation, formatted by the model's chat template."""

    def prompt_logprobs(self, texts: Sequence[str]) -> list[PromptLogprobs]:
        """Log-probabilities of the tokens of each text (``Capability.PROMPT_LOGPROBS``)."""
