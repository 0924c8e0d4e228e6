"""A leakage scan's config slice (``leakage.scans.<name>``), read by the
scan's commands (``leaktrace leakage-index``, ``leakage-scan``,
``leakage-gather``, ``leakage-rephrase``, ``leakage-rephrase-gather``).

The slice is per scan, so it is not one fixed config block: each rule
passes its scan's slice (``slice_from_config(ScanSlice, config,
"leakage.scans.<name>")``) as ``--scan-settings``. A scheme key that is null
takes the scan's preset's value (``leaktrace.leakage.settings.resolve``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from leaktrace.settings.models import Dtype


@dataclass(frozen=True)
class LshSlice:
    """``lsh``: the banding (null: the preset's, or chosen from the threshold)."""

    threshold: float | None
    false_negative_weight: float | None
    bands: int | None
    rows: int | None


@dataclass(frozen=True)
class VerifySlice:
    """``verify``: the verifier's thresholds (null: the preset's) and the limits of its sandbox runs."""

    jaccard: float | None
    containment: float | None
    flag: Literal["shingles", "tokens"] | None
    model: str | None
    type3_similarity: float | None
    structure: float | None
    overlap: float | None
    statement: float | None
    statement_min_words: int | None
    execute: bool | None
    sandbox: Mapping[str, int | float | str]  # SandboxLimits' fields; {}: the sandbox's own


@dataclass(frozen=True)
class JudgeSlice:
    """``judge``: the optional LLM judge of Type-2/3 and flagged pairs."""

    model: str | None
    dtype: Dtype
    device: str
    max_new_tokens: int


@dataclass(frozen=True)
class RephraseSettings:
    """``rephrase``: the rephrase channel (leakage/rephrase.py; off unless ``enabled``)."""

    enabled: bool
    embedder: Literal["tfidf", "hf"]
    model: str | None  # the hf embedder's model (hub id or path)
    dtype: Dtype
    device: str
    batch_size: int  # texts per forward pass (hf)
    max_length: int | None  # tokens per text at most (hf; the model's context applies in any case)
    top_k: int
    judge: bool  # ask the scan's judge about the top-k when it names a model


@dataclass(frozen=True)
class ScanSlice:
    """One scan's keys: its corpus source, its preset and the scheme keys
    that override it, its channels, how documents are read, the rephrase
    channel and the judge. Which benchmarks it reads is its inputs' business
    (the rule names them), and ``shards`` the rule's."""

    corpus: Mapping[str, Any]  # the source (leaktrace.leakage.sources.iter_source); its keys depend on its kind
    preset: Literal["default", "lessleak"]
    tokenizer: Literal["code", "lessleak"] | None
    ngram: int | None
    num_perm: int | None
    hash: Literal["rolling64", "sha1", "xxh32"] | None
    scheme: Literal["affine32", "legacy"] | None
    seed: int | None
    lsh: LshSlice
    verify: VerifySlice
    granularity: Literal["file", "function"] | None
    min_tokens: int | None
    renamed: bool | None
    containment_channel: float | bool | None  # false: off
    statement_channel: bool | None
    max_bytes: int
    huge: Literal["chunk", "skip"]
    language: str
    batch_size: int
    rephrase: RephraseSettings
    judge: JudgeSlice


ScanSlice.config_block = "leakage.scans.<name>"  # where its keys are, in the errors of a slice read at entry
