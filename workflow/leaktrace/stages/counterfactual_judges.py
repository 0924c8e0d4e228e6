"""counterfactual_judges: the LLM-judged similarity of every generation to
its ground-truth function (App. C.1's three judges and HyClone's Stage-1
screen, App. C.2), for target and reference, in the long format every
similarity family writes; and every answer as given, for audit."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.errors import InputError
from leaktrace.models.backend import Capability, Sampling
from leaktrace.models.select import open_model
from leaktrace.settings.counterfactual_judges import JudgesSettings
from leaktrace.settings.llm import LlmRole
from leaktrace.similarity.hyclone_screen import HYCLONE_SCREEN
from leaktrace.similarity.judges import JUDGES, judge_pairs
from leaktrace.similarity.table import SIMILARITY_FAMILY_SCHEMA

log = logging.getLogger(__name__)

METRICS = {**JUDGES, HYCLONE_SCREEN.metric: HYCLONE_SCREEN}
MODELS = ("target", "reference")

ANSWERS_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("model", pa.string()),  # "target" or "reference"
        ("metric", pa.string()),
        ("answer", pa.string()),  # the reply as given; null when the call failed
        ("score", pa.float64()),
        ("outcome", pa.string()),
        ("detail", pa.string()),  # why not ok: the parse failure or the call's error
    ]
)


def counterfactual_judges(
    generations: Path,
    functions: Path,
    judge: LlmRole,
    settings: JudgesSettings,
    output: Path,
    answers: Path,
    cache_dir: Path | None = None,
) -> None:
    """Ask the LLM judges (and HyClone's Stage-1 screen) how similar each counterfactual generation is
    to its ground-truth function, for target and reference; keep every answer as given.

    ``judge``: the ``llm.judge`` role; ``cache_dir``: its response cache
    (a re-run asks nothing and loads no model); ``answers``: every answer, for audit."""
    produced = {
        (g["sample_id"], g["model"]): g["function"]
        for g in read_records(generations, ["sample_id", "model", "function"])
    }
    ids = list(dict.fromkeys(sample_id for sample_id, _ in produced))
    wanted = set(ids)
    signature, truth = {}, {}
    for r in read_records(functions, ["sample_id", "signature", "continuation"]):
        if r["sample_id"] in wanted:
            signature[r["sample_id"]], truth[r["sample_id"]] = r["signature"], r["signature"] + r["continuation"]
    if missing := [sample_id for sample_id in ids if sample_id not in truth]:
        raise InputError(str(functions), missing[0], f"no ground truth for {len(missing)} generated samples")
    if incomplete := [sample_id for sample_id in ids if any((sample_id, m) not in produced for m in MODELS)]:
        raise InputError(str(generations), incomplete[0], "a sample without both a target and a reference generation")
    keys = [(sample_id, model, metric) for sample_id in ids for metric in settings.metrics for model in MODELS]
    items = [
        (METRICS[metric], truth[sample_id], signature[sample_id] + produced[(sample_id, model)])
        for sample_id, model, metric in keys
    ]
    lm = open_model(judge.as_config(), {Capability.CHAT}, "LLM judges (llm.judge)", cache_dir)
    judged = dict(zip(keys, judge_pairs(lm, items, Sampling(max_new_tokens=settings.max_new_tokens)), strict=True))

    given, rows, outcomes = [], [], Counter()
    for (sample_id, model, metric), (answer, verdict) in judged.items():
        given.append(
            {
                "sample_id": sample_id,
                "model": model,
                "metric": metric,
                "answer": answer.text,
                "score": verdict.score,
                "outcome": verdict.outcome,
                "detail": verdict.detail,
            }
        )
        outcomes[(metric, model, verdict.outcome)] += 1
    for sample_id in ids:
        for metric in settings.metrics:
            t, r = judged[(sample_id, "target", metric)][1], judged[(sample_id, "reference", metric)][1]
            delta = None if t.score is None or r.score is None else t.score - r.score
            rows.append(
                {
                    "sample_id": sample_id,
                    "metric": metric,
                    "target": t.score,
                    "reference": r.score,
                    "delta": delta,
                    "target_outcome": t.outcome,
                    "reference_outcome": r.outcome,
                }
            )
    write_table(rows, SIMILARITY_FAMILY_SCHEMA, output)
    write_table(given, ANSWERS_SCHEMA, answers)
    log.info(
        "judges under %s, %d samples: %s; calls: %s",
        lm.name,
        len(ids),
        {f"{m}/{role}/{o}": n for (m, role, o), n in sorted(outcomes.items())},
        dict(getattr(lm, "counts", {})),
    )
