"""counterfactual_aggregate: the functional-memorization study's tables and
figures from whichever similarity families ran (the text family's
similarity.parquet always; structural, judges, execution when enabled), as
Parquet, PNG and a Markdown fragment that the aggregate report includes.

Where App. B's LLM filter ran, only the functions it labelled YES are
analysed (the paper's 7,422 are those); the others are counted, by cause,
in the report and the log."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pyarrow as pa

from leaktrace.artifacts import read_columns, read_records, read_table, write_table
from leaktrace.data.llm_function_filter import read_filter
from leaktrace.errors import InputError
from leaktrace.evaluate import functional as fm
from leaktrace.report.functional import correlation_heatmap, delta_vs_bleu, length_panels, target_vs_reference
from leaktrace.report.tables import markdown_table, mean_pm_std
from leaktrace.settings.counterfactual_aggregate import FunctionalAggregateSettings

log = logging.getLogger(__name__)

VALUE_COLUMNS = ["sample_id", "metric", "target", "reference", "delta"]
OUTCOME_COLUMNS = ["target_outcome", "reference_outcome"]
OK = "ok"

_side_columns = [(f"{side}_{stat}", pa.float64()) for side in fm.SIDES for stat in ("mean", "std", "low", "high")]
SUMMARY_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("metric", pa.string()),
        ("kind", pa.string()),
        ("convention", pa.string()),  # "complete cases" or "missing = 0" (evaluate.functional)
        ("n_samples", pa.int32()),  # samples in the group
        ("n", pa.int32()),  # samples the row averages over, the same for target, reference and Δ
        *_side_columns,
    ]
)
MEMBER_DIFFERENCE_SCHEMA = pa.schema(
    [
        ("metric", pa.string()),
        ("kind", pa.string()),
        ("n_member", pa.int32()),
        ("n_non_member", pa.int32()),
        ("member_delta", pa.float64()),
        ("non_member_delta", pa.float64()),
        ("difference", pa.float64()),  # mean Δ of members minus mean Δ of non-members
        ("low", pa.float64()),
        ("high", pa.float64()),
        ("members_above", pa.bool_()),
    ]  # the interval lies above 0: members' Δ exceeds non-members'
)
MEMORIZATION_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("metric", pa.string()),
        ("kind", pa.string()),
        ("convention", pa.string()),
        ("count", pa.int32()),
        ("n_evaluated", pa.int32()),
        ("n_samples", pa.int32()),
        ("share", pa.float64()),
    ]
)
VERBATIM_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("kind", pa.string()),
        ("metric", pa.string()),
        ("threshold", pa.float64()),
        ("target", pa.int32()),
        ("reference", pa.int32()),
        ("counterfactual", pa.int32()),
        ("n_evaluated", pa.int32()),
        ("n_samples", pa.int32()),
        ("share", pa.float64()),
    ]
)
SEVERITY_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("bucket", pa.string()),
        ("metric", pa.string()),
        ("n", pa.int32()),
        *[(f"{side}_{stat}", pa.float64()) for side in fm.SIDES for stat in ("mean", "std")],
        ("severity_delta_r", pa.float64()),
    ]
)
LENGTH_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("length", pa.string()),
        ("bucket", pa.string()),
        ("metric", pa.string()),
        ("n", pa.int32()),
        *[(f"{side}_{stat}", pa.float64()) for side in fm.SIDES for stat in ("mean", "std")],
        *[(f"r_{side}", pa.float64()) for side in fm.SIDES],
    ]  # Pearson r of the length with it, on the "all" bucket
)
OUTCOME_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("metric", pa.string()),
        ("model", pa.string()),
        ("outcome", pa.string()),
        ("count", pa.int32()),
    ]
)
CORRELATION_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("model", pa.string()),
        ("metric_a", pa.string()),
        ("metric_b", pa.string()),
        ("r", pa.float64()),
        ("n", pa.int32()),
    ]
)


def read_similarity(paths: Sequence[Path]) -> pd.DataFrame:
    """The families' long tables as one. A table without outcome columns
    (the text family) gets "ok" where a value is known and "missing" where
    not; a (sample, metric) in two tables is an error."""
    frames = []
    for path in paths:
        table = read_table(path).to_pandas()
        missing = set(VALUE_COLUMNS) - set(table.columns)
        if missing:
            raise InputError(
                str(path), None, f"a similarity table needs the columns {VALUE_COLUMNS}; {sorted(missing)} missing"
            )
        for side in ("target", "reference"):
            if f"{side}_outcome" not in table.columns:
                table[f"{side}_outcome"] = table[side].notna().map({True: OK, False: "missing"})
        frames.append(table[VALUE_COLUMNS + OUTCOME_COLUMNS].assign(source=str(path)))
    sim = pd.concat(frames, ignore_index=True)
    twice = sim[sim.duplicated(["sample_id", "metric"], keep=False)]
    if len(twice):
        first = twice.iloc[0]
        raise InputError(
            ", ".join(sorted(set(twice["source"]))),
            first["sample_id"],
            f"metric {first['metric']!r} is in more than one similarity table",
        )
    for side in fm.SIDES:
        sim[side] = sim[side].astype(float)
    return sim.drop(columns="source").sort_values(["sample_id", "metric"], ignore_index=True)


def read_splits(samples: Path | None) -> dict[str, str]:
    """sample_id -> member / non-member of the kept testbed samples; empty
    outside testbed mode."""
    if samples is None:
        return {}
    return {r["sample_id"]: r["split"] for r in read_records(samples, ["sample_id", "kept", "split"]) if r["kept"]}


NO_FILTER = (
    "App. B's LLM filter did not run (llm.judge null or similarity.filter.enabled false): every sample is analysed."
)


def read_lengths(functions: Path | None) -> pd.DataFrame:
    """sample_id and App. H's lengths: the signature's characters (stripped),
    the preceding file context's characters, the ground truth's body lines."""
    columns = ["sample_id", *fm.LENGTH_BUCKETS]
    if functions is None:
        return pd.DataFrame(columns=columns)
    rows = read_columns(functions, ["sample_id", "signature", "context", "body_lines"], "a functions table")
    return pd.DataFrame(
        [
            {
                "sample_id": r["sample_id"],
                "signature_chars": len(r["signature"].strip()),
                "context_chars": len(r["context"] or ""),
                "body_lines": r["body_lines"],
            }
            for r in rows
        ],
        columns=columns,
    )


def execution_note(metrics: set[str]) -> str:
    """What the execution similarity is, and whether HyClone's screen gated
    it: rule counterfactual_execution runs Stage 2 on the screen's candidates
    exactly when the judges' table has the ``hyclone_screen`` metric."""
    gated = "hyclone_screen" in metrics
    how = (
        "Stage 2 ran only on the pairs HyClone's Stage-1 screen passed, per model, as in the paper (a pair it did not "
        "pass has an outcome screen:*, counted 0 under missing = 0)"
        if gated
        else "it ran on every pair: no HyClone screen is configured (llm.judge with the hyclone_screen metric)"
    )
    return (
        "\n\"Execution sim.\" is leaktrace's LLM-free stand-in for HyClone's Stage 2, and not HyClone: its inputs are "
        "the benchmark's test inputs and hypothesis draws, not the paper's 10 LLM-made inputs per function; "
        + how
        + ".\n"
    )


def _interval(row: dict, side: str) -> str:
    if row[f"{side}_mean"] is None:
        return "–"
    text = mean_pm_std(row[f"{side}_mean"], row[f"{side}_std"] or 0.0)
    if row[f"{side}_low"] is not None:
        text += f" [{row[f'{side}_low']:.3f}, {row[f'{side}_high']:.3f}]"
    return text


def _mean_std(row: dict, side: str) -> str:
    return "–" if row[f"{side}_mean"] is None else mean_pm_std(row[f"{side}_mean"], row[f"{side}_std"] or 0.0)


def _by_bucket(rows: list[dict], columns: list[str]) -> str:
    return markdown_table(
        [
            {
                **r,
                "metric": fm.label(r["metric"]),
                "target": _mean_std(r, "target"),
                "reference": _mean_std(r, "reference"),
                "Δ": _mean_std(r, "delta"),
            }
            for r in rows
        ],
        columns,
    )


def render_fragment(
    tables: dict[str, list[dict]],
    notes: list[str],
    settings: FunctionalAggregateSettings,
    families: list[str],
    n_samples: int,
) -> str:
    tau_text, tau_func = settings.tau_text, settings.tau_func
    parts = [
        "\n## Functional memorization (counterfactual, target vs reference)\n",
        f"\n{n_samples} samples analysed; similarity tables: {', '.join(families)}. Each value is the similarity of a model's "
        f"generation to the ground-truth function; Δ = target − reference. Intervals: 95% percentile bootstrap of the mean "
        f"({settings.bootstrap_resamples} resamples). Figures: functional/delta_vs_bleu.png, "
        "functional/target_vs_reference.png, functional/correlation.png, functional/length.png.\n",
        *[f"\n{note}\n" for note in notes],
        "\n### Table 1: similarity to the ground truth (mean ± std [95% CI of the mean])\n",
        f"\nn: samples averaged over, the same for target, reference and Δ, of the group's samples. Convention "
        f'"{fm.COMPLETE_CASES}": the samples with both models\' values known (a failed parse, run or answer has none). '
        f'"{fm.MISSING_AS_ZERO}" (the execution metrics, as the paper counts HyClone): every sample, a missing value '
        "counted 0.\n\n",
        markdown_table(
            [
                {
                    "group": r["group"],
                    "metric": fm.label(r["metric"]),
                    "kind": r["kind"],
                    "convention": r["convention"],
                    "n": f"{r['n']} / {r['n_samples']}",
                    "target": _interval(r, "target"),
                    "reference": _interval(r, "reference"),
                    "Δ": _interval(r, "delta"),
                }
                for r in tables["table1"]
            ],
            ["group", "kind", "metric", "convention", "n", "target", "reference", "Δ"],
        ),
    ]
    if tables["member_difference"]:
        parts += [
            "\n### Members' Δ minus non-members' Δ (the testbed's memorization signal)\n",
            markdown_table(
                [{**r, "metric": fm.label(r["metric"])} for r in tables["member_difference"]],
                [
                    "kind",
                    "metric",
                    "n_member",
                    "n_non_member",
                    "member_delta",
                    "non_member_delta",
                    "difference",
                    "low",
                    "high",
                    "members_above",
                ],
            ),
        ]
    parts += [
        f"\n### Table 2: counterfactual functional memorization (BLEU(x, x_T) < {tau_text}, "
        f"SIM_func(x, x_T) ≥ {tau_func}, SIM_func(x, x_R) < {tau_func})\n",
        f'\nCounted only where every value compared is known (n_evaluated; under "{fm.MISSING_AS_ZERO}" an execution '
        "value is always known); share: count over all samples.\n\n",
        markdown_table(
            [{**r, "metric": fm.label(r["metric"])} for r in tables["table2"]],
            ["group", "kind", "metric", "convention", "count", "n_evaluated", "n_samples", "share"],
        ),
        f"\n### Exact and near-verbatim (BLEU ≥ {tau_text}) memorization\n",
        markdown_table(
            tables["verbatim"],
            ["group", "kind", "target", "reference", "counterfactual", "n_evaluated", "n_samples", "share"],
        ),
    ]
    if tables["severity"]:
        parts += [
            "\n### Δ by severity of the App. B filter (low 1–3, medium 4–7, high 8–10; App. G)\n",
            _by_bucket(
                tables["severity"], ["group", "metric", "bucket", "n", "target", "reference", "Δ", "severity_delta_r"]
            ),
        ]
    if tables["length"]:
        parts += [
            "\n### Similarity and Δ by length (App. H)\n",
            "\nSignature characters (short ≤ 50, medium 51–100, long > 100), preceding file context characters "
            "(minimal < 100, short 100–2k, medium 2k–5k, long > 5k) and the ground truth's body lines (short 10–15, "
            "medium 16–25, long 26–50; the paper's functions have 10–50, a testbed's may not). Complete cases; r: "
            "Pearson r of the length with the target's similarity, the reference's and Δ, over all buckets. "
            "Figure: functional/length.png.\n\n",
            _by_bucket(
                [r for r in tables["length"] if r["group"] == fm.ALL],
                ["length", "metric", "bucket", "n", "target", "reference", "Δ", "r_target", "r_reference", "r_delta"],
            ),
        ]
    parts += [
        "\n### Outcomes (values computed, failures by cause)\n",
        markdown_table(
            [{**r, "metric": fm.label(r["metric"])} for r in tables["outcomes"] if r["group"] == fm.ALL],
            ["metric", "model", "outcome", "count"],
        ),
    ]
    return "".join(parts)


TABLES = {
    "table1": SUMMARY_SCHEMA,
    "member_difference": MEMBER_DIFFERENCE_SCHEMA,
    "table2": MEMORIZATION_SCHEMA,
    "verbatim": VERBATIM_SCHEMA,
    "severity": SEVERITY_SCHEMA,
    "length": LENGTH_SCHEMA,
    "outcomes": OUTCOME_SCHEMA,
    "correlation": CORRELATION_SCHEMA,
}


def counterfactual_aggregate(
    similarity: tuple[Path, ...],
    settings: FunctionalAggregateSettings,
    seed: int,
    output_dir: Path,
    samples: Path | None = None,
    llm_filter: Path | None = None,
    functions: Path | None = None,
) -> None:
    """Write the functional-memorization tables, figures and report fragment of one counterfactual
    source from its similarity families' tables.

    ``similarity``: the families' tables; ``settings``: the
    similarity.aggregate slice (tau_text, tau_func, bootstrap_resamples);
    ``samples``: the testbed split (member / non-member tables); ``llm_filter``:
    the App. B filter's table (only its YES are analysed; severity buckets);
    ``functions``: the source's functions table (App. H's lengths)."""
    sim = read_similarity(similarity)
    n_read = sim["sample_id"].nunique()
    notes = [NO_FILTER]
    severity: dict[str, int] = {}
    if llm_filter is not None:
        verdict = read_filter(llm_filter, set(sim["sample_id"]))
        sim = sim[sim["sample_id"].isin(verdict.severity.keys())].reset_index(drop=True)
        severity, notes = verdict.severity, [verdict.summary(n_read)]
        log.info("%s", notes[0])
    if "execution" in set(sim["metric"]):
        notes.append(execution_note(set(sim["metric"])).strip())
    splits = read_splits(samples)
    sim["split"] = sim["sample_id"].map(splits).astype(object).where(sim["sample_id"].isin(splits.keys()), None)
    tau_text, tau_func, resamples = settings.tau_text, settings.tau_func, settings.bootstrap_resamples

    tables = {
        "table1": fm.summary_rows(sim, resamples, seed),
        "member_difference": fm.member_difference_rows(sim, resamples, seed),
        "table2": fm.memorization_rows(sim, tau_text, tau_func),
        "verbatim": fm.verbatim_rows(sim, tau_text),
        "severity": fm.severity_rows(sim, severity),
        "length": fm.length_rows(sim, read_lengths(functions)),
        "outcomes": fm.outcome_rows(sim),
        "correlation": fm.correlation_rows(sim),
    }
    for name, schema in TABLES.items():
        write_table(tables[name], schema, output_dir / f"{name}.parquet")

    metrics = fm.metric_order(sim["metric"].unique())
    delta_vs_bleu(sim, [m for m in metrics if m in fm.FUNCTIONAL_METRICS], tau_text, output_dir / "delta_vs_bleu.png")
    target_vs_reference(sim, metrics, output_dir / "target_vs_reference.png")
    correlation_heatmap(
        fm.correlation_matrix(sim), output_dir / "correlation.png", "Pearson r between metrics (target model)"
    )
    length_panels([r for r in tables["length"] if r["group"] == fm.ALL], output_dir / "length.png")
    families = [Path(p).stem for p in similarity]
    (output_dir / "report.md").write_text(
        render_fragment(tables, notes, settings, families, sim["sample_id"].nunique())
    )
    log.info(
        "counterfactual aggregate: %d samples, %d metrics, tables in %s",
        sim["sample_id"].nunique(),
        len(metrics),
        output_dir,
    )
