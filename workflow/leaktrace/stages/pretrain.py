"""pretrain: rebuild the embedded base model from the code and text corpora."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import write_table
from leaktrace.data.corpora import corpus_documents
from leaktrace.settings.pretrain import PretrainCorpora, PretrainSettings
from leaktrace.train.pretrain import pretrain_base_model

PRETRAIN_LOG_SCHEMA = pa.schema(
    [
        ("step", pa.int64()),
        ("loss", pa.float64()),
        ("lr", pa.float64()),
        ("tokens", pa.int64()),
        ("seconds", pa.float64()),
    ]
)


def pretrain(corpora: PretrainCorpora, settings: PretrainSettings, output_dir: Path, log: Path) -> None:
    """Pretrain a shipped model (tokenizer and weights) on its code and text corpora, and write its training log.

    The corpora are read from their sources, not from the ingested shards, so
    that re-ingesting them can never make Snakemake retrain the shipped model."""
    code, text = (corpus_documents(c.name, c.settings) for c in (corpora.code, corpora.text))
    rows: list[dict] = []
    pretrain_base_model([d.text for d in code], [d.text for d in text], settings, output_dir, on_log=rows.append)
    write_table(rows, PRETRAIN_LOG_SCHEMA, log)
