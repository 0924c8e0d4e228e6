"""App. B's LLM filter (``leaktrace llm-filter``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import settings_of


@settings_of("llm-filter", block="similarity.filter")
@dataclass(frozen=True)
class LlmFilterSettings:
    """The characters of file each call shows and the tokens of each answer."""

    context_chars: int
    max_new_tokens: int
