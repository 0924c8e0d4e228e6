"""Candidate pairs found outside the scan (a user's own MinHash step,
another tool's output), as JSONL with ``bench_text`` and ``corpus_text``:
reading them with every malformed line named, the scan's verifier's
verdict on each and the table of those verdicts (``verify-pairs``; the
verifier's training reads them too)."""

from __future__ import annotations

import gzip
import json
from dataclasses import fields
from pathlib import Path

import pyarrow as pa

from leaktrace.errors import InputError, json_position, utf8_position
from leaktrace.leakage.lexer import LANGUAGES
from leaktrace.leakage.settings import PRESETS
from leaktrace.leakage.verify import Side, Verdict, Verifier, VerifySettings

OPTIONAL = ("id", "language", "tests", "entry_point")

_TYPES = {"bool": pa.bool_(), "float": pa.float64(), "int": pa.int64(), "str": pa.string()}
VERDICT_FIELDS = [(f.name, _TYPES[f.type.split(" ")[0]]) for f in fields(Verdict)]  # "float | None" is a nullable float
# verify-pairs' table: one row a pair, its id and language, every field of its Verdict, the LLM judge's label
VERDICTS_SCHEMA = pa.schema(
    [("id", pa.string()), ("language", pa.string()), *VERDICT_FIELDS, ("judge_label", pa.string())]
)


def read_pairs(path: Path) -> list[dict]:
    """The pairs of a JSONL file (gzipped when its name ends in .gz); a
    malformed line or a missing or mistyped field is an error naming the line."""
    pairs = []
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:  # split at newlines only, as JSON lines are and an editor counts them
        for number, data in enumerate(f, 1):
            where = f"line {number}"
            try:
                line = data.decode("utf-8")
            except UnicodeDecodeError as err:
                raise InputError(str(path), where, f"not UTF-8 ({utf8_position(data, err, number)})") from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise InputError(str(path), where, f"not JSON ({json_position(err, number)})") from None
            if not isinstance(record, dict):
                raise InputError(str(path), where, "each line needs a JSON object with bench_text and corpus_text")
            for field in ("bench_text", "corpus_text"):
                if not isinstance(record.get(field), str):
                    raise InputError(str(path), where, f"missing or non-string field {field!r}")
            for field in OPTIONAL:
                if record.get(field) is not None and not isinstance(record[field], str):
                    raise InputError(str(path), where, f"field {field!r} must be a string")
            if record.get("language") is not None and record["language"] not in LANGUAGES:
                raise InputError(
                    str(path), where, f"unknown language {record['language']!r}; known: {', '.join(LANGUAGES)}"
                )
            pairs.append({**record, "id": record.get("id") or str(number)})
    return pairs


def settings_for(preset: str, execute: bool, **overrides) -> VerifySettings:
    p = PRESETS[preset]
    return VerifySettings(p["tokenizer"], p["ngram"], **{**p["verify"], "execute": execute, **overrides})


def verify_records(pairs: list[dict], verifier: Verifier, *, always_execute: bool = False) -> list[Verdict]:
    """Each pair's verdict (a text's side is computed once, however many pairs
    it is in: a benchmark sample is in many, and so is a corpus file)."""
    sides = []
    benches: dict[tuple, Side] = {}
    corpora: dict[tuple, Side] = {}
    for p in pairs:
        lang = p.get("language")
        key = (p["bench_text"], lang, p.get("tests"), p.get("entry_point"))
        if key not in benches:
            benches[key] = verifier.side(p["bench_text"], lang, test=p.get("tests"), entry_point=p.get("entry_point"))
        corpus_key = (p["corpus_text"], lang)
        if corpus_key not in corpora:
            corpora[corpus_key] = verifier.side(p["corpus_text"], lang)
        sides.append((benches[key], corpora[corpus_key]))
    items = [(bench, corpus, v) for (bench, corpus), v in zip(sides, verifier.verdicts(sides), strict=True)]
    return verifier.execute(items, always=always_execute)
