"""The per-sample score table every detector writes (``scores.parquet``)."""

from __future__ import annotations

import pyarrow as pa

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
