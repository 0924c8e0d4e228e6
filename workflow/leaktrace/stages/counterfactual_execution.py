"""counterfactual_execution: execution similarity (HyClone Stage 2, no LLM) of
each model's counterfactual generation to its ground-truth function, in the
similarity families' long format; coverage by cause goes to the log (the
outcome columns hold it per pair)."""

from __future__ import annotations

import logging
from pathlib import Path

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.samples import check_test
from leaktrace.similarity.execution import METRICS, ExecutionSettings, Sample, coverage, execution_scores, pair_metrics
from leaktrace.similarity.table import SIMILARITY_FAMILY_SCHEMA

log = logging.getLogger(__name__)

MODELS = ("target", "reference")


def load_samples(generations: Path, functions: Path, benchmark: Path | None) -> list[Sample]:
    """The samples of the generations table, with their ground truth and (where the
    benchmark has one) their test."""
    produced: dict[str, dict[str, str | None]] = {}
    for g in read_records(generations, ["sample_id", "model", "function", "parsed"]):
        produced.setdefault(g["sample_id"], {})[g["model"]] = g["function"] if g["parsed"] else None
    tests = {}
    if benchmark is not None:  # HumanEval-style check code (a test script made into one: data/script_tests.py)
        tests = {r["sample_id"]: check_test(r, str(benchmark))[0] for r in read_records(benchmark)}
    samples = []
    for f in read_records(functions, ["sample_id", "context", "signature", "continuation"]):
        if f["sample_id"] in produced:
            generated = produced[f["sample_id"]]
            samples.append(Sample(f["sample_id"], f["context"], f["signature"], f["continuation"],
                                  {model: generated.get(model) for model in MODELS}, tests.get(f["sample_id"])))
    return samples


def counterfactual_execution(generations: Path, functions: Path, benchmark: Path | None, settings: dict, seed: int,
                             output: Path, *, workers: int = 1) -> None:
    options = ExecutionSettings(**settings)
    samples = load_samples(generations, functions, benchmark)
    report = execution_scores(samples, options, seed, workers=workers)
    scores = report.scores
    log.info("execution similarity: %s", report.summary())
    rows = []
    for sample in samples:
        target, reference = (scores[(sample.sample_id, model)] for model in MODELS)
        values = {model: pair_metrics(scores[(sample.sample_id, model)], options.clone_threshold) for model in MODELS}
        for metric in METRICS:
            t, r = values["target"][metric], values["reference"][metric]
            rows.append({"sample_id": sample.sample_id, "metric": metric, "target": t, "reference": r,
                         "delta": None if t is None or r is None else t - r,
                         "target_outcome": target.outcome, "reference_outcome": reference.outcome})
    write_table(rows, SIMILARITY_FAMILY_SCHEMA, output)
    for model in MODELS:
        outcomes = [scores[(s.sample_id, model)].outcome for s in samples]
        ran = sum(o == "ok" for o in outcomes)
        log.info("execution similarity, %s: %d of %d pairs ran (%.1f%%); by outcome: %s", model, ran, len(outcomes),
                 100 * ran / max(len(outcomes), 1), coverage(outcomes))
