"""Counterfactual generation (``leaktrace counterfactual``): its settings and its two models."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from leaktrace.config_slice import read_slice, settings_of
from leaktrace.settings.llm import Dtype, json_object


@settings_of("counterfactual", block="counterfactual")
@dataclass(frozen=True)
class CounterfactualSettings:
    """P (tokens of preceding context), the generation budget and the prompts per batch."""

    context_tokens: int
    max_new_tokens: int
    batch_size: int


@dataclass(frozen=True)
class CounterfactualModel:
    """One model of the counterfactual pair, as its rule resolves it (a hub id
    fetched to its path; the testbed's target is the base model and its adapter):
    ``--target`` and ``--reference``."""

    path: str
    revision: str | None
    adapter: str | None
    dtype: Dtype
    device: str
    max_length: int | None

    metavar = "JSON"

    @classmethod
    def from_flag(cls, text: str) -> CounterfactualModel:
        """The model as JSON: path, dtype, device, max_length, optional revision and adapter."""
        return read_slice(cls, cls.json_of(json_object(text, "counterfactual model")), "counterfactual model")

    @classmethod
    def json_of(cls, model: dict) -> dict:
        """``model`` with every key, null where absent."""
        return {f.name: model.get(f.name) for f in dataclasses.fields(cls)}

    def spec(self) -> dict:
        """The model without its adapter, as :mod:`leaktrace.models.configured` opens it."""
        spec = {"path": self.path, "dtype": self.dtype, "device": self.device, "max_length": self.max_length}
        return spec | ({"revision": self.revision} if self.revision is not None else {})
