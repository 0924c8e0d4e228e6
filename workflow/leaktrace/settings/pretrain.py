"""The shipped models' pretraining (``leaktrace pretrain``): the model's shape
and run, and the code and text corpora it reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from leaktrace.config_slice import SliceError, json_object, read_slice, settings_of
from leaktrace.settings.ingest import CorpusEntry


@settings_of("pretrain", block="base_model.pretrain.settings")
@dataclass(frozen=True)
class PretrainSettings:
    """``base_model.pretrain.settings`` (``reference_model.pretrain.settings``
    for the reference model, whose rule passes that block; config/schema.yaml
    has each key's default and meaning)."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    context_length: int  # also the model's max_position_embeddings: the context it is trusted with
    tokens: int
    batch_size: int
    learning_rate: float
    warmup_steps: int
    weight_decay: float
    text_upsampling: int
    seed: int


@dataclass(frozen=True)
class PretrainCorpus:
    """One corpus a model is pretrained on: its name under ``corpora`` and its entry there."""

    name: str
    settings: CorpusEntry


@dataclass(frozen=True)
class PretrainCorpora:
    """The code and the text corpus a model is pretrained on (``<model>.pretrain.code_corpus``,
    ``text_corpus``), each with its ``corpora`` entry but ``shards`` (a model reads a corpus whole)."""

    code: PretrainCorpus
    text: PretrainCorpus

    metavar = "JSON"

    @classmethod
    def from_flag(cls, text: str) -> PretrainCorpora:
        """``{"code": {"name": ..., "settings": {...}}, "text": {...}}``, each entry's keys
        checked as ``corpora.<name>``'s."""
        value = json_object(text, "the pretraining corpora")
        return cls(**{role: _corpus(value.get(role), role) for role in ("code", "text")})


def _corpus(value: object, role: str) -> PretrainCorpus:
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
        raise SliceError(f"the pretraining corpora's {role}: expected {{name, settings}}, got {value!r}")
    name = value["name"]
    return PretrainCorpus(name=name, settings=read_slice(CorpusEntry, value.get("settings"), f"corpora.{name}"))
