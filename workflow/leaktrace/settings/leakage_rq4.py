"""LessLeak's RQ4 on the testbed's detectors (``leaktrace leakage-rq4``) and
as the paper runs it, by perplexity (``leaktrace leakage-rq4-ranking``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of


@settings_of("leakage-rq4", block="leakage.rq4")
@dataclass(frozen=True)
class Rq4Settings:
    """The k of precision among each detector's top k, and the bootstrap's resamples."""

    top_k: tuple[int, ...]
    bootstrap_resamples: int = config_key("aggregate.bootstrap_resamples")


@settings_of("leakage-rq4-ranking", block="leakage.rq4.ranking")
@dataclass(frozen=True)
class Rq4RankingSettings:
    """The balanced set's size (None: the smaller class whole), the k of the
    share leaked among the k lowest perplexities, and the bootstrap's resamples."""

    size: int | None
    top_k: tuple[int, ...]
    bootstrap_resamples: int = config_key("aggregate.bootstrap_resamples")
