"""Token-prompt generation (``LanguageModel.generate``, as the counterfactual
stage and SrDetection black-box use it) over any backend's text interface,
for a generator role that is not the in-process transformers model.

Prompts are built with the base model's tokenizer, as in the testbed, and
sent as text (the backend tokenises them again and adds BOS itself). A
backend cannot run a Python stop condition, so each continuation is
generated to ``max_new_tokens`` and then cut at the first token where its
stop condition holds. A failed call stops the stage with its cause after the
answers that did come back are cached, so a re-run asks only for the rest."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from leaktrace.models.backend import ModelSpec, Sampling, StopCondition, TextModel
from leaktrace.models.context import context_limit
from leaktrace.models.loading import load_model_config, load_tokenizer

log = logging.getLogger(__name__)


class BackendGenerator:
    def __init__(self, model: TextModel, tokenizer_spec: ModelSpec, max_length: int | None = None):
        self.model, self.name = model, model.name
        self.tokenizer = load_tokenizer(tokenizer_spec)
        self.max_length = context_limit(load_model_config(tokenizer_spec), max_length)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def _cut(self, text: str, stop: StopCondition) -> str:
        ids = self.encode(text)
        for k in range(1, len(ids) + 1):
            if stop(head := self.decode(ids[:k])):
                return head
        return text

    def generate(
        self, prompts: Sequence[list[int]], *, max_new_tokens: int, stops: Sequence[StopCondition] | None = None
    ) -> list[str]:
        return self._complete(prompts, Sampling(max_new_tokens=max_new_tokens), stops)

    def sample(
        self,
        prompts: Sequence[list[int]],
        *,
        max_new_tokens: int,
        temperature: float,
        seed: int,
        stops: Sequence[StopCondition] | None = None,
    ) -> list[str]:
        """Sampled at ``temperature`` with ``seed`` (part of the cache key)."""
        return self._complete(
            prompts, Sampling(max_new_tokens=max_new_tokens, temperature=temperature, seed=seed), stops
        )

    def _complete(
        self, prompts: Sequence[list[int]], sampling: Sampling, stops: Sequence[StopCondition] | None
    ) -> list[str]:
        answers = self.model.complete([self.decode(p) for p in prompts], sampling)
        outcomes = Counter(a.outcome for a in answers)
        log.info("%s: %d generations, outcomes %s", self.name, len(answers), dict(sorted(outcomes.items())))
        failed = [a for a in answers if not a.ok]
        if failed:
            raise RuntimeError(
                f"{self.name}: {len(failed)} of {len(answers)} generations failed "
                f"({dict(sorted(outcomes.items()))}); the first: {failed[0].error}"
            )
        texts = [a.text for a in answers]
        return texts if stops is None else [self._cut(t, s) for t, s in zip(texts, stops, strict=True)]
