"""Which backend runs a role's model, checked against what the stage needs.

A role (``llm.generator``, ``llm.judge``, ``llm.variant_llm`` in the config)
is a model spec naming its backend. Each backend declares its capabilities
without being loaded; a stage names the capabilities its method needs, and
``select_backend`` returns the first candidate that has them all, or stops
with an error that names what is missing and which backends have it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from leaktrace.models.backend import BACKEND_CAPABILITIES, Capability, ModelSpec
from leaktrace.models.cache import CachedModel, ResponseCache

C = Capability
BACKENDS = tuple(BACKEND_CAPABILITIES)

# What each detector family needs of the scored model.
METHOD_NEEDS = {
    "loss": {C.PROMPT_LOGPROBS},
    "zlib": {C.PROMPT_LOGPROBS},
    "lowercase": {C.PROMPT_LOGPROBS},
    "min_k": {C.PROMPT_LOGPROBS},
    "min_k_plus_plus": {C.PROMPT_LOGPROBS, C.NEXT_TOKEN_DISTRIBUTION},
    "dc_pdd": {C.PROMPT_LOGPROBS},
    "ref": {C.PROMPT_LOGPROBS},
    "neighbor": {C.PROMPT_LOGPROBS},
    "recall": {C.PROMPT_LOGPROBS},
    "srdetection_graybox": {C.PROMPT_LOGPROBS},
    "srdetection_blackbox": {C.GENERATE},
    # the target only generates; their features come from models of their own (reference adapter, mapping model)
    "dpdllm": {C.GENERATE},
    "veilprobe": {C.GENERATE},
}


class BackendError(ValueError):
    """No configured backend can do what a stage needs."""


def spec_from_config(role: dict) -> ModelSpec:
    """The ``ModelSpec`` of a role's config block (schema ``$defs/llm``)."""
    return ModelSpec(
        name_or_path=role["model"],
        adapter=role.get("adapter"),
        dtype=role.get("dtype", "float32"),
        device=role.get("device", "cpu"),
        revision=role.get("revision"),
        backend=role["backend"],
    )


def backend_capabilities(role: dict) -> frozenset[Capability]:
    """What the role's backend can do, known from the config alone."""
    backend = role["backend"]
    if backend not in BACKEND_CAPABILITIES:
        raise BackendError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    declared = {C.PROMPT_LOGPROBS} if backend == "openai" and role.get("openai", {}).get("prompt_logprobs") else set()
    return BACKEND_CAPABILITIES[backend] | declared


def method_needs(methods: Iterable[str]) -> set[Capability]:
    return set().union(*(METHOD_NEEDS[m] for m in methods))


def select_backend(candidates: Sequence[dict], needs: Iterable[Capability], purpose: str) -> dict:
    """The first role config among ``candidates`` (in order of preference)
    whose backend has every capability in ``needs``."""
    needs = set(needs)
    for role in candidates:
        if needs <= backend_capabilities(role):
            return role
    offered = (
        "; ".join(
            f"{r['backend']} ({r['model']}) lacks {', '.join(sorted(n.value for n in needs - backend_capabilities(r)))}"
            for r in candidates
        )
        or "no model is configured"
    )
    able = [b for b in BACKENDS if needs <= backend_capabilities({"backend": b, "openai": {"prompt_logprobs": True}})]
    raise BackendError(
        f"{purpose} needs {', '.join(sorted(n.value for n in needs))}: {offered}. "
        f"Backends that can: {', '.join(able) or 'none'}"
    )


# One vLLM engine per base model and engine settings in a process: a stage
# that runs several adapters of one base (the testbed's target and its
# reference) runs them on one engine through LoRA requests.
_VLLM_ENGINES: dict = {}


def _construct(role: dict):
    """The backend itself (loads the model or opens the engine)."""
    spec = spec_from_config(role)
    if role["backend"] == "transformers":
        from leaktrace.models.hf import HFLanguageModel

        return HFLanguageModel(spec, batch_size=role.get("batch_size", 16), max_length=role.get("max_length"))
    if role["backend"] == "vllm":
        from leaktrace.models.vllm_engine import VLLMModel, VLLMSettings

        settings = VLLMSettings.from_config(role.get("vllm", {}))
        key = (spec.name_or_path, spec.revision, spec.dtype, settings)
        if key not in _VLLM_ENGINES:
            _VLLM_ENGINES[key] = VLLMModel(spec, settings)
            return _VLLM_ENGINES[key]
        return _VLLM_ENGINES[key].with_adapter(spec.adapter)
    from leaktrace.models.openai_http import OpenAIModel, OpenAISettings

    if "openai" not in role:
        raise BackendError(f"{role['model']}: the openai backend needs an `openai` block with its base_url")
    return OpenAIModel(spec, OpenAISettings.from_config(role["openai"]))


def open_model(role: dict, needs: Iterable[Capability], purpose: str, cache_dir: Path | None):
    """The role's model, behind the response cache under ``cache_dir`` (the
    backend is loaded on the first call the cache cannot answer), or the
    backend itself when ``cache_dir`` is None."""
    role = select_backend([role], needs, purpose)
    if cache_dir is None:
        return _construct(role)
    return CachedModel(
        spec_from_config(role),
        backend_capabilities(role),
        lambda: _construct(role),
        ResponseCache(cache_dir),
        batch_size=role.get("batch_size", 16),
    )
