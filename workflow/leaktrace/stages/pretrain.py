"""pretrain: rebuild the embedded base model from the code and text corpora."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.train.pretrain import PretrainSettings, pretrain_base_model

log = logging.getLogger(__name__)

PRETRAIN_LOG_SCHEMA = pa.schema(
    [("step", pa.int64()), ("loss", pa.float64()), ("lr", pa.float64()), ("tokens", pa.int64()), ("seconds", pa.float64())]
)


def corpus_texts(parts: list[Path]) -> list[str]:
    return [r["text"] for part in parts for r in read_records(part, ["text"])]


def pretrain(code_parts: list[Path], text_parts: list[Path], settings: dict, out_dir: Path, log_path: Path) -> None:
    rows: list[dict] = []
    pretrain_base_model(
        corpus_texts(code_parts),
        corpus_texts(text_parts),
        PretrainSettings(**settings),
        out_dir,
        on_log=rows.append,
    )
    write_table(rows, PRETRAIN_LOG_SCHEMA, log_path)
