"""The identifier lexicon and the variants (``leaktrace lexicon``, ``variants``, ``natural-variants``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of
from leaktrace.settings.score import TokenBatch


@settings_of("lexicon", block="variants.lexicon")
@dataclass(frozen=True)
class LexiconSettings:
    """``variants.lexicon``: a name enters the lexicon once it occurs ``min_count`` times in the corpus."""

    min_count: int


@dataclass(frozen=True)
class NaturalRule:
    """``variants.natural``: the rule that picks the n variants from the pool."""

    rule: str


@settings_of("natural-variants", block="variants")
@dataclass(frozen=True)
class NaturalSettings:
    """``variants.n`` (detector variants kept per sample), ``variants.natural.rule``
    and the selection model's token pass, batched as ``score.tokens``."""

    n: int
    natural: NaturalRule
    tokens: TokenBatch = config_key("score.tokens")
