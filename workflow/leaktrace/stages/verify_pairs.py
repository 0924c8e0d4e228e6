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
from pathlib import Path
from typing import Annotated, Literal

from leaktrace.artifacts import write_table
from leaktrace.errors import InputError
from leaktrace.leakage.execution import Executor
from leaktrace.leakage.pairs import VERDICTS_SCHEMA, read_pairs, settings_for, verify_records
from leaktrace.leakage.verify import RULES, Verifier
from leaktrace.sandbox import SandboxLimits
from leaktrace.settings.verify_pairs import PairJudge

log = logging.getLogger(__name__)


def verify_pairs(
    input: Annotated[Path, "JSONL: bench_text, corpus_text, optional id, language, tests, entry_point"],
    output: Annotated[Path, "Parquet: one verdict a pair, with its clone type and the values behind it"],
    /,
    preset: Annotated[Literal["default", "lessleak"], "tokeniser and thresholds"] = "default",
    model: Annotated[
        str | None, "the verifier: shipped (the preset's: the learned one), rules, or a model file from train-verifier"
    ] = None,
    execute: Annotated[bool, "run pairs with tests in the sandbox (execution equivalence)"] = False,
    isolation: Annotated[Literal["full", "weak"], "the sandbox's isolation"] = "full",
    workers: int = 1,
    judge: Annotated[PairJudge | None, 'an LLM judge as JSON: {"model": PATH_OR_HUB_ID, ...}'] = None,
) -> None:
    """Verify candidate pairs found elsewhere with the scan's verifier: one
    verdict per pair, its clone type and the values behind it.

    ``input``: JSONL (or JSONL.gz), one pair a line (the module's docstring)."""
    pairs = read_pairs(input)
    settings = settings_for(preset, execute, **({"model": model} if model else {}))
    try:
        verifier = Verifier(settings, Executor(SandboxLimits(isolation=isolation), workers) if execute else None)
    except ValueError as err:  # a model file that is missing or not one
        raise InputError(str(model), None, str(err)) from None
    verdicts = verify_records(pairs, verifier)
    rows = [
        {"id": p["id"], "language": p.get("language"), **v.as_row(), "judge_label": None}
        for p, v in zip(pairs, verdicts, strict=True)
    ]
    if judge is not None and judge.model:
        _judge(rows, pairs, judge)
    write_table(rows, VERDICTS_SCHEMA, output)
    log.info(
        "verify-pairs %s: %d pairs, %d duplicates (%s)",
        input,
        len(rows),
        sum(r["duplicate"] for r in rows),
        ", ".join(f"{k} {sum(r['decided_by'] == k for r in rows)}" for k in RULES),
    )


def _judge(rows: list[dict], pairs: list[dict], judge: PairJudge) -> None:
    """The LLM judge on every pair (its label replaces the rule decision unless unparsed)."""
    from leaktrace.leakage.judge import judge_pair, load_template, open_judge

    model = open_judge({"model": judge.model, "dtype": judge.dtype, "device": judge.device})
    template = load_template()
    for row, p in zip(rows, pairs, strict=True):
        verdict = judge_pair(
            model, template, p["bench_text"], p["corpus_text"], p["id"], max_new_tokens=judge.max_new_tokens
        )
        row["judge_label"] = verdict.label
        if verdict.duplicate is not None:
            row["duplicate"], row["decided_by"] = verdict.duplicate, "judge"
