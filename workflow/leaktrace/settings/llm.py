"""A role of the ``llm`` block (``llm.judge``, ``llm.generator``, ...): the
model behind a stage's LLM calls (config ``$defs/llm_model``), as a flag's
JSON (``--judge``, ``--generator``).

The schema gives a role no defaults (the backends' own settings classes hold
them): a flag carries the role as the config wrote it, a key it leaves out
reads as null, and :meth:`LlmRole.as_config` gives the backends the role as
the config wrote it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from leaktrace.config_slice import json_object, read_slice
from leaktrace.settings.models import Dtype


@dataclass(frozen=True)
class LlmRole:
    """One model behind LLM calls: its backend, model, and the backend's settings."""

    backend: Literal["transformers", "vllm", "openai"]
    model: str | None
    revision: str | None
    adapter: str | None
    dtype: Dtype | None
    device: str | None
    batch_size: int | None
    max_length: int | None
    openai: dict[str, Any] | None
    vllm: dict[str, Any] | None

    metavar = "JSON"

    @classmethod
    def from_flag(cls, text: str) -> LlmRole:
        """The role as JSON, as the config writes it (what it leaves out: null)."""
        return read_slice(cls, cls.json_of(json_object(text, "llm role")), "llm role")

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def json_of(cls, role: dict) -> dict:
        """``role`` with every key, null where the config leaves it out."""
        return {key: role.get(key) for key in cls.keys()}

    def as_config(self) -> dict:
        """The role as the config wrote it (backend and model always; the
        other keys where set), for :func:`leaktrace.models.select.open_model`."""
        values = dataclasses.asdict(self)
        return {k: v for k, v in values.items() if v is not None or k in ("backend", "model")}
