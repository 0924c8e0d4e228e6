"""verify-pairs: the scan's verifier on candidate pairs found elsewhere (a
user's own MinHash step, another tool's output).

Input: JSONL (or JSONL.gz), one object a line with ``bench_text`` and
``corpus_text`` (strings) and optional ``id``, ``language`` (of both sides;
``text`` for problem text; absent: guessed per text), ``tests`` and
``entry_point`` (the benchmark's, for execution equivalence). Output: one row
per pair with its verdict, its clone type, the rule that decided it and
every value behind it (:class:`~leaktrace.leakage.verify.Verdict`)."""

from __future__ import annotations

import logging
from dataclasses import fields
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import write_table
from leaktrace.errors import InputError
from leaktrace.leakage.execution import Executor
from leaktrace.leakage.pairs import read_pairs, settings_for, verify_records
from leaktrace.leakage.verify import RULES, Verdict, Verifier
from leaktrace.sandbox import SandboxLimits

log = logging.getLogger(__name__)

_TYPES = {"bool": pa.bool_(), "float": pa.float64(), "int": pa.int64(), "str": pa.string()}
VERDICT_FIELDS = [(f.name, _TYPES[f.type.split(" ")[0]]) for f in fields(Verdict)]  # "float | None" is a nullable float
SCHEMA = pa.schema([("id", pa.string()), ("language", pa.string()), *VERDICT_FIELDS, ("judge_label", pa.string())])


def verify_pairs(
    input_path: Path,
    output: Path,
    *,
    preset: str = "default",
    model: str | None = None,
    execute: bool = False,
    limits: SandboxLimits = SandboxLimits(),
    workers: int = 1,
    judge: dict | None = None,
) -> None:
    pairs = read_pairs(input_path)
    settings = settings_for(preset, execute, **({"model": model} if model else {}))
    try:
        verifier = Verifier(settings, Executor(limits, workers) if execute else None)
    except ValueError as err:  # a model file that is missing or not one
        raise InputError(str(model), None, str(err)) from None
    verdicts = verify_records(pairs, verifier)
    rows = [
        {"id": p["id"], "language": p.get("language"), **v.as_row(), "judge_label": None}
        for p, v in zip(pairs, verdicts, strict=True)
    ]
    if judge and judge.get("model"):
        _judge(rows, pairs, judge)
    write_table(rows, SCHEMA, output)
    log.info(
        "verify-pairs %s: %d pairs, %d duplicates (%s)",
        input_path,
        len(rows),
        sum(r["duplicate"] for r in rows),
        ", ".join(f"{k} {sum(r['decided_by'] == k for r in rows)}" for k in RULES),
    )


def _judge(rows: list[dict], pairs: list[dict], judge: dict) -> None:
    """The LLM judge on every pair (its label replaces the rule decision unless unparsed)."""
    from leaktrace.leakage.judge import judge_pair, load_template, open_judge

    model = open_judge(judge)
    template = load_template()
    for row, p in zip(rows, pairs, strict=True):
        verdict = judge_pair(
            model, template, p["bench_text"], p["corpus_text"], p["id"], max_new_tokens=judge.get("max_new_tokens", 16)
        )
        row["judge_label"] = verdict.label
        if verdict.duplicate is not None:
            row["duplicate"], row["decided_by"] = verdict.duplicate, "judge"
