"""Human-labelled candidate pairs, the verifier's training data (the
shipped ones: LessLeak-Bench's development pairs,
``resources/verify/lessleak-human-pairs-dev.jsonl.gz``): reading them, each
with its language, and their labels and cross-validation groups.

A pair has ``verify-pairs``' fields (:mod:`~leaktrace.leakage.pairs`) plus
``benchmark`` and ``bench_id`` (the benchmark sample: the unit of grouped
cross-validation) and ``dup`` (1: the annotators' semantically equivalent
or exact copy, 0: not). A pair without ``language`` takes its benchmark's
from the name's suffix (``-py``, ``-java``, ``-c``; ``swe-bench*`` is
Python)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from leaktrace.errors import InputError
from leaktrace.leakage.pairs import read_pairs

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


def labels_and_groups(pairs: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's label (``dup``) and its group (``benchmark/bench_id``: every pair of a sample in one fold)."""
    return (
        np.array([p["dup"] for p in pairs], dtype=np.int64),
        np.array([f"{p['benchmark']}/{p['bench_id']}" for p in pairs]),
    )
