"""One benchmark and one corpus as the config declares them (``leaktrace
ingest-benchmark``, ``leaktrace ingest-corpus``): an entry of ``benchmarks``
or ``corpora``, the rule's slice for that entry (its block is per entry:
``benchmarks.{name}``, the name the command's ``--name``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from leaktrace.config_slice import settings_of

Field = str | tuple[str, ...] | None
"""A mapped field: a path into a record, a template, a list of paths concatenated, or null (unmapped)."""


@settings_of("ingest-benchmark", block="benchmarks.{name}")
@dataclass(frozen=True)
class BenchmarkEntry:
    """``benchmarks.<name>`` (config/schema.yaml has each key's default and
    meaning): where a benchmark is and how its records map to samples.

    Every key is optional: the config fills each but ``dataset`` and
    ``problem_in_code`` from the schema, and the randomized publication's
    release (rules/watermark.smk) is read with its layout, format and path
    alone; a key left out reads as null (a format the preset and file imply,
    the shipped HumanEval, no limit, the preset's language...), and
    ``check_solutions`` left out takes the schema's default where the ingest
    reads it."""

    format: Literal["humaneval", "jsonl", "json", "parquet", "csv", "huggingface"] | None = None
    path: str | None = None
    limit: int | None = None
    check_solutions: bool | None = None
    preset: str | None = None  # one of data.benchmarks.PRESETS
    fields: Mapping[str, Field] | None = None  # one of data.benchmarks.FIELDS -> a mapped field
    language: str | None = None
    dataset: str | None = None
    config: str | None = None
    split: str | None = None
    revision: str | None = None
    problem_in_code: bool | None = None
    test_format: str | None = None  # one of data.io_tests.TEST_FORMATS
    testbed: bool | None = None


@settings_of("ingest-corpus", block="corpora.{name}")
@dataclass(frozen=True)
class CorpusEntry:
    """``corpora.<name>`` (config/schema.yaml has each key's default and
    meaning): where a corpus's documents come from, and the part files it is
    ingested into. Not a leakage scan's corpus source (``CorpusSource``),
    which may name one of these.

    ``shards`` is optional: the pretraining corpora are passed without it (a
    model reads a corpus whole, so resharding never retrains it); the other
    optional keys are those the schema gives no default (a source's own)."""

    source: Literal["stdlib", "pydoc", "records", "package"]
    exclude: tuple[str, ...]
    shards: int | None = None
    package: str | None = None
    sha256: str | None = None
    format: Literal["jsonl", "json", "parquet", "csv", "huggingface"] | None = None
    path: str | None = None
    dataset: str | None = None
    config: str | None = None
    split: str | None = None
    revision: str | None = None
    text: str | None = None
    limit: int | None = None
