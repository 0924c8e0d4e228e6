"""The identifier lexicon and the variants (``leaktrace lexicon``, ``variants``, ``natural-variants``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import settings_of


@settings_of("lexicon", block="variants.lexicon")
@dataclass(frozen=True)
class LexiconSettings:
    """``variants.lexicon``: a name enters the lexicon once it occurs ``min_count`` times in the corpus."""

    min_count: int
