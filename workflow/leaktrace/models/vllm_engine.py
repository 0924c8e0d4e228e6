"""The vLLM backend (the ``vllm`` extra; GPU only): batched generation and
chat through ``vllm.LLM``, LoRA adapters through ``LoRARequest`` on one
engine, and prompt log-probabilities through ``SamplingParams.prompt_logprobs``.

Written against vLLM 0.33.0's ``LLM.__init__/generate/chat``,
``SamplingParams`` and ``LoRARequest`` (read from the wheel). vLLM cannot run
on the machines this was written on: the tests drive this module with a
stand-in engine whose calls are bound to those signatures, recorded in
``tests/data/vllm_api.json`` (docs/guides/gpus-and-servers.md, "LLM backends")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from leaktrace.models.backend import BACKEND_CAPABILITIES, Completion, Message, ModelSpec, PromptLogprobs, Sampling

DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class VLLMSettings:
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9  # fraction of each GPU's memory the engine may take
    max_model_len: int | None = None  # None: the model's own context
    enable_lora: bool = False  # also without an adapter of its own, for ``with_adapter`` later
    max_lora_rank: int = 16
    max_loras: int = 1  # adapters resident on the GPU at once
    seed: int = 0
    enforce_eager: bool = False

    @classmethod
    def from_config(cls, config: dict) -> VLLMSettings:
        return cls(**config)


class VLLMApi(NamedTuple):
    """The three names of vLLM this backend uses (a stand-in in tests)."""

    LLM: Any
    SamplingParams: Any
    LoRARequest: Any


def vllm_api() -> VLLMApi:
    try:
        from vllm import LLM, SamplingParams
        from vllm.lora.request import LoRARequest
    except ImportError as err:
        raise ImportError(
            "the vllm backend needs the `vllm` extra (pip install 'leaktrace[vllm]') on a GPU machine"
        ) from err
    return VLLMApi(LLM, SamplingParams, LoRARequest)


class _Engine:
    """One ``vllm.LLM`` and the LoRA requests of the adapters it has served:
    one integer id per adapter path, as vLLM requires."""

    def __init__(self, spec: ModelSpec, settings: VLLMSettings, api: VLLMApi):
        if spec.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {spec.dtype!r}; choose one of {sorted(DTYPES)}")
        self.api, self.lora_enabled = api, settings.enable_lora or spec.adapter is not None
        kwargs = {
            "revision": spec.revision,
            "dtype": spec.dtype,
            "tensor_parallel_size": settings.tensor_parallel_size,
            "gpu_memory_utilization": settings.gpu_memory_utilization,
            "seed": settings.seed,
            "enforce_eager": settings.enforce_eager,
        }
        if settings.max_model_len is not None:
            kwargs["max_model_len"] = settings.max_model_len
        if self.lora_enabled:
            kwargs.update(enable_lora=True, max_lora_rank=settings.max_lora_rank, max_loras=settings.max_loras)
        self.llm = api.LLM(spec.name_or_path, **kwargs)
        self._adapters: dict[str, Any] = {}

    def lora_request(self, adapter: str | None):
        if adapter is None:
            return None
        if not self.lora_enabled:
            raise ValueError("this vLLM engine was started without LoRA (set vllm.enable_lora: true)")
        if not Path(adapter).is_dir():
            raise ValueError(f"adapter directory {adapter} does not exist")
        if adapter not in self._adapters:
            self._adapters[adapter] = self.api.LoRARequest(
                lora_name=f"adapter-{len(self._adapters) + 1}", lora_int_id=len(self._adapters) + 1, lora_path=adapter
            )
        return self._adapters[adapter]


class VLLMModel:
    capabilities = BACKEND_CAPABILITIES["vllm"]

    def __init__(
        self, spec: ModelSpec, settings: VLLMSettings, *, api: VLLMApi | None = None, engine: _Engine | None = None
    ):
        self.spec = spec
        self.name = spec.name_or_path if spec.adapter is None else f"{spec.name_or_path}+{spec.adapter}"
        self.engine = engine or _Engine(spec, settings, api or vllm_api())
        self.settings = settings
        self._lora = self.engine.lora_request(spec.adapter)

    def with_adapter(self, adapter: str | None) -> VLLMModel:
        """The same engine answering with another adapter (or the base model):
        the testbed's epochs are adapters of one base."""
        spec = ModelSpec(**{**self.spec.__dict__, "adapter": adapter})
        return VLLMModel(spec, self.settings, engine=self.engine)

    def _params(self, sampling: Sampling, **extra):
        return self.engine.api.SamplingParams(
            n=1,
            max_tokens=sampling.max_new_tokens,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            seed=sampling.seed,
            stop=list(sampling.stop) or None,
            **extra,
        )

    @staticmethod
    def _completions(outputs) -> list[Completion]:
        return [Completion(o.outputs[0].text, o.outputs[0].finish_reason) for o in outputs]

    def complete(self, prompts: Sequence[str], sampling: Sampling) -> list[Completion]:
        return self._completions(
            self.engine.llm.generate(list(prompts), self._params(sampling), use_tqdm=False, lora_request=self._lora)
        )

    def chat_many(self, conversations: Sequence[Sequence[Message]], sampling: Sampling) -> list[Completion]:
        return self._completions(
            self.engine.llm.chat(
                [[dict(m) for m in c] for c in conversations],
                self._params(sampling),
                use_tqdm=False,
                lora_request=self._lora,
                add_generation_prompt=True,
            )
        )

    def prompt_logprobs(self, texts: Sequence[str]) -> list[PromptLogprobs]:
        """Every prompt token's log-probability after the first one (BOS where
        the tokenizer adds one; vLLM gives it none)."""
        params = self._params(Sampling(max_new_tokens=1), prompt_logprobs=0)
        out = []
        for o in self.engine.llm.generate(list(texts), params, use_tqdm=False, lora_request=self._lora):
            chosen = [
                position[token] for token, position in zip(o.prompt_token_ids[1:], o.prompt_logprobs[1:], strict=True)
            ]
            out.append(PromptLogprobs(tuple(c.decoded_token for c in chosen), tuple(float(c.logprob) for c in chosen)))
        return out
