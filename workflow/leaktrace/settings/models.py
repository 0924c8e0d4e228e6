"""The model a stage loads, as its rule passes it (``--model``): not a plain
config slice (the rule resolves the path: the fetched or shipped copy, the
selection model), so no command registers it; a stage types its ``model``
parameter with it and the entry checks it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSettings:
    """The base model's ``path`` (resolved by the rule), ``dtype``, ``device``
    and ``max_length`` (a cap on the trained context; null: the model's own)."""

    path: str
    dtype: str
    device: str
    max_length: int | None
