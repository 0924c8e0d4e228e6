"""The LLM judges and HyClone's Stage-1 screen (``leaktrace counterfactual-judges``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from leaktrace.config_slice import settings_of


@settings_of("counterfactual-judges", block="similarity.judges")
@dataclass(frozen=True)
class JudgesSettings:
    """The judges asked (App. C.1's three prompts, HyClone's screen) and the tokens of each answer."""

    metrics: tuple[Literal["judge_song", "judge_nikiema", "judge_paper", "hyclone_screen"], ...]
    max_new_tokens: int
