"""pretrain: rebuild the embedded base model from the code and text corpora."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import write_table
from leaktrace.data.corpora import corpus_documents
from leaktrace.train.pretrain import PretrainSettings, pretrain_base_model

log = logging.getLogger(__name__)

PRETRAIN_LOG_SCHEMA = pa.schema(
    [
        ("step", pa.int64()),
        ("loss", pa.float64()),
        ("lr", pa.float64()),
        ("tokens", pa.int64()),
        ("seconds", pa.float64()),
    ]
)


def pretrain(corpora: dict, settings: dict, out_dir: Path, log_path: Path) -> None:
    """``corpora`` maps "code" and "text" to {"name": ..., "settings": corpus config}.
    The corpora are read from their sources, not from the ingested shards, so
    that re-ingesting them can never make Snakemake retrain the shipped model."""
    code, text = (corpus_documents(corpora[k]["name"], corpora[k]["settings"]) for k in ("code", "text"))
    rows: list[dict] = []
    pretrain_base_model(
        [d.text for d in code],
        [d.text for d in text],
        PretrainSettings(**settings),
        out_dir,
        on_log=rows.append,
    )
    write_table(rows, PRETRAIN_LOG_SCHEMA, log_path)
