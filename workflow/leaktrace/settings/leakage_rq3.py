"""LessLeak's RQ3, pass@k on the leaked and non-leaked problems (``leaktrace leakage-rq3``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of


@settings_of("leakage-rq3", block="leakage.rq3")
@dataclass(frozen=True)
class Rq3Settings:
    """The k of pass@k, the completions a problem (n) and their temperature,
    and the bootstrap's resamples."""

    k: tuple[int, ...]
    n: int
    temperature: float
    bootstrap_resamples: int = config_key("aggregate.bootstrap_resamples")
