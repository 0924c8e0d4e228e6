"""leakage-rq3: LessLeak-Bench's RQ3 in the DAG (``leakage.rq3``).
From each model's sandboxed completions (:mod:`leaktrace.stages.leakage_rq3_runs`),
pass@k (k = 1, 5, 10) of the leaked and the non-leaked part, as a scan
labels them, and their ratio (:mod:`leaktrace.evaluate.pass_at_k`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.evaluate.pass_at_k import leaked_pass_rows
from leaktrace.report.tables import markdown_table
from leaktrace.seeding import derive_seed
from leaktrace.settings.leakage_rq3 import Rq3Settings

log = logging.getLogger(__name__)

RQ3_SCHEMA = pa.schema(
    [
        ("scan", pa.string()),
        ("benchmark", pa.string()),
        ("model", pa.string()),
        ("k", pa.int32()),
        ("n_leaked", pa.int32()),
        ("n_non_leaked", pa.int32()),
        ("leaked", pa.float64()),
        ("leaked_low", pa.float64()),
        ("leaked_high", pa.float64()),
        ("non_leaked", pa.float64()),
        ("non_leaked_low", pa.float64()),
        ("non_leaked_high", pa.float64()),
        ("ratio", pa.float64()),
        ("ratio_low", pa.float64()),
        ("ratio_high", pa.float64()),  # leaked / non-leaked
        (
            "ratio_replicates",
            pa.int32(),
        ),  # bootstrap replicates with a non-leaked pass@k above 0 (the ratio's interval)
    ]
)


def _cell(row: dict, key: str) -> str:
    return "–" if row[key] is None else f"{row[key]:.3f} [{row[f'{key}_low']:.3f}, {row[f'{key}_high']:.3f}]"


def rq3(
    scan: str,
    benchmark: str,
    pairs: Path,
    runs: Mapping[str, Path],
    settings: Rq3Settings,
    seed: int,
    output: Path,
    markdown: Path,
) -> None:
    """LessLeak's RQ3 on one benchmark: pass@k per model (``runs``: model ->
    its sandboxed completions) on the scan's leaked and non-leaked problems
    (every problem the runs hold), with bootstrap intervals."""
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
        found = leaked_pass_rows(
            n,
            c,
            np.array([i in leaked_ids for i in ids]),
            list(settings.k),
            n_resamples=settings.bootstrap_resamples,
            rng=rng,
        )
        rows += [{"scan": scan, "benchmark": benchmark, "model": model, **r} for r in found]
    write_table(rows, RQ3_SCHEMA, output)
    table = [
        {
            "model": r["model"],
            "k": r["k"],
            "leaked": _cell(r, "leaked"),
            "non-leaked": _cell(r, "non_leaked"),
            "leaked / non-leaked": _cell(r, "ratio"),
        }
        for r in rows
    ]
    first = rows[0] if rows else {"n_leaked": 0, "n_non_leaked": 0}
    markdown.write_text(
        "\n".join(
            [
                f"### LessLeak RQ3: pass@k on the leaked and non-leaked part of {benchmark} (scan `{scan}`)",
                "",
                f"{first['n_leaked']} leaked and {first['n_non_leaked']} non-leaked problems; n = {settings.n} samples a problem at "
                f"temperature {settings.temperature}, run against the tests in the sandbox; unbiased pass@k, 95% bootstrap "
                "intervals over problems (the ratio's over the replicates whose non-leaked pass@k is above 0).",
                "",
                markdown_table(table, ["model", "k", "leaked", "non-leaked", "leaked / non-leaked"]),
            ]
        ),
        encoding="utf-8",
    )
    log.info(
        "rq3 %s on %s: %s",
        scan,
        benchmark,
        ", ".join(f"{r['model']} pass@{r['k']} {r['leaked']} vs {r['non_leaked']}" for r in rows),
    )
