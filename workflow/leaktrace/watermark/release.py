"""A benchmark file in, its release out, in the input's own layout.

The input is any benchmark file the project reads (`data.benchmarks`: JSONL,
JSON, Parquet or CSV with a preset's or the user's field mapping). The
release is JSON lines, one record per input record in the input's order,
each the input record with its code fields (the mapped ``prompt`` and
``solution``) replaced by the published form's; every other field (the
tests, the entry point, the problem text where it is a field of its own) is
as the input has it, so whatever read the benchmark reads the release."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from leaktrace.data.benchmarks import FORMATS, assign_field, benchmark_entry, benchmark_records, field_mapping
from leaktrace.errors import InputError
from leaktrace.watermark.forms import Problem

LAYOUT_KEYS = ("preset", "fields", "language", "test_format")
_SUFFIXES = {".jsonl": "jsonl", ".jl": "jsonl", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


def file_format(path: Path) -> str:
    """The format a benchmark file's name says (a ``.gz`` after it allowed)."""
    suffixes = [s for s in path.suffixes if s != ".gz"]
    if suffixes and suffixes[-1] in _SUFFIXES:
        return _SUFFIXES[suffixes[-1]]
    raise InputError(
        str(path), None, f"cannot tell the format from the name; give --format ({', '.join(_SUFFIXES.values())})"
    )


def layout(path: Path, fmt: str | None, settings: dict) -> dict:
    """The reader's settings of a benchmark file: its format and field mapping."""
    fmt = fmt or file_format(path)
    if fmt not in FORMATS or fmt == "huggingface":
        raise InputError(str(path), None, f"publish reads a file: jsonl, json, parquet or csv, not {fmt!r}")
    chosen = {key: settings[key] for key in LAYOUT_KEYS if settings.get(key) is not None}
    field_mapping(benchmark_entry(chosen, "the layout"))  # an unknown preset or field stops here
    return {"format": fmt, **chosen}


def read_problems(path: Path, reader: dict, name: str, limit: int | None) -> tuple[list[dict], list[Problem]]:
    """The input's records as it holds them, and each record's problem."""
    found = benchmark_records(benchmark_entry({**reader, "path": str(path)}, "the layout"), name, limit)
    problems = [
        Problem(problem_id=s.task_id, code=s.code, prompt=s.prompt, row={**vars(s), "code": s.code}) for _, s in found
    ]
    return [record for record, _ in found], problems


def published_record(record: dict, reader: dict, prompt: str, solution: str) -> dict:
    """``record`` with its code fields holding a form's prompt and solution."""
    fields, _ = field_mapping(benchmark_entry(reader, "the layout"))
    for key, value in (("prompt", prompt), ("solution", solution)):
        if key in fields:
            record = assign_field(record, fields[key], value)
        elif value:
            raise ValueError(f"the form has a {key}, which the layout has no field for")
    return record


def write_jsonl(records: Sequence[dict], path: Path) -> None:
    lines = []
    for k, record in enumerate(records, 1):
        try:
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
        except TypeError as err:
            raise InputError(str(path), f"record {k}", f"a field JSON cannot hold: {err}") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")


def release_reader(reader: dict) -> dict:
    """How the release itself is read back: JSON lines, the input's field mapping."""
    return {**reader, "format": "jsonl"}
