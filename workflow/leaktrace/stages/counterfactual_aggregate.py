"""counterfactual_aggregate: the functional-memorization study's tables and
figures from whichever similarity families ran (the text family's
similarity.parquet always; structural, judges, execution when enabled), as
Parquet, PNG and a Markdown fragment that the aggregate report includes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pyarrow as pa

from leaktrace.artifacts import read_records, read_table, write_table
from leaktrace.errors import InputError
from leaktrace.evaluate import functional as fm
from leaktrace.report.functional import correlation_heatmap, delta_vs_bleu, target_vs_reference
from leaktrace.report.tables import markdown_table, mean_pm_std

log = logging.getLogger(__name__)

VALUE_COLUMNS = ["sample_id", "metric", "target", "reference", "delta"]
OUTCOME_COLUMNS = ["target_outcome", "reference_outcome"]
OK = "ok"

_side_columns = [(f"{side}_{stat}", pa.int32() if stat == "n" else pa.float64())
                 for side in fm.SIDES for stat in ("n", "mean", "std", "low", "high")]
SUMMARY_SCHEMA = pa.schema([("group", pa.string()), ("metric", pa.string()), ("kind", pa.string()), ("n", pa.int32()), *_side_columns])
MEMBER_DIFFERENCE_SCHEMA = pa.schema(
    [("metric", pa.string()), ("kind", pa.string()), ("n_member", pa.int32()), ("n_non_member", pa.int32()),
     ("member_delta", pa.float64()), ("non_member_delta", pa.float64()),
     ("difference", pa.float64()),  # mean Δ of members minus mean Δ of non-members
     ("low", pa.float64()), ("high", pa.float64()),
     ("members_above", pa.bool_())]  # the interval lies above 0: members' Δ exceeds non-members'
)
MEMORIZATION_SCHEMA = pa.schema(
    [("group", pa.string()), ("metric", pa.string()), ("kind", pa.string()), ("count", pa.int32()),
     ("n_evaluated", pa.int32()), ("n_samples", pa.int32()), ("share", pa.float64())]
)
VERBATIM_SCHEMA = pa.schema(
    [("group", pa.string()), ("kind", pa.string()), ("metric", pa.string()), ("threshold", pa.float64()),
     ("target", pa.int32()), ("reference", pa.int32()), ("counterfactual", pa.int32()),
     ("n_evaluated", pa.int32()), ("n_samples", pa.int32()), ("share", pa.float64())]
)
SEVERITY_SCHEMA = pa.schema(
    [("group", pa.string()), ("bucket", pa.string()), ("metric", pa.string()), ("n", pa.int32()),
     *[(f"{side}_{stat}", pa.float64()) for side in fm.SIDES for stat in ("mean", "std")],
     ("severity_delta_r", pa.float64())]
)
OUTCOME_SCHEMA = pa.schema(
    [("group", pa.string()), ("metric", pa.string()), ("model", pa.string()), ("outcome", pa.string()), ("count", pa.int32())]
)
CORRELATION_SCHEMA = pa.schema(
    [("group", pa.string()), ("model", pa.string()), ("metric_a", pa.string()), ("metric_b", pa.string()), ("r", pa.float64()),
     ("n", pa.int32())]
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
            raise InputError(str(path), None, f"a similarity table needs the columns {VALUE_COLUMNS}; {sorted(missing)} missing")
        for side in ("target", "reference"):
            if f"{side}_outcome" not in table.columns:
                table[f"{side}_outcome"] = table[side].notna().map({True: OK, False: "missing"})
        frames.append(table[VALUE_COLUMNS + OUTCOME_COLUMNS].assign(source=str(path)))
    sim = pd.concat(frames, ignore_index=True)
    twice = sim[sim.duplicated(["sample_id", "metric"], keep=False)]
    if len(twice):
        first = twice.iloc[0]
        raise InputError(", ".join(sorted(set(twice["source"]))), first["sample_id"],
                         f"metric {first['metric']!r} is in more than one similarity table")
    for side in fm.SIDES:
        sim[side] = sim[side].astype(float)
    return sim.drop(columns="source").sort_values(["sample_id", "metric"], ignore_index=True)


def read_splits(samples: Path | None) -> dict[str, str]:
    """sample_id -> member / non-member of the kept testbed samples; empty
    outside testbed mode."""
    if samples is None:
        return {}
    return {r["sample_id"]: r["split"] for r in read_records(samples, ["sample_id", "kept", "split"]) if r["kept"]}


def read_severity(llm_filter: Path | None) -> dict[str, int]:
    """sample_id -> the App. B filter's severity, for answers that parsed and
    carry one (label YES)."""
    if llm_filter is None:
        return {}
    rows = read_records(llm_filter, ["sample_id", "severity", "outcome"])
    return {r["sample_id"]: int(r["severity"]) for r in rows if r["outcome"] == OK and r["severity"] is not None}


def _interval(row: dict, side: str) -> str:
    if row[f"{side}_mean"] is None:
        return "–"
    text = mean_pm_std(row[f"{side}_mean"], row[f"{side}_std"] or 0.0)
    if row[f"{side}_low"] is not None:
        text += f" [{row[f'{side}_low']:.3f}, {row[f'{side}_high']:.3f}]"
    return text


def render_fragment(summary, difference, memorization, verbatim, severity, outcomes, settings: dict, families: list[str],
                    n_samples: int) -> str:
    tau_text, tau_func = settings["tau_text"], settings["tau_func"]
    parts = [
        "\n## Functional memorization (counterfactual, target vs reference)\n",
        f"\n{n_samples} samples; similarity tables: {', '.join(families)}. Each value is the similarity of a model's "
        f"generation to the ground-truth function; Δ = target − reference. Intervals: 95% percentile bootstrap of the mean "
        f"({settings['bootstrap_resamples']} resamples). Figures: functional/delta_vs_bleu.png, "
        "functional/target_vs_reference.png, functional/correlation.png.\n",
        "\n### Table 1: similarity to the ground truth (mean ± std [95% CI of the mean])\n",
        "\nn: samples / values known for target, reference and Δ (a failed parse, run or answer is no value).\n",
        markdown_table([{"group": r["group"], "metric": fm.label(r["metric"]), "kind": r["kind"],
                         "n": f"{r['n']} / {r['target_n']}, {r['reference_n']}, {r['delta_n']}",
                        "target": _interval(r, "target"), "reference": _interval(r, "reference"), "Δ": _interval(r, "delta")}
                       for r in summary], ["group", "kind", "metric", "n", "target", "reference", "Δ"]),
    ]
    if difference:
        parts += ["\n### Members' Δ minus non-members' Δ (the testbed's memorization signal)\n",
                  markdown_table([{**r, "metric": fm.label(r["metric"])} for r in difference],
                                 ["kind", "metric", "n_member", "n_non_member", "member_delta", "non_member_delta", "difference",
                                  "low", "high", "members_above"])]
    parts += [f"\n### Table 2: counterfactual functional memorization (BLEU(x, x_T) < {tau_text}, "
              f"SIM_func(x, x_T) ≥ {tau_func}, SIM_func(x, x_R) < {tau_func})\n",
              "\nCounted only where every value compared is known (n_evaluated); share: count over all samples.\n\n",
              markdown_table([{**r, "metric": fm.label(r["metric"])} for r in memorization] if memorization else [],
                             ["group", "kind", "metric", "count", "n_evaluated", "n_samples", "share"]),
              f"\n### Exact and near-verbatim (BLEU ≥ {tau_text}) memorization\n",
              markdown_table(verbatim, ["group", "kind", "target", "reference", "counterfactual", "n_evaluated", "n_samples", "share"])]
    if severity:
        parts += ["\n### Δ by severity of the App. B filter (low 1–3, medium 4–7, high 8–10)\n",
                  markdown_table([{**r, "metric": fm.label(r["metric"]), "target": mean_pm_std(r["target_mean"], r["target_std"] or 0.0),
                                   "reference": mean_pm_std(r["reference_mean"], r["reference_std"] or 0.0),
                                   "Δ": mean_pm_std(r["delta_mean"], r["delta_std"] or 0.0)}
                                  for r in severity if r["delta_mean"] is not None],
                                 ["group", "metric", "bucket", "n", "target", "reference", "Δ", "severity_delta_r"])]
    parts += ["\n### Outcomes (values computed, failures by cause)\n",
              markdown_table([{**r, "metric": fm.label(r["metric"])} for r in outcomes if r["group"] == fm.ALL],
                             ["metric", "model", "outcome", "count"])]
    return "".join(parts)


def counterfactual_aggregate(similarity: Sequence[Path], settings: dict, seed: int, out_dir: Path, *,
                             samples: Path | None = None, llm_filter: Path | None = None) -> None:
    """``similarity``: the families' tables; ``settings``: the
    similarity.aggregate slice (tau_text, tau_func, bootstrap_resamples);
    ``samples``: the testbed split (member / non-member tables); ``llm_filter``:
    the App. B filter's table (severity buckets)."""
    sim = read_similarity(similarity)
    splits = read_splits(samples)
    sim["split"] = sim["sample_id"].map(splits).astype(object).where(sim["sample_id"].isin(splits.keys()), None)
    tau_text, tau_func, resamples = settings["tau_text"], settings["tau_func"], settings["bootstrap_resamples"]

    summary = fm.summary_rows(sim, resamples, seed)
    difference = fm.member_difference_rows(sim, resamples, seed)
    memorization = fm.memorization_rows(sim, tau_text, tau_func)
    verbatim = fm.verbatim_rows(sim, tau_text)
    severity = fm.severity_rows(sim, read_severity(llm_filter))
    outcomes = fm.outcome_rows(sim)
    correlation = fm.correlation_rows(sim)
    for rows, schema, name in ((summary, SUMMARY_SCHEMA, "table1"), (difference, MEMBER_DIFFERENCE_SCHEMA, "member_difference"),
                               (memorization, MEMORIZATION_SCHEMA, "table2"), (verbatim, VERBATIM_SCHEMA, "verbatim"),
                               (severity, SEVERITY_SCHEMA, "severity"), (outcomes, OUTCOME_SCHEMA, "outcomes"),
                               (correlation, CORRELATION_SCHEMA, "correlation")):
        write_table(rows, schema, out_dir / f"{name}.parquet")

    metrics = fm.metric_order(sim["metric"].unique())
    delta_vs_bleu(sim, [m for m in metrics if m in fm.FUNCTIONAL_METRICS], tau_text, out_dir / "delta_vs_bleu.png")
    target_vs_reference(sim, metrics, out_dir / "target_vs_reference.png")
    correlation_heatmap(fm.correlation_matrix(sim), out_dir / "correlation.png", "Pearson r between metrics (target model)")
    families = [Path(p).stem for p in similarity]
    (out_dir / "report.md").write_text(render_fragment(summary, difference, memorization, verbatim, severity, outcomes, settings,
                                                       families, sim["sample_id"].nunique()))
    log.info("counterfactual aggregate: %d samples, %d metrics, tables in %s", sim["sample_id"].nunique(), len(metrics), out_dir)
