"""The model a stage runs (``base_model``, an audited model, a role of
``llm``): one place that turns a :class:`~leaktrace.settings.models.ModelSettings`
and an optional adapter into a loaded model, so every stage opens models the
same way."""

from __future__ import annotations

from pathlib import Path

from leaktrace.models.backend import ModelSpec
from leaktrace.settings.llm import LlmRole
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.score import TokenBatch


def model_spec(model: ModelSettings, adapter: str | Path | None) -> ModelSpec:
    """The library's spec of ``model`` with ``adapter`` (a PEFT directory) put on it (its revision:
    ``model.revision``, which no rule's model carries: a hub model is fetched,
    then loaded from its copy)."""
    return ModelSpec(
        name_or_path=model.path,
        adapter=str(adapter) if adapter else None,
        dtype=model.dtype,
        device=model.device,
        revision=model.revision,
    )


def language_model(model: ModelSettings, adapter: str | Path | None, batch: TokenBatch):
    """The model, scoring at most its trained context capped by ``model.max_length``
    (the limit training used too)."""
    from leaktrace.models.hf import HFLanguageModel  # imports torch: only where a model runs

    return HFLanguageModel(
        model_spec(model, adapter),
        batch_size=batch.batch_size,
        token_budget=batch.token_budget,
        max_length=model.max_length,
    )


def generation_model(
    model: ModelSettings,
    adapter: str | Path | None,
    batch: TokenBatch,
    generator: LlmRole | None,
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

    adapter = str(adapter) if adapter else None
    generator = generator.as_config()
    needs = {Capability.GENERATE} | ({Capability.ADAPTERS} if adapter else set())
    role = {
        "dtype": model.dtype,
        "device": model.device,
        "max_length": model.max_length,
        **generator,
        "model": generator.get("model") or model.path,
        "adapter": adapter,
    }
    if not generator.get("model") and model.revision:
        role["revision"] = model.revision
    if role["backend"] == "vllm":  # the target's adapter and the reference share one engine
        role["vllm"] = {"enable_lora": True, **role.get("vllm", {})}
    return BackendGenerator(open_model(role, needs, purpose, cache_dir), model_spec(model, None), model.max_length)
