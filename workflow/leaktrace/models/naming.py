"""Testbed model names and what they encode.

Every testbed model is named by what was trained: ``reference`` (the base
model, never trained on the benchmark), ``ref-model`` (Ref's smaller
reference model) and ``target-r{ratio}-s{seed}-e{epoch}`` with its controls
``sham-…`` and ``twin-…``. The rules (``rules/common.smk``) and the stages
read names through this one module, so the pattern is spelled once."""

from __future__ import annotations

import re

import pyarrow as pa

BASE_MODEL = "reference"  # the base model: never trained on the benchmark
REF_MODEL = "ref-model"  # Ref's smaller reference model
CONTROLS = ("sham", "twin")  # the trained controls: a sham (no benchmark sample) and the complement twin
TRAINED_MODEL = re.compile(r"(?:target|sham|twin)-r([0-9.]+)-s(\d+)-e(\d+)")

COORDINATES = [
    ("model", pa.string()),
    ("ratio", pa.float64()),  # general-text tokens per code token; null for the reference
    ("seed", pa.int32()),  # the LoRA training seed; null for the reference
    ("epoch", pa.int32()),  # 0 for the reference (the base model)
]


def trained_model_labels(model: str) -> tuple[str, str, str]:
    """``target-r{ratio}-s{seed}-e{epoch}`` (or ``sham-…`` / ``twin-…``) ->
    its (ratio, seed, epoch) labels as spelled in the name (paths use them)."""
    match = TRAINED_MODEL.fullmatch(model)
    if not match:
        raise ValueError(f"{model!r} is not a target model name (target-r<ratio>-s<seed>-e<epoch>)")
    return match.group(1), match.group(2), match.group(3)


def model_coordinates(model: str) -> dict:
    """The mixing ratio, training seed and epoch of a testbed model name:
    the base model and Ref's reference model are epoch 0 (no ratio, no seed)."""
    if model in (BASE_MODEL, REF_MODEL):
        return {"ratio": None, "seed": None, "epoch": 0}
    match = TRAINED_MODEL.fullmatch(model)
    if not match:
        raise ValueError(f"{model!r} is neither {BASE_MODEL!r}, {REF_MODEL!r} nor a testbed model "
                         "'target|sham|twin-r<ratio>-s<seed>-e<epoch>'")
    return {"ratio": float(match.group(1)), "seed": int(match.group(2)), "epoch": int(match.group(3))}


def headline_model(models: list[str]) -> str | None:
    """The headline's target: the first mixing ratio and seed at its last epoch."""
    targets = [(m, model_coordinates(m)) for m in models if m != BASE_MODEL]
    if not targets:
        return None
    first = targets[0][1]
    return max((c["epoch"], m) for m, c in targets if (c["ratio"], c["seed"]) == (first["ratio"], first["seed"]))[1]
