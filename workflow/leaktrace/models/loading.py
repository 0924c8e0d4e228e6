"""Load a causal LM and its tokenizer the same way from a local path or a hub
id, optionally with a PEFT adapter on top.

A local directory is always loaded with ``local_files_only=True``, so the
default run and the tests can never reach a network even if the environment
allows it; a hub id goes through the normal ``from_pretrained`` resolution
(and its cache) for real runs on GPU nodes."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from leaktrace.errors import InputError
from leaktrace.models.backend import ModelSpec, is_hub_id

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _hub_kwargs(spec: ModelSpec) -> dict:
    if Path(spec.name_or_path).exists():
        if spec.revision:
            raise InputError(
                spec.name_or_path,
                None,
                f"revision {spec.revision!r} given for a local directory, which "
                "holds one revision: name the hub id with the revision, or drop the revision",
            )
        return {"local_files_only": True}
    if not is_hub_id(spec.name_or_path):
        raise InputError(spec.name_or_path, None, "model path does not exist (and is not a hub id)")
    return {"revision": spec.revision} if spec.revision else {}


@contextmanager
def _revision_errors(spec: ModelSpec):
    """A revision the hub (or, offline, the local hub cache) does not have is
    a config error naming the revision, not transformers' generic OSError."""
    try:
        yield
    except OSError as err:
        if not spec.revision:
            raise
        raise InputError(
            spec.name_or_path,
            None,
            f"cannot load revision {spec.revision!r} (unknown to the hub, or not "
            f"in the local hub cache when offline): {err}",
        ) from None


def load_tokenizer(spec: ModelSpec) -> PreTrainedTokenizerBase:
    kwargs = _hub_kwargs(spec)
    with _revision_errors(spec):
        tokenizer = AutoTokenizer.from_pretrained(spec.name_or_path, **kwargs)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model_config(spec: ModelSpec) -> PretrainedConfig:
    """The model's config alone (its trained context, without its weights)."""
    kwargs = _hub_kwargs(spec)
    with _revision_errors(spec):
        return AutoConfig.from_pretrained(spec.name_or_path, **kwargs)


def load_model(spec: ModelSpec) -> PreTrainedModel:
    """The model in ``spec.dtype`` on ``spec.device``; device ``auto``
    spreads its layers over every visible GPU (then CPU memory) with
    accelerate's ``device_map="auto"``, for a model that does not fit one GPU."""
    if spec.dtype not in DTYPES:
        raise ValueError(f"unknown dtype {spec.dtype!r}; choose one of {sorted(DTYPES)}")
    placed = {"device_map": "auto"} if spec.device == "auto" else {}
    kwargs = _hub_kwargs(spec)
    with _revision_errors(spec):
        model = AutoModelForCausalLM.from_pretrained(spec.name_or_path, dtype=DTYPES[spec.dtype], **placed, **kwargs)
    if spec.adapter is not None:
        from peft import PeftModel

        if not Path(spec.adapter).exists():
            raise InputError(spec.adapter, None, "adapter directory does not exist")
        model = PeftModel.from_pretrained(model, spec.adapter, is_trainable=False)
        model = model.merge_and_unload()
    if not placed:
        model.to(spec.device)
    model.eval()
    return model
