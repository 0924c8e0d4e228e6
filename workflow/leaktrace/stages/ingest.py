"""ingest: benchmarks and corpora into Parquet."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import write_table
from leaktrace.data.corpora import corpus_documents, shard
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path

log = logging.getLogger(__name__)

BENCHMARK_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("benchmark", pa.string()),
        ("task_id", pa.string()),
        ("prompt", pa.string()),
        ("solution", pa.string()),
        ("code", pa.string()),
        ("test", pa.string()),
        ("entry_point", pa.string()),
    ]
)

CORPUS_SCHEMA = pa.schema([("doc_id", pa.string()), ("source", pa.string()), ("text", pa.string())])

BENCHMARK_FORMATS = {"humaneval": load_humaneval}


def ingest_benchmark(name: str, settings: dict, output: Path) -> None:
    fmt = settings["format"]
    if fmt not in BENCHMARK_FORMATS:
        raise ValueError(f"benchmark {name}: unknown format {fmt!r}; known: {sorted(BENCHMARK_FORMATS)}")
    path = settings.get("path") or shipped_humaneval_path()
    samples = BENCHMARK_FORMATS[fmt](path, name)
    limit = settings.get("limit")
    if limit:
        samples = samples[:limit]
    rows = [
        {
            "sample_id": s.sample_id,
            "benchmark": s.benchmark,
            "task_id": s.task_id,
            "prompt": s.prompt,
            "solution": s.solution,
            "code": s.code,
            "test": s.test,
            "entry_point": s.entry_point,
        }
        for s in samples
    ]
    write_table(rows, BENCHMARK_SCHEMA, output)
    log.info("benchmark %s: %d samples from %s", name, len(rows), path)


def ingest_corpus(name: str, settings: dict, part: int, output: Path) -> None:
    """Write shard ``part`` of the corpus (one job per shard: a scatter)."""
    documents = corpus_documents(name, settings)
    docs = shard(documents, settings["shards"])[part]
    write_table([{"doc_id": d.doc_id, "source": d.source, "text": d.text} for d in docs], CORPUS_SCHEMA, output)
    log.info("corpus %s: part %d holds %d of %d documents", name, part, len(docs), len(documents))
