"""LessLeak's RQ3, pass@k on the leaked and non-leaked problems (``leaktrace
leakage-rq3-runs``, ``leakage-rq3``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from leaktrace.config_slice import config_key, settings_of
from leaktrace.settings.sandbox import SandboxOverrides


@settings_of("leakage-rq3-runs", block="leakage.rq3")
@dataclass(frozen=True)
class Rq3Runs:
    """The prompt, the completions a problem (n), their temperature and
    length, and the sandbox runs of them: ``workers`` at a time, under the
    limits the config sets (the sandbox's own for the others)."""

    prompt: Literal["completion", "instruction"]
    n: int
    temperature: float
    max_new_tokens: int
    workers: int
    sandbox: SandboxOverrides


@settings_of("leakage-rq3", block="leakage.rq3")
@dataclass(frozen=True)
class Rq3Settings:
    """The k of pass@k, the completions a problem (n) and their temperature,
    and the bootstrap's resamples."""

    k: tuple[int, ...]
    n: int
    temperature: float
    bootstrap_resamples: int = config_key("aggregate.bootstrap_resamples")
