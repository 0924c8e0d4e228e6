"""The verifier on a user's own candidate pairs (``leaktrace verify-pairs``):
the typed value of its ``--judge`` flag."""

from __future__ import annotations

import json
from dataclasses import dataclass

from leaktrace.config_slice import read_slice


@dataclass(frozen=True)
class PairJudge:
    """An LLM judge of every pair: its model (a path or hub id; null: no
    judge), dtype, device and the tokens it may answer with."""

    model: str | None
    dtype: str
    device: str
    max_new_tokens: int

    metavar = "JSON"

    @classmethod
    def from_flag(cls, text: str) -> PairJudge:
        """JSON ``{"model": PATH_OR_HUB_ID, "dtype", "device", "max_new_tokens"}``;
        what it leaves out: float32 on the CPU, 16 tokens."""
        try:
            given = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"not valid JSON: {err}") from None
        if not isinstance(given, dict):
            raise ValueError(f"a judge is a JSON object, got {text!r}")
        defaults = {"model": None, "dtype": "float32", "device": "cpu", "max_new_tokens": 16}
        return read_slice(cls, {**defaults, **given}, "--judge")
