"""The long table every similarity family writes: one row per (sample, metric).

``target`` and ``reference`` are the similarity of that model's generation
to the ground truth, in [0, 1], or null when the metric could not be
computed; the outcome columns then say why ("ok" when it was). ``delta`` is
target - reference, null when either is.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

OK = "ok"

SIMILARITY_FAMILY_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("metric", pa.string()),
        ("target", pa.float64()),
        ("reference", pa.float64()),
        ("delta", pa.float64()),
        ("target_outcome", pa.string()),
        ("reference_outcome", pa.string()),
    ]
)


@dataclass(frozen=True)
class Score:
    """One model's score on one metric: a value, or None with the cause."""

    value: float | None
    outcome: str = OK

    def __post_init__(self):
        if (self.value is None) == (self.outcome == OK):
            raise ValueError(f"a score has a value exactly when its outcome is {OK!r}: {self}")


def family_row(sample_id: str, metric: str, target: Score, reference: Score) -> dict:
    """The table row of one sample and metric from both models' scores."""
    delta = None if target.value is None or reference.value is None else target.value - reference.value
    return {
        "sample_id": sample_id,
        "metric": metric,
        "target": target.value,
        "reference": reference.value,
        "delta": delta,
        "target_outcome": target.outcome,
        "reference_outcome": reference.outcome,
    }
