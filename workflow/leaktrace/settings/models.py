"""The model a stage loads, as its rule passes it (``--model``, the
counterfactual pair's ``--target`` and ``--reference``) or a person types it
(``watermark-test --model``): not a plain config slice (the rule resolves the
path: the fetched or shipped copy, an audited model, Ref's reference model),
so no command registers it; a stage types its model parameter with it and
the entry reads it (:meth:`ModelSettings.from_flag`).
``models.configured.model_spec`` turns it into the library's
:class:`~leaktrace.models.backend.ModelSpec`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, Self

from leaktrace.config_slice import SliceError, json_object, read_slice

Dtype = Literal["float32", "bfloat16", "float16"]


@dataclass(frozen=True)
class ModelSettings:
    """The model's ``path`` (resolved by the rule: a local directory, or a
    hub id where a person types it), ``dtype``, ``device``, ``max_length``
    (a cap on the trained context; null: the model's own) and ``revision``
    (a hub id's; null: its default branch, and always null from a rule,
    which fetches a hub model and passes its copy). An audited model's
    entry has no ``max_length``: a per-job value, not a config slice, so
    the key may be absent (null), as may ``revision``."""

    path: str
    dtype: Dtype
    device: str
    max_length: int | None = None
    revision: str | None = None

    metavar = "MODEL"

    @classmethod
    def from_flag(cls, text: str) -> Self:
        """The model from its flag: a JSON object, as every rule passes it
        (``path``, ``dtype`` and ``device`` required, a key left out takes
        the field's default: null), or, for text that does not start with
        ``{``, a bare local directory or hub id, loaded in float32 on the
        CPU (the form a person types: ``watermark-test --model PATH``)."""
        if not text.lstrip().startswith("{"):
            if not text.strip():
                raise ValueError("a model is a path, a hub id or a JSON object; got an empty string")
            return cls(path=text, dtype="float32", device="cpu")
        value = json_object(text, "a model")
        required = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
        missing = [name for name in required if name not in value]
        if missing:
            raise SliceError(
                f"config model.{missing[0]}: missing (a model as JSON names its {', '.join(required)}; "
                "a bare path or hub id is loaded in float32 on the CPU)"
            )
        return read_slice(cls, value, "model")


@dataclass(frozen=True)
class AdaptedModel(ModelSettings):
    """A model with, where it has one, a PEFT ``adapter`` put on it (null:
    none): one of the counterfactual pair (``--target``, ``--reference``;
    the testbed's target is the base model and its adapter). Read from
    its flag as :class:`ModelSettings` is."""

    adapter: str | None = None
