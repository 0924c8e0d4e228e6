"""Corpus sources, streamed one shard at a time, and the accounting of every
document that is not scanned.

Kinds: ``corpus`` (an ingested testbed corpus shard, Parquet with doc_id,
source, text), ``training_mix`` (the testbed's training mix), ``files`` (a
directory glob of source files), ``jsonl`` and ``parquet`` (files with a
content column), ``huggingface`` (a dataset id, streamed with ``datasets``,
imported only when used). Sharding is deterministic: files, JSONL lines and
Parquet row groups go round-robin to ``n_parts`` shards; a Hugging Face
dataset is split with ``datasets.distributed.split_dataset_by_node``. Nothing
holds more than one record batch in memory.

:func:`check_document` decides what happens to a document: empty, binary
(a NUL character), non-UTF-8, or huge (above ``max_bytes``, when the policy
is ``skip``) documents are skipped and counted per reason; they never crash
the scan and are never dropped silently.
"""

from __future__ import annotations

import glob
import json
import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from leaktrace.errors import InputError

log = logging.getLogger(__name__)

SOURCE_KINDS = ("corpus", "training_mix", "files", "jsonl", "parquet", "huggingface")
SKIP_REASONS = ("empty", "binary", "non_utf8", "huge", "too_short", "unreadable", "bad_record")


@dataclass(frozen=True)
class RawDocument:
    doc_id: str
    location: str  # a path, or where in the source the record is
    data: str | bytes


def check_document(data: str | bytes, max_bytes: int, huge_policy: str) -> tuple[str | None, str | None]:
    """(text, None) if the document is scanned, else (None, skip reason)."""
    if isinstance(data, bytes):
        if not data.strip():
            return None, "empty"
        if b"\x00" in data:
            return None, "binary"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None, "non_utf8"
        size = len(data)
    else:
        if not data.strip():
            return None, "empty"
        if "\x00" in data:
            return None, "binary"
        try:
            size = len(data.encode("utf-8"))
        except UnicodeEncodeError:  # lone surrogates: not representable as UTF-8
            return None, "non_utf8"
        text = data
    if size > max_bytes and huge_policy == "skip":
        return None, "huge"
    return text, None


def _globbed(patterns: list[str], what: str) -> list[Path]:
    files = sorted({Path(p) for pattern in patterns for p in glob.glob(pattern, recursive=True) if Path(p).is_file()})
    if not files:
        raise InputError(", ".join(patterns), None, f"no {what} files match")
    return files


def _parquet_docs(path: Path, content: str, id_column: str | None, location: str | None, part: int, n_parts: int,
                  start_unit: int = 0) -> Iterator[RawDocument]:
    pf = pq.ParquetFile(path)
    names = pf.schema_arrow.names
    for column in (content, id_column, location):
        if column and column not in names:
            raise InputError(str(path), None, f"no column {column!r} (columns: {', '.join(names)})")
    columns = [c for c in dict.fromkeys([content, id_column, location]) if c]
    row = 0
    for rg in range(pf.num_row_groups):
        n = pf.metadata.row_group(rg).num_rows
        if (start_unit + rg) % n_parts == part:
            table = pf.read_row_group(rg, columns=columns)
            texts = table.column(content).to_pylist()
            ids = table.column(id_column).to_pylist() if id_column else None
            where = table.column(location).to_pylist() if location else None
            for k, text in enumerate(texts):
                doc_id = str(ids[k]) if ids else f"{path.name}#{row + k}"
                yield RawDocument(doc_id, str(where[k]) if where else f"{path}#{row + k}", text if text is not None else "")
        row += n


def iter_source(source: dict, part: int, n_parts: int, inputs: list[Path], skips: Counter) -> Iterator[RawDocument]:
    """The documents of shard ``part`` of ``n_parts`` of a configured source.
    ``inputs`` are the pipeline artifacts a ``corpus`` or ``training_mix``
    source reads (the ingested shard, the mix)."""
    kind = source["kind"]
    if kind == "corpus":
        for path in inputs:
            yield from _parquet_docs(path, "text", "doc_id", "source", 0, 1)
    elif kind == "training_mix":
        for path in inputs:
            for k, doc in enumerate(_parquet_docs(path, "text", "source_id", "kind", 0, 1)):
                if k % n_parts == part:
                    yield RawDocument(doc.doc_id, f"training-mix:{doc.location}:{k}", doc.data)
    elif kind == "files":
        root = Path(source["root"])
        if not root.is_dir():
            raise InputError(str(root), None, "corpus root is not a directory")
        paths = sorted(p for p in root.glob(source["glob"]) if p.is_file())
        if not paths:
            raise InputError(str(root), None, f"no files match {source['glob']!r}")
        for k, path in enumerate(paths):
            if k % n_parts != part:
                continue
            try:
                data = path.read_bytes()
            except OSError as err:
                log.warning("unreadable %s: %s", path, err)
                skips["unreadable"] += 1
                continue
            yield RawDocument(path.relative_to(root).as_posix(), str(path), data)
    elif kind == "jsonl":
        content, id_column = source["content"], source.get("id")
        line_no = 0
        for path in _globbed(source["paths"], "JSONL"):
            with open(path, "rb") as fh:
                for k, line in enumerate(fh):
                    line_no += 1
                    if (line_no - 1) % n_parts != part or not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except (json.JSONDecodeError, UnicodeDecodeError) as err:
                        log.warning("%s, line %d: not a JSON record (%s); counted as bad_record", path, k + 1, err)
                        skips["bad_record"] += 1
                        continue
                    if not isinstance(record, dict) or content not in record:
                        raise InputError(str(path), k + 1, f"record has no content field {content!r}")
                    text = record[content]
                    if not isinstance(text, str):
                        skips["bad_record"] += 1
                        continue
                    doc_id = str(record[id_column]) if id_column and id_column in record else f"{path.name}:{k + 1}"
                    yield RawDocument(doc_id, f"{path}:{k + 1}", text)
    elif kind == "parquet":
        unit = 0
        for path in _globbed(source["paths"], "Parquet"):
            yield from _parquet_docs(path, source["content"], source.get("id"), source.get("location"), part, n_parts,
                                     start_unit=unit)
            unit += pq.ParquetFile(path).num_row_groups
    elif kind == "huggingface":
        yield from _huggingface_docs(source, part, n_parts)
    else:
        raise ValueError(f"unknown corpus source kind {kind!r}; known: {', '.join(SOURCE_KINDS)}")


def _huggingface_docs(source: dict, part: int, n_parts: int) -> Iterator[RawDocument]:
    try:
        import datasets
        from datasets.distributed import split_dataset_by_node
    except ImportError as err:
        raise InputError(source["dataset"], None, "a huggingface corpus source needs the `datasets` package "
                         "(pip install datasets); it is not part of the pinned environment") from err
    ds = datasets.load_dataset(source["dataset"], name=source.get("config"), split=source.get("split") or "train",
                               streaming=True, revision=source.get("revision"))
    ds = split_dataset_by_node(ds, rank=part, world_size=n_parts)
    content, id_column, location = source["content"], source.get("id"), source.get("location")
    for k, record in enumerate(ds):
        if content not in record:
            raise InputError(source["dataset"], k, f"record has no content field {content!r}")
        doc_id = str(record[id_column]) if id_column else f"{source['dataset']}:{part}:{k}"
        where = str(record[location]) if location else f"hf://{source['dataset']}#{part}:{k}"
        yield RawDocument(doc_id, where, record[content] if record[content] is not None else "")
