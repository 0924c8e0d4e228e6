"""train-verifier: the learned verifier's model file from human-labelled
candidate pairs (the shipped one: LessLeak-Bench's development pairs,
``resources/verify/lessleak-human-pairs-dev.jsonl.gz``).

Input: JSONL(.gz) as ``verify-pairs`` reads it, each line also with
``benchmark`` and ``bench_id`` (the benchmark sample: the unit of grouped
cross-validation) and ``dup`` (1: the annotators' semantically equivalent
or exact copy, 0: not). A pair without ``language`` takes its benchmark's
from the name's suffix (``-py``, ``-java``, ``-c``; ``swe-bench*`` is
Python). The features are computed by the verifier itself
(:mod:`~leaktrace.leakage.features`), the model chosen and fitted by the
selection rule of :mod:`~leaktrace.leakage.combiner`. The same input and
seed give the same file, byte for byte."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Annotated

import numpy as np

from leaktrace.errors import InputError
from leaktrace.leakage import combiner
from leaktrace.leakage.features import vector
from leaktrace.leakage.pairs import read_pairs, settings_for, verify_records
from leaktrace.leakage.verify import Verifier
from leaktrace.seeding import derive_seed

log = logging.getLogger(__name__)

SUFFIXES = {"-py": "python", "-java": "java", "-c": "c"}


def benchmark_language(name: str) -> str | None:
    """The language of a LessLeak-Bench benchmark from its name (None: unknown)."""
    if name.startswith("swe-bench"):
        return "python"
    return next((lang for suffix, lang in SUFFIXES.items() if name.endswith(suffix)), None)


def read_labelled(path: Path) -> list[dict]:
    """The labelled pairs of ``path``, each with its language; a missing label or sample is an error naming the line."""
    pairs = read_pairs(path)
    for number, p in enumerate(pairs, 1):
        for field in ("benchmark", "bench_id"):
            if not isinstance(p.get(field), str):
                raise InputError(str(path), f"pair {number} (id {p['id']})", f"missing or non-string field {field!r}")
        if p.get("dup") not in (0, 1):
            raise InputError(
                str(path), f"pair {number} (id {p['id']})", f"field 'dup' must be 0 or 1, got {p.get('dup')!r}"
            )
        p["language"] = p.get("language") or benchmark_language(p["benchmark"])
    return pairs


def feature_matrix(pairs: list[dict]) -> np.ndarray:
    """The features of every pair (:data:`~leaktrace.leakage.features.FEATURES` order), as the verifier computes them."""
    verdicts = verify_records(pairs, Verifier(settings_for("default", False, model="rules")))
    return np.array([vector(v.as_row()) for v in verdicts], dtype=np.float64)


def labels_and_groups(pairs: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.array([p["dup"] for p in pairs], dtype=np.int64),
        np.array([f"{p['benchmark']}/{p['bench_id']}" for p in pairs]),
    )


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
