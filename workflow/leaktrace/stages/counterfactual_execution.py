"""counterfactual_execution: execution similarity of each model's
counterfactual generation to its ground-truth function (HyClone's Stage 2,
App. C.2, with inputs from the benchmark's tests and hypothesis instead of an
LLM's: leaktrace's stand-in, not HyClone), in the similarity families' long
format; coverage by cause goes to the log (the outcome columns hold it per
pair).

Given HyClone's Stage-1 screen (the judges' table with its
``hyclone_screen`` metric), Stage 2 runs as the paper runs it, only on the
screen's candidates, model by model: a pair the screen did not call a
likely clone is not executed and has outcome ``screen:no_clone`` (or
``screen:<cause>`` where the screen has no answer)."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.samples import check_test
from leaktrace.settings.counterfactual_execution import ExecutionSettings
from leaktrace.similarity.execution import (
    METRICS,
    ExecutionSample,
    PairScore,
    coverage,
    execution_scores,
    pair_metrics,
)
from leaktrace.similarity.hyclone_screen import read_screen
from leaktrace.similarity.table import OK, SIMILARITY_FAMILY_SCHEMA

log = logging.getLogger(__name__)

MODELS = ("target", "reference")


def screened(
    samples: list[ExecutionSample], verdicts: dict[tuple[str, str], str]
) -> tuple[list[ExecutionSample], dict[tuple[str, str], PairScore]]:
    """The samples with only the generations the screen passed (a sample
    with none is left out), and the pairs it stopped with their cause."""
    kept, stopped = [], {}
    for sample in samples:
        passed = {}
        for model, body in sample.generations.items():
            verdict = verdicts.get((sample.sample_id, model), "screen:no_answer")
            if verdict == OK:
                passed[model] = body
            else:
                stopped[(sample.sample_id, model)] = PairScore(verdict)
        if passed:
            kept.append(replace(sample, generations=passed))
    return kept, stopped


def load_samples(generations: Path, functions: Path, benchmark: Path | None) -> list[ExecutionSample]:
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
            samples.append(
                ExecutionSample(
                    f["sample_id"],
                    f["context"],
                    f["signature"],
                    f["continuation"],
                    {model: generated.get(model) for model in MODELS},
                    tests.get(f["sample_id"]),
                )
            )
    return samples


def counterfactual_execution(
    generations: Path,
    functions: Path,
    settings: ExecutionSettings,
    seed: int,
    output: Path,
    benchmark: Path | None = None,
    workers: int = 1,
    screen: Path | None = None,
) -> None:
    """Run each model's counterfactual generation and its ground-truth function on drawn inputs in the
    sandbox and score their outputs' agreement (HyClone's Stage 2 without an LLM).

    ``benchmark``: the benchmark's table, whose tests give inputs (a corpus source has none);
    ``workers``: sandbox runs in parallel; ``screen``: the judges' table with HyClone's Stage 1,
    which gates Stage 2."""
    samples = load_samples(generations, functions, benchmark)
    to_run, stopped = (samples, {}) if screen is None else screened(samples, read_screen(screen))
    if screen is not None:
        log.info("HyClone's screen passed %d of %d pairs to Stage 2", 2 * len(samples) - len(stopped), 2 * len(samples))
    report = execution_scores(to_run, settings, seed, workers=workers)
    scores = {**report.scores, **stopped}
    log.info("execution similarity: %s", report.summary())
    rows = []
    for sample in samples:
        target, reference = (scores[(sample.sample_id, model)] for model in MODELS)
        values = {model: pair_metrics(scores[(sample.sample_id, model)], settings.clone_threshold) for model in MODELS}
        for metric in METRICS:
            t, r = values["target"][metric], values["reference"][metric]
            rows.append(
                {
                    "sample_id": sample.sample_id,
                    "metric": metric,
                    "target": t,
                    "reference": r,
                    "delta": None if t is None or r is None else t - r,
                    "target_outcome": target.outcome,
                    "reference_outcome": reference.outcome,
                }
            )
    write_table(rows, SIMILARITY_FAMILY_SCHEMA, output)
    for model in MODELS:
        outcomes = [scores[(s.sample_id, model)].outcome for s in samples]
        ran = sum(o == "ok" for o in outcomes)
        log.info(
            "execution similarity, %s: %d of %d pairs ran (%.1f%%); by outcome: %s",
            model,
            ran,
            len(outcomes),
            100 * ran / max(len(outcomes), 1),
            coverage(outcomes),
        )
