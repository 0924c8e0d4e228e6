"""Parquet artifacts: every stage writes through here, with an explicit schema
and zstd, so the same rows always give the same bytes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from leaktrace.errors import InputError


def write_table(rows: Sequence[dict] | dict[str, list], schema: pa.Schema, path: str | Path) -> None:
    """Write ``rows`` (a list of records or a dict of columns) with ``schema``.
    Columns missing from the schema are an error, never silently dropped."""
    if isinstance(rows, dict):
        table = pa.table(rows, schema=schema)
    else:
        extra = {k for row in rows for k in row} - set(schema.names)
        if extra:
            raise ValueError(f"columns {sorted(extra)} are not in the schema for {path}")
        table = pa.Table.from_pylist(list(rows), schema=schema)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd", use_dictionary=True, write_statistics=False)


def read_table(path: str | Path, columns: Sequence[str] | None = None) -> pa.Table:
    path = Path(path)
    if not path.exists():
        raise InputError(str(path), None, "artifact does not exist")
    return pq.read_table(path, columns=list(columns) if columns else None)


def read_records(path: str | Path, columns: Sequence[str] | None = None) -> list[dict]:
    return read_table(path, columns).to_pylist()


def read_columns(path: str | Path, columns: Sequence[str], what: str) -> list[dict]:
    """The rows of ``path`` (``what``: the table, in words), or an error naming the file and the columns it lacks."""
    names = pq.read_schema(path).names if Path(path).exists() else columns  # read_table names a missing file
    missing = set(columns) - set(names)
    if missing:
        raise InputError(str(path), None, f"{what} needs the columns {list(columns)}; {sorted(missing)} missing")
    return read_records(path, columns)
