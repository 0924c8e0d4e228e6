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
        raise ValueError(
            f"{model!r} is neither {BASE_MODEL!r}, {REF_MODEL!r} nor a testbed model "
            "'target|sham|twin-r<ratio>-s<seed>-e<epoch>'"
        )
    return {"ratio": float(match.group(1)), "seed": int(match.group(2)), "epoch": int(match.group(3))}


def target_of(twin: str) -> str:
    """The target a twin is the complement of: ``twin-r5-s0-e3`` -> ``target-r5-s0-e3``."""
    if not twin.startswith("twin-"):
        raise ValueError(f"{twin!r} is not a twin model name (twin-r<ratio>-s<seed>-e<epoch>)")
    return "target-" + twin.removeprefix("twin-")


def headline_model(models: list[str]) -> str | None:
    """The headline's target: the first mixing ratio and seed at its last epoch."""
    targets = [(m, model_coordinates(m)) for m in models if m != BASE_MODEL]
    if not targets:
        return None
    first = targets[0][1]
    return max((c["epoch"], m) for m, c in targets if (c["ratio"], c["seed"]) == (first["ratio"], first["seed"]))[1]


# The exposure-dose experiment's models (rules/dose.smk): each member inserted
# ``c`` times into the fixed mix of ratio ``r``, trained for ``e`` passes with
# training seed ``s``: ``dose-r{r}-c{c}-s{s}-e{e}`` (members as the target's),
# and its arms ``dose-twin-…`` (the non-members instead: the complement twin),
# ``dose-wm-…`` (the members' randomly published forms) and ``dose-ord-…``
# (the members packed in a randomised published order). A separate family,
# so no testbed name changes.
DOSE_ARMS = ("target", "twin", "wm", "ord")
DOSE_MODEL = re.compile(r"dose(?:-(twin|wm|ord))?-r([0-9.]+)-c(\d+)-s(\d+)-e(\d+)")
_TESTBED_ARM = {"target": "target", "twin": "twin", "wm": "wm"}  # testbed names that are a dose of one copy


def dose_model(arm: str, ratio: str, copies: int, seed: str, epoch: int) -> str:
    """The name of one dose model (``ratio`` and ``seed`` as their labels)."""
    if arm not in DOSE_ARMS:
        raise ValueError(f"dose arm {arm!r} is not one of {DOSE_ARMS}")
    return f"dose{'' if arm == 'target' else '-' + arm}-r{ratio}-c{copies}-s{seed}-e{epoch}"


def dose_labels(model: str) -> tuple[str, str, int, str, int]:
    """(arm, ratio label, copies, seed label, epochs) of a dose model; a
    testbed target, twin or watermark target (``wm-…``) is a dose of one copy
    (the default's mix) at its epoch."""
    match = DOSE_MODEL.fullmatch(model)
    if match:
        return match.group(1) or "target", match.group(2), int(match.group(3)), match.group(4), int(match.group(5))
    kind = model.split("-", 1)[0]
    if kind in _TESTBED_ARM:
        ratio, seed, epoch = trained_model_labels(model.replace("wm-", "target-", 1))
        return _TESTBED_ARM[kind], ratio, 1, seed, int(epoch)
    raise ValueError(
        f"{model!r} is neither a dose model (dose[-twin|-wm|-ord]-r<ratio>-c<copies>-s<seed>-e<epoch>) "
        "nor a testbed target, twin or watermark target"
    )
