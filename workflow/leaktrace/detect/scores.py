"""The per-sample score table every detector writes (``scores.parquet``)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Sequence
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records

SCORES_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("method", pa.string()),
        ("family", pa.string()),
        ("score", pa.float64()),
        (
            "decision",
            pa.bool_(),
        ),  # the detector's own flag (SrDetection's, a classifier's), read by the audit; null: none
        # learned detectors (DPDLLM, VeilProbe; detect/cross_fit.py): the cross-fit fold that held the sample out
        # and scored it, -1 where the full fit scored it (a sample outside the labelled calibration fold)
        ("fold", pa.int32()),
        ("fold_scores", pa.list_(pa.float64())),  # learned detectors: each fold's fit's score of the sample
    ]
)


def read_scores(path: str | Path, columns: Sequence[str] | None = None) -> list[dict]:
    """The rows of a ``scores.parquet`` (``columns`` of :data:`SCORES_SCHEMA`, else all), in table order."""
    return read_records(path, columns)


def scores_by_method(
    path: str | Path, exclude: Collection[str] = ()
) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """A ``scores.parquet`` by detector: {method: {sample_id: score}} of the finite scores and
    {method: family}, methods in table order, the ``exclude`` methods left out. The first is a
    defaultdict: a method without a finite score reads as no scores."""
    scores: dict[str, dict[str, float]] = defaultdict(dict)
    families = {}
    for r in read_scores(path, ["sample_id", "method", "family", "score"]):
        if r["method"] in exclude:
            continue
        families[r["method"]] = r["family"]
        if r["score"] is not None and math.isfinite(r["score"]):
            scores[r["method"]][r["sample_id"]] = r["score"]
    return scores, families
