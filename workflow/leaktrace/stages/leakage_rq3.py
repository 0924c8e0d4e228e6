"""leakage-rq3: LessLeak-Bench's RQ3 in the DAG (opt-in: ``leakage.rq3``).
A model completes every problem of a benchmark with tests n times
(sampled at the configured temperature through the pipeline's generation
path, ``llm.generator`` included), each completion runs against the
problem's tests in the sandbox, and pass@k (k = 1, 5, 10) of the leaked and
the non-leaked part, as a scan labels them, are compared
(:mod:`leaktrace.evaluate.pass_at_k`)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.evaluate.pass_at_k import leaked_pass_rows
from leaktrace.report.tables import markdown_table
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
RQ3_SCHEMA = pa.schema([
    ("scan", pa.string()), ("benchmark", pa.string()), ("model", pa.string()), ("k", pa.int32()),
    ("n_leaked", pa.int32()), ("n_non_leaked", pa.int32()),
    ("leaked", pa.float64()), ("leaked_low", pa.float64()), ("leaked_high", pa.float64()),
    ("non_leaked", pa.float64()), ("non_leaked_low", pa.float64()), ("non_leaked_high", pa.float64()),
    ("ratio", pa.float64()), ("ratio_low", pa.float64()), ("ratio_high", pa.float64()),  # leaked / non-leaked
    ("ratio_replicates", pa.int32()),  # bootstrap replicates with a non-leaked pass@k above 0 (the ratio's interval)
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


def _cell(row: dict, key: str) -> str:
    return "–" if row[key] is None else f"{row[key]:.3f} [{row[f'{key}_low']:.3f}, {row[f'{key}_high']:.3f}]"


def rq3(scan: str, benchmark: str, pairs: Path, runs: dict[str, Path], settings: dict, seed: int, output: Path,
        markdown: Path) -> None:
    """pass@k per model on the scan's leaked and non-leaked problems (every
    problem the runs hold), with bootstrap intervals (``bootstrap_resamples``)."""
    leaked_ids = {p["sample_id"] for p in read_records(pairs, ["sample_id", "duplicate"]) if p["duplicate"]}
    rows = []
    for model, path in runs.items():
        counts: dict[str, list[int]] = {}
        for r in read_records(path, ["sample_id", "status"]):
            counts.setdefault(r["sample_id"], [0, 0])
            counts[r["sample_id"]][0] += 1
            counts[r["sample_id"]][1] += r["status"] == "ok"
        ids = sorted(counts)
        n, c = (np.array([counts[i][j] for i in ids]) for j in (0, 1))
        rng = np.random.default_rng(derive_seed(seed, "rq3", scan, benchmark))  # the same draws for every model
        found = leaked_pass_rows(n, c, np.array([i in leaked_ids for i in ids]), list(settings["k"]),
                                 n_resamples=settings["bootstrap_resamples"], rng=rng)
        rows += [{"scan": scan, "benchmark": benchmark, "model": model, **r} for r in found]
    write_table(rows, RQ3_SCHEMA, output)
    table = [{"model": r["model"], "k": r["k"], "leaked": _cell(r, "leaked"), "non-leaked": _cell(r, "non_leaked"),
              "leaked / non-leaked": _cell(r, "ratio")} for r in rows]
    first = rows[0] if rows else {"n_leaked": 0, "n_non_leaked": 0}
    markdown.write_text("\n".join([
        f"### LessLeak RQ3: pass@k on the leaked and non-leaked part of {benchmark} (scan `{scan}`)", "",
        f"{first['n_leaked']} leaked and {first['n_non_leaked']} non-leaked problems; n = {settings['n']} samples a problem at "
        f"temperature {settings['temperature']}, run against the tests in the sandbox; unbiased pass@k, 95% bootstrap "
        "intervals over problems (the ratio's over the replicates whose non-leaked pass@k is above 0).", "",
        markdown_table(table, ["model", "k", "leaked", "non-leaked", "leaked / non-leaked"])]), encoding="utf-8")
    log.info("rq3 %s on %s: %s", scan, benchmark, ", ".join(f"{r['model']} pass@{r['k']} {r['leaked']} vs {r['non_leaked']}"
                                                           for r in rows))
