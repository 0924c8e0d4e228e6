"""A role of the ``llm`` block (``llm.judge``, ``llm.generator``, ...): the
model behind a stage's LLM calls (config ``$defs/llm_model``), as a flag's
JSON (``--judge``, ``--generator``).

The schema gives a role no defaults (the backends' own settings classes hold
them), so a rule passes every key, null where the config leaves it out, and
:meth:`LlmRole.as_config` gives the backends the role as the config wrote it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

Dtype = Literal["float32", "bfloat16", "float16"]


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

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def json_of(cls, role: dict) -> dict:
        """``role`` as the config gives it, as its flag carries it: every key, null where absent."""
        return {key: role.get(key) for key in cls.keys()}

    def as_config(self) -> dict:
        """The role as the config wrote it (backend and model always; the
        other keys where set), for :func:`leaktrace.models.select.open_model`."""
        values = dataclasses.asdict(self)
        return {k: v for k, v in values.items() if v is not None or k in ("backend", "model")}
