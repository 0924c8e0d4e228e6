"""The model a stage loads, as its rule passes it (``--model``): not a plain
config slice (the rule resolves the path: the fetched or shipped copy, an
audited model, Ref's reference model), so no command registers it; a stage
types its ``model`` parameter with it and the entry checks it.
``models.configured.model_spec`` turns it into the library's
:class:`~leaktrace.models.backend.ModelSpec`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSettings:
    """The model's ``path`` (resolved by the rule), ``dtype``, ``device``
    and ``max_length`` (a cap on the trained context; null: the model's own).
    An audited model's entry has no ``max_length``: a per-job value, not a
    config slice, so the key may be absent (null)."""

    path: str
    dtype: str
    device: str
    max_length: int | None = None
