"""Strict reading of an LLM's answer in the format its prompt asked for.

A judge's answer is data only when it is exactly what the prompt asked for:
anything else raises :class:`UnparseableAnswer` with a short cause, which the
caller counts (outcome ``unparseable_answer``); nothing is repaired or
guessed (no fence stripping, no first-number-in-the-text)."""

from __future__ import annotations

import json
import math
from collections.abc import Collection


class UnparseableAnswer(ValueError):
    """An answer not in the asked format; ``str(error)`` is its cause
    ("not_json: Extra data", "keys: ...", "out_of_range: ...")."""


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) < len(keys):
        raise UnparseableAnswer(f"duplicate_key: {sorted(k for k in set(keys) if keys.count(k) > 1)}")
    return dict(pairs)


def _no_constant(name: str):
    raise UnparseableAnswer(f"not_json: {name} is not JSON")


def json_object(answer: str, keys: Collection[str]) -> dict:
    """The answer as one JSON object with exactly ``keys``: the whole answer
    is the object (whitespace around it aside), so fences, prose before or
    after, a second object, duplicate keys and NaN/Infinity are all refused."""
    try:
        value = json.loads(answer.strip(), object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise UnparseableAnswer(f"not_json: {error.msg}") from None
    if not isinstance(value, dict):
        raise UnparseableAnswer(f"not_object: {type(value).__name__}")
    if set(value) != set(keys):
        raise UnparseableAnswer(f"keys: {sorted(value)}, asked {sorted(keys)}")
    return value


def unit_interval(value: object, field: str) -> float:
    """A JSON number in [0, 1] (a boolean is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UnparseableAnswer(f"type: {field} is {type(value).__name__}, not a number")
    if not (math.isfinite(value) and 0 <= value <= 1):
        raise UnparseableAnswer(f"out_of_range: {field} = {value}")
    return float(value)


def text_field(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise UnparseableAnswer(f"type: {field} is {type(value).__name__}, not a string")
    return value
