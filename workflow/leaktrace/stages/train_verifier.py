"""train-verifier: the learned verifier's model file from human-labelled
candidate pairs (the shipped one: LessLeak-Bench's development pairs,
``resources/verify/lessleak-human-pairs-dev.jsonl.gz``).

Input: JSONL(.gz) as ``verify-pairs`` reads it, each line also with
``benchmark``, ``bench_id`` and ``dup`` (:mod:`~leaktrace.leakage.labelled`).
The features are computed by the verifier itself
(:mod:`~leaktrace.leakage.features`), the model chosen and fitted by the
selection rule of :mod:`~leaktrace.leakage.combiner`. The same input and
seed give the same file, byte for byte."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Annotated

import numpy as np

from leaktrace.leakage import combiner
from leaktrace.leakage.features import vector
from leaktrace.leakage.labelled import labels_and_groups, read_labelled
from leaktrace.leakage.pairs import settings_for, verify_records
from leaktrace.leakage.verify import Verifier
from leaktrace.seeding import derive_seed

log = logging.getLogger(__name__)


def feature_matrix(pairs: list[dict]) -> np.ndarray:
    """The features of every pair (:data:`~leaktrace.leakage.features.FEATURES` order), as the verifier computes them."""
    verdicts = verify_records(pairs, Verifier(settings_for("default", False, model="rules")))
    return np.array([vector(v.as_row()) for v in verdicts], dtype=np.float64)


def train_verifier(
    input: Annotated[Path, "JSONL(.gz): verify-pairs' fields plus benchmark, bench_id and dup (0/1)"],
    output: Annotated[Path, "the model file (JSON)"],
    /,
    seed: Annotated[int, "the cross-validation folds' and the model's seed"] = 0,
) -> dict:
    """Train the verifier's combiner on human-labelled pairs (grouped cross-validation picks the model
    and its threshold) and write it as a model file for verify-pairs --model."""
    input_path = input
    pairs = read_labelled(input_path)
    X = feature_matrix(pairs)
    y, groups = labels_and_groups(pairs)
    provenance = {
        "file": Path(input_path).name,
        "sha256": hashlib.sha256(Path(input_path).read_bytes()).hexdigest(),
        "pairs": len(pairs),
        "samples": len(set(groups)),
        "duplicates": int(y.sum()),
    }
    spec = combiner.fit(X, y, groups, derive_seed(seed, "train-verifier"), provenance)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(combiner.dumps(spec), encoding="utf-8")
    log.info(
        "train-verifier %s: %d pairs, %d samples; chose %s %s at threshold %.2f (inner grouped CV MCC %.3f)",
        input_path,
        len(pairs),
        provenance["samples"],
        spec["family"],
        spec["setting"],
        spec["threshold"],
        max(r["mcc"] for r in spec["selection"]),
    )
    return spec
