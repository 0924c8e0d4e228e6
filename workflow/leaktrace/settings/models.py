"""A model as a model-loading stage's ``--model`` takes it: the base model's
config entry, or the entry the rule builds for the ``{model}`` it scores
(an audited model, Ref's reference model). Not a config slice: a per-job
value, so its optional keys may be absent (an audited model has no
``max_length``). ``models.configured.model_spec`` turns it into the
library's :class:`~leaktrace.models.backend.ModelSpec`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelEntry:
    """Where a model is and how to run it; ``max_length`` caps its context
    (null: its trained context), ``revision`` pins a hub model."""

    path: str
    dtype: str
    device: str
    max_length: int | None = None
    revision: str | None = None
