"""leakage-rq3-runs: the completions behind LessLeak-Bench's RQ3. A model
completes every problem of a benchmark with tests n times, sampled at the
configured temperature through the pipeline's generation path
(``llm.generator`` included), and each completion runs against the
problem's tests in the sandbox."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.sandbox import SandboxLimits, run_tests
from leaktrace.seeding import derive_seed
from leaktrace.stages.score import generation_model

log = logging.getLogger(__name__)

# Codex's stop sequences for HumanEval completions: a new top-level statement ends the function.
STOPS = ("\nclass ", "\ndef ", "\n#", "\nif ", "\nprint(")

RUNS_SCHEMA = pa.schema([
    ("sample_id", pa.string()), ("model", pa.string()), ("draw", pa.int32()), ("completion", pa.string()),
    ("status", pa.string()),  # the sandbox's: ok (every test passed), wrong, error, timeout, killed
])


def _cut(text: str) -> str:
    ends = [i for i in (text.find(s) for s in STOPS) if i >= 0]
    return text[: min(ends)] if ends else text


def _stop(text: str) -> bool:
    return any(s in text for s in STOPS)


def generate_and_run(benchmark: Path, model: dict, adapter: str | None, name: str, settings: dict, batch: dict, seed: int,
                     output: Path, *, generator: dict | None = None, cache_dir: Path | None = None) -> None:
    """``settings``: n, temperature, max_new_tokens, workers and sandbox
    (SandboxLimits' fields). Every problem with tests and an entry point is
    completed n times, draw j sampled with its own seed (so a backend's
    response cache keeps the draws apart)."""
    problems = [r for r in read_records(benchmark) if r.get("test") and r.get("entry_point") and r.get("prompt")]
    lm = generation_model(model, adapter, batch, generator, cache_dir, "LessLeak RQ3 generation")
    prompts = [lm.encode(r["prompt"]) for r in problems]
    max_new_tokens = min(settings["max_new_tokens"], lm.max_length - 1 - max(map(len, prompts), default=0))
    if max_new_tokens < 1:
        raise ValueError(f"the longest prompt fills the model's {lm.max_length}-token context")
    rows = []
    for draw in range(settings["n"]):
        texts = lm.sample(prompts, max_new_tokens=max_new_tokens, temperature=settings["temperature"],
                          seed=derive_seed(seed, "rq3", name, draw), stops=[_stop] * len(prompts))
        rows += [{"sample_id": r["sample_id"], "model": name, "draw": draw, "completion": _cut(t)} for r, t in zip(problems, texts, strict=True)]
    by_id = {r["sample_id"]: r for r in problems}
    results = run_tests([(by_id[r["sample_id"]]["prompt"] + r["completion"], by_id[r["sample_id"]]["test"],
                          by_id[r["sample_id"]]["entry_point"]) for r in rows],
                        SandboxLimits(**settings.get("sandbox", {})), workers=settings.get("workers", 1))
    for row, result in zip(rows, results, strict=True):
        row["status"] = result.status
    rows.sort(key=lambda r: (r["sample_id"], r["draw"]))
    write_table(rows, RUNS_SCHEMA, output)
    log.info("rq3 %s: %d problems x %d draws, %d completions pass", name, len(problems), settings["n"],
             sum(r["status"] == "ok" for r in rows))
