"""The identifier lexicon and the variants (``leaktrace lexicon``, ``variants``, ``natural-variants``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of
from leaktrace.settings.sandbox import SandboxSettings
from leaktrace.settings.score import TokenBatch


@settings_of("lexicon", block="variants.lexicon")
@dataclass(frozen=True)
class LexiconSettings:
    """``variants.lexicon``: a name enters the lexicon once it occurs ``min_count`` times in the corpus."""

    min_count: int


@dataclass(frozen=True)
class LexiconBlock(LexiconSettings):
    """The whole ``variants.lexicon`` block: the corpus the lexicon is built from too."""

    corpus: str


@dataclass(frozen=True)
class NaturalRule:
    """``variants.natural``: the rule that picks the n variants from the pool."""

    rule: str


@dataclass(frozen=True)
class NaturalPool(NaturalRule):
    """The whole ``variants.natural`` block: on, the variants stage draws
    ``pool`` renamings per set (``natural-variants`` then keeps n of them by
    the rule, under the selection ``model``)."""

    enabled: bool
    pool: int
    model: str | None


@dataclass(frozen=True)
class ExampleTransformation:
    """``variants.test_cases``, SrDetection's tau_t: composed into the headline
    set (``compose``), and the first ``untransformed`` headline renamings kept
    again without it."""

    compose: bool
    untransformed: int


@settings_of("variants", block="variants")
@dataclass(frozen=True)
class VariantsSettings:
    """The variants drawn per sample (``n``), the names each renames (absent:
    every name), tau_t, the LLM renamer's answer length, the input/output
    cases run (null: all), the sandbox's limits, and naturalness matching
    (absent: off).

    The rule's slice is the whole ``variants`` block, as the variants job's
    params have always been: ``lexicon`` (an input file of the stage, made by
    the lexicon job from these keys) and natural's ``rule`` and ``model``
    (natural-variants') are carried, not read, so a run made before keeps its
    variants and everything after them. It leaves ``names_per_variant`` out
    while null and ``natural`` while off (``variants.natural.generation_settings``)."""

    n: int
    test_cases: ExampleTransformation
    llm_max_new_tokens: int
    io_cases: int | None
    sandbox: SandboxSettings
    lexicon: LexiconBlock
    names_per_variant: int | None = None
    natural: NaturalPool | None = None


@settings_of("natural-variants", block="variants")
@dataclass(frozen=True)
class NaturalSettings:
    """``variants.n`` (detector variants kept per sample), ``variants.natural.rule``
    and the selection model's token pass, batched as ``score.tokens``."""

    n: int
    natural: NaturalRule
    tokens: TokenBatch = config_key("score.tokens")
