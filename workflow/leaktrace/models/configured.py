"""The model a stage runs, from its config entry (``base_model``, an audited
model, a role of ``llm``): one place that turns a config dict and an optional
adapter into a loaded model, so every stage opens models the same way."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from leaktrace.models.backend import ModelSpec
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.score import TokenBatch


def model_settings(model: ModelSettings | Mapping) -> ModelSettings:
    """``model`` as a :class:`ModelSettings` (a stage not yet typed passes its JSON as a dict)."""
    if isinstance(model, ModelSettings):
        return model
    return ModelSettings(
        path=model["path"],
        dtype=model["dtype"],
        device=model["device"],
        max_length=model.get("max_length"),
        revision=model.get("revision"),
    )


def model_spec(model: ModelSettings | Mapping, adapter: str | None) -> ModelSpec:
    """The library's spec of ``model`` (its revision: ``revision``, which no
    rule's model carries: a hub model is fetched, then loaded from its copy)."""
    revision = model.get("revision") if isinstance(model, Mapping) else model.revision
    model = model_settings(model)
    return ModelSpec(
        name_or_path=model.path, adapter=adapter, dtype=model.dtype, device=model.device, revision=revision
    )


def language_model(model: ModelSettings | Mapping, adapter: str | None, batch: TokenBatch | Mapping):
    """The model, scoring at most its trained context capped by ``model.max_length``
    (the limit training used too)."""
    from leaktrace.models.hf import HFLanguageModel  # imports torch: only where a model runs

    if not isinstance(batch, TokenBatch):
        batch = TokenBatch(batch_size=batch["batch_size"], token_budget=batch.get("token_budget"))
    return HFLanguageModel(
        model_spec(model, adapter),
        batch_size=batch.batch_size,
        token_budget=batch.token_budget,
        max_length=model_settings(model).max_length,
    )


def generation_model(
    model: ModelSettings | Mapping,
    adapter: str | None,
    batch: TokenBatch | Mapping,
    generator: dict | None,
    cache_dir: Path | None,
    purpose: str,
):
    """The model a generating stage runs: with no ``llm.generator`` role, the
    base model (and adapter) in process through transformers, as always;
    with one, the base model (or the role's model) and the adapter through
    the role's backend, behind the response cache."""
    if generator is None:
        return language_model(model, adapter, batch)
    from leaktrace.models.backend import Capability
    from leaktrace.models.generation import BackendGenerator
    from leaktrace.models.select import open_model

    revision = model.get("revision") if isinstance(model, Mapping) else model.revision
    model = model_settings(model)
    needs = {Capability.GENERATE} | ({Capability.ADAPTERS} if adapter else set())
    role = {
        "dtype": model.dtype,
        "device": model.device,
        "max_length": model.max_length,
        **generator,
        "model": generator.get("model") or model.path,
        "adapter": adapter,
    }
    if not generator.get("model") and revision:
        role["revision"] = revision
    if role["backend"] == "vllm":  # the target's adapter and the reference share one engine
        role["vllm"] = {"enable_lora": True, **role.get("vllm", {})}
    return BackendGenerator(open_model(role, needs, purpose, cache_dir), model_spec(model, None), model.max_length)
