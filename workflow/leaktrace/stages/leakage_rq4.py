"""leakage-rq4: LessLeak-Bench's RQ4 in the DAG. A scan's verified labels
(leaked: some corpus unit is a verified duplicate) are the ground truth for
every gray-box detector the testbed scored on the scanned benchmark, per
model: AUC and the paper's precision among the top k of the ranking, with
bootstrap intervals (:mod:`leaktrace.evaluate.leak_detection`). With the
testbed's training mix as the corpus, a known corpus measures how well
corpus-free detection finds real leakage.

``rq4_ranking`` is RQ4 as the paper runs it (Sec. 5.4, Fig. 5): the samples
a scan labelled, pooled over its benchmarks and deduplicated, balanced by
under-sampling to at most ``size`` (1,300: 650 leaked, 650 not), ranked by
ascending perplexity under each model (``leakage_rq4_perplexity``), and the
share leaked among the top k for k = 100 ... 1,000."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.split import RECALL_PREFIX
from leaktrace.evaluate.leak_detection import leak_detection_rows, ranking_population
from leaktrace.models.naming import BASE_MODEL, headline_model
from leaktrace.report.tables import markdown_table
from leaktrace.settings.leakage_rq4 import Rq4RankingSettings, Rq4Settings

log = logging.getLogger(__name__)

RQ4_SCHEMA = pa.schema(
    [
        ("scan", pa.string()),
        ("benchmark", pa.string()),
        ("model", pa.string()),
        ("method", pa.string()),
        ("family", pa.string()),
        ("metric", pa.string()),  # auc | precision_at_k
        ("k", pa.int32()),  # precision_at_k: the top k of the ranking (higher score first)
        ("n", pa.int32()),
        ("n_leaked", pa.int32()),  # samples every detector scored, and the leaked among them
        ("n_evaluated", pa.int32()),  # auc: n; precision_at_k: the balanced set (2 x the smaller class)
        ("value", pa.float64()),
        ("low", pa.float64()),
        ("high", pa.float64()),  # null: a class is missing
    ]
)


def _cell(row: dict | None) -> str:
    if row is None or row["value"] is None:
        return "–"
    return f"{row['value']:.3f} [{row['low']:.3f}, {row['high']:.3f}]"


def _markdown(scan: str, benchmark: str, rows: list[dict], top_k: list[int]) -> str:
    lines = [f"### LessLeak RQ4: gray-box detectors against scan `{scan}`'s labels ({benchmark})", ""]
    if not rows:
        return "\n".join(lines + ["No detector scored a sample the scan labelled.", ""])
    first = rows[0]
    if not 0 < first["n_leaked"] < first["n"]:
        return "\n".join(
            lines
            + [
                f"{first['n_leaked']} of the {first['n']} scored samples leaked: one class only, nothing to evaluate.",
                "",
            ]
        )
    ks = [k for k in top_k if any(r["k"] == k for r in rows)]
    lines += [
        f"Leaked (the scan's verified duplicates): {first['n_leaked']} of {first['n']} scored samples. AUC over all "
        f"of them; precision in the top k (higher score first: the paper's ascending perplexity) on a balanced set of "
        f"{next((r['n_evaluated'] for r in rows if r['k']), 0)} (the larger class under-sampled, as LessLeak's "
        "AutoDetectLeak-Bench), where chance is 0.5; 95% bootstrap intervals.",
        "",
    ]
    models = list(dict.fromkeys(r["model"] for r in rows))
    for model in dict.fromkeys(m for m in (BASE_MODEL, headline_model(models)) if m in models):
        mine = {(r["method"], r["metric"], r["k"]): r for r in rows if r["model"] == model}
        table = [
            {
                "detector": method,
                "AUC": _cell(mine.get((method, "auc", None))),
                **{f"P@{k}": _cell(mine.get((method, "precision_at_k", k))) for k in ks},
            }
            for method in sorted({m for m, _, _ in mine})
        ]
        lines += [f"Model `{model}`:", "", markdown_table(table, ["detector", "AUC", *[f"P@{k}" for k in ks]])]
    if len(models) > 2:
        lines += [f"Every model ({len(models)}) in `leakage/{scan}/rq4/{benchmark}.parquet`.", ""]
    return "\n".join(lines)


def rq4(
    scan: str,
    benchmark: str,
    pairs: Path,
    samples: Path,
    scores: Mapping[str, Path],
    settings: Rq4Settings,
    seed: int,
    output: Path,
    markdown: Path,
) -> None:
    """LessLeak's RQ4 on one scanned testbed benchmark: the scan's verified
    labels as the ground truth of every gray-box detector the testbed scored
    (``scores``: model -> its scores table), precision among each detector's
    top k. The samples evaluated are the testbed's kept ones outside ReCaLL's
    prefix."""
    leaked = {p["sample_id"] for p in read_records(pairs, ["sample_id", "duplicate"]) if p["duplicate"]}
    population = {
        r["sample_id"]
        for r in read_records(samples, ["sample_id", "kept", "fold"])
        if r["kept"] and r["fold"] != RECALL_PREFIX
    }
    rows = []
    for model, path in scores.items():
        found = leak_detection_rows(
            read_records(path),
            leaked,
            population,
            top_k=list(settings.top_k),
            n_resamples=settings.bootstrap_resamples,
            seed=seed,
        )
        rows += [{"scan": scan, "benchmark": benchmark, "model": model, **r} for r in found]
    write_table(rows, RQ4_SCHEMA, output)
    markdown.write_text(_markdown(scan, benchmark, rows, list(settings.top_k)), encoding="utf-8")
    log.info(
        "rq4 %s on %s: %d models, %d leaked of %d labelled samples",
        scan,
        benchmark,
        len(scores),
        len(leaked & population),
        len(population),
    )


def rq4_ranking(
    scan: str,
    benchmarks: tuple[str, ...],
    pairs: Path,
    perplexity: Mapping[str, Path],
    settings: Rq4RankingSettings,
    seed: int,
    output: Path,
    markdown: Path,
) -> None:
    """LessLeak's RQ4 as the paper runs it: every sample the scan labelled,
    pooled over its ``benchmarks``, deduplicated, balanced to ``size`` and
    ranked by each model's perplexity (``perplexity``: model -> its table);
    the share leaked among the top k. Rows as
    RQ4_SCHEMA, benchmark "pooled", method "perplexity" (score: minus the
    log-perplexity, so the top k are the lowest perplexities)."""
    leaked = {p["sample_id"] for p in read_records(pairs, ["sample_id", "duplicate"]) if p["duplicate"]}
    tables = {model: read_records(path) for model, path in perplexity.items()}
    population, population_leaked, counts = ranking_population(tables, leaked, settings.size, seed)
    rows = []
    for model, table in tables.items():
        scores = [
            {"sample_id": r["sample_id"], "method": "perplexity", "family": "loss", "score": -r["loss"]} for r in table
        ]
        found = leak_detection_rows(
            scores,
            population_leaked,
            set(population),
            top_k=list(settings.top_k),
            n_resamples=settings.bootstrap_resamples,
            seed=seed,
        )
        rows += [{"scan": scan, "benchmark": "pooled", "model": model, **r} for r in found]
    write_table(rows, RQ4_SCHEMA, output)
    ks = [k for k in settings.top_k if any(r["k"] == k for r in rows)]
    left_out = [k for k in settings.top_k if k not in ks]
    lines = [
        f"### LessLeak RQ4: perplexity ranking against scan `{scan}`'s labels ({', '.join(benchmarks)}, pooled)",
        "",
        f"{counts['scored']} samples scored by every model ({counts['leaked_scored']} leaked), {counts['distinct']} distinct "
        f"documents ({counts['leaked_distinct']} leaked); balanced by random under-sampling to {counts['balanced']} "
        f"(the paper's AutoDetectLeak-Bench: 1,300). Ranked by ascending perplexity; P@k is the share leaked among the "
        "k lowest (chance 0.5 on the balanced set), with 95% bootstrap intervals; AUC over the balanced set.",
        "",
    ]
    if left_out:
        lines += [f"k = {', '.join(map(str, left_out))} exceed the balanced set and are left out.", ""]
    if not rows or rows[0]["value"] is None:
        lines += ["One class only after balancing: nothing to evaluate.", ""]
    else:
        cells = {(r["model"], r["metric"], r["k"]): r for r in rows}
        table = [
            {
                "model": model,
                "AUC": _cell(cells.get((model, "auc", None))),
                **{f"P@{k}": _cell(cells.get((model, "precision_at_k", k))) for k in ks},
            }
            for model in tables
        ]
        lines += [markdown_table(table, ["model", "AUC", *[f"P@{k}" for k in ks]])]
    markdown.write_text("\n".join(lines), encoding="utf-8")
    log.info("rq4 ranking %s: %s", scan, counts)
