"""aggregate: the papers' tables from the per-model scores and the
counterfactual similarities — detection metrics per method × model (mixing
ratio × epoch), their sensitivity to epochs, mixing ratio and SrDetection's
variant count, perplexity of members and non-members per model, the
counterfactual table — as Parquet and Markdown, with ROC curves per model and
a Δ-versus-BLEU scatter."""

from __future__ import annotations

import logging
import math
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.split import RECALL_PREFIX
from leaktrace.evaluate.metrics import bootstrap_ci, choose_threshold, decision_metrics, macro_f1, roc_auc, tpr_at_fpr
from leaktrace.models.token_table import losses_by_text
from leaktrace.report.plots import delta_scatter, roc_plot
from leaktrace.report.tables import markdown_table, mean_pm_std

log = logging.getLogger(__name__)

DETECTION_SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("ratio", pa.float64()),  # general-text tokens per code token; null for the reference
        ("epoch", pa.int32()),  # 0 for the reference (the base model)
        ("method", pa.string()),
        ("family", pa.string()),
        ("n_eval", pa.int32()),
        ("threshold", pa.float64()),  # null for threshold-free methods
        ("accuracy", pa.float64()),
        ("precision", pa.float64()),
        ("recall", pa.float64()),
        ("macro_f1", pa.float64()),
        ("macro_f1_low", pa.float64()),
        ("macro_f1_high", pa.float64()),
        ("auc", pa.float64()),
        ("auc_low", pa.float64()),
        ("auc_high", pa.float64()),
        ("tpr_at_1fpr", pa.float64()),
        ("tpr_at_5fpr", pa.float64()),
    ]
)

PERPLEXITY_SCHEMA = pa.schema(
    [("model", pa.string()), ("ratio", pa.float64()), ("epoch", pa.int32()), ("split", pa.string()), ("n", pa.int32()), ("mean_ppl", pa.float64()), ("median_ppl", pa.float64())]
)

COUNTERFACTUAL_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("metric", pa.string()),
        ("n", pa.int32()),
        ("target_mean", pa.float64()),
        ("target_std", pa.float64()),
        ("reference_mean", pa.float64()),
        ("reference_std", pa.float64()),
        ("delta_mean", pa.float64()),
        ("delta_std", pa.float64()),
    ]
)


def model_coordinates(model: str) -> dict:
    """The mixing ratio and epoch of a testbed model name: ``reference`` is
    epoch 0 (no ratio); ``target-r{ratio}-e{epoch}``."""
    if model == "reference":
        return {"ratio": None, "epoch": 0}
    match = re.fullmatch(r"target-r([0-9.]+)-e(\d+)", model)
    if not match:
        raise ValueError(f"{model!r} is neither 'reference' nor a target model 'target-r<ratio>-e<epoch>'")
    return {"ratio": float(match.group(1)), "epoch": int(match.group(2))}


def detection_rows(model: str, scores: list[dict], split: dict[str, tuple[str, str]], settings: dict, seed: int) -> tuple[list[dict], dict]:
    by_method: dict[str, list[dict]] = defaultdict(list)
    for s in scores:
        if s["sample_id"] in split:
            by_method[s["method"]].append(s)
    rows, curves = [], {}
    for method, items in by_method.items():
        cal = [s for s in items if split[s["sample_id"]][1] == "calibration"]
        ev = [s for s in items if split[s["sample_id"]][1] == "evaluation"]
        if not ev:
            continue
        labels = np.array([split[s["sample_id"]][0] == "member" for s in ev], dtype=int)
        scores_ev = np.array([s["score"] for s in ev], dtype=float)
        threshold_free = ev[0]["decision"] is not None
        if threshold_free:
            threshold = None
            predictions = np.array([s["decision"] for s in ev], dtype=int)
        else:
            cal_labels = np.array([split[s["sample_id"]][0] == "member" for s in cal], dtype=int)
            if len(set(cal_labels.tolist())) < 2:
                raise ValueError(f"{method}: the calibration fold needs members and non-members; raise filter.calibration_fraction")
            threshold = choose_threshold(cal_labels, np.array([s["score"] for s in cal], dtype=float))
            predictions = (scores_ev >= threshold).astype(int)
        metrics = decision_metrics(labels, predictions)
        f1_ci = bootstrap_ci(labels, predictions, macro_f1, n_resamples=settings["bootstrap_resamples"], seed=seed)
        auc_ci = bootstrap_ci(labels, scores_ev, roc_auc, n_resamples=settings["bootstrap_resamples"], seed=seed)
        rows.append(
            {
                "model": model,
                **model_coordinates(model),
                "method": method,
                "family": ev[0]["family"],
                "n_eval": len(ev),
                "threshold": threshold,
                **{k: metrics[k] for k in ("accuracy", "precision", "recall", "macro_f1")},
                "macro_f1_low": f1_ci[0],
                "macro_f1_high": f1_ci[1],
                "auc": roc_auc(labels, scores_ev),
                "auc_low": auc_ci[0],
                "auc_high": auc_ci[1],
                "tpr_at_1fpr": tpr_at_fpr(labels, scores_ev, 0.01),
                "tpr_at_5fpr": tpr_at_fpr(labels, scores_ev, 0.05),
            }
        )
        curves[method] = (labels, scores_ev)
    return rows, curves


def perplexity_rows(model: str, tokens: Path, split: dict[str, tuple[str, str]]) -> list[dict]:
    losses = losses_by_text(tokens)
    rows = []
    for group in ("member", "non-member"):
        ppl = np.array([math.exp(losses[(sid, 0)]) for sid, (s, _) in split.items() if s == group and (sid, 0) in losses])
        if len(ppl):
            rows.append({"model": model, **model_coordinates(model), "split": group, "n": len(ppl), "mean_ppl": float(ppl.mean()), "median_ppl": float(np.median(ppl))})
    return rows


def counterfactual_rows(similarity: list[dict], split: dict[str, tuple[str, str]]) -> list[dict]:
    rows = []
    for group in ("member", "non-member", "all"):
        for metric in sorted({s["metric"] for s in similarity}):
            sel = [s for s in similarity if s["metric"] == metric and (group == "all" or split.get(s["sample_id"], ("",))[0] == group)]
            if not sel:
                continue
            row = {"group": group, "metric": metric, "n": len(sel)}
            for key in ("target", "reference", "delta"):
                values = np.array([s[key] for s in sel], dtype=float)
                row[f"{key}_mean"], row[f"{key}_std"] = float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else 0.0
            rows.append(row)
    return rows


def aggregate(samples: Path, scores: dict[str, Path], tokens: dict[str, Path], similarity: Path, settings: dict,
              seed: int, out_dir: Path, fragments: tuple[Path, ...] = ()) -> None:
    """``fragments``: Markdown sections of other stages (the leakage scans) appended to the report."""
    records = read_records(samples)
    # ReCaLL's prefix samples are neither calibration nor evaluation data.
    split = {r["sample_id"]: (r["split"], r["fold"]) for r in records if r["kept"] and r["fold"] != RECALL_PREFIX}

    detection, curves = [], {}
    for model, path in scores.items():
        rows, model_curves = detection_rows(model, read_records(path), split, settings, seed)
        detection += rows
        curves[model] = model_curves
    write_table(detection, DETECTION_SCHEMA, out_dir / "detection.parquet")

    perplexity = [row for model, path in tokens.items() for row in perplexity_rows(model, path, split)]
    write_table(perplexity, PERPLEXITY_SCHEMA, out_dir / "perplexity.parquet")

    sim = read_records(similarity)
    cf = counterfactual_rows(sim, split)
    write_table(cf, COUNTERFACTUAL_SCHEMA, out_dir / "counterfactual.parquet")

    roc_plot(curves, out_dir / "roc.png", columns=1 + len({row["epoch"] for row in detection if row["epoch"]}))
    bleu = {s["sample_id"]: s for s in sim if s["metric"] == "bleu"}
    ids = [sid for sid in bleu if sid in split]
    delta_scatter([bleu[i]["target"] for i in ids], [bleu[i]["delta"] for i in ids], [split[i][0] for i in ids],
                  out_dir / "delta_vs_bleu.png", "BLEU")

    extra = tuple(path.read_text() for path in fragments)
    (out_dir / "report.md").write_text(render_report(records, detection, perplexity, cf, extra))
    log.info("aggregate tables in %s", out_dir)


def detection_sections(detection: list[dict]) -> list[str]:
    """SrDetection Tables 1-2: per model, one row per method."""
    parts = []
    for model in dict.fromkeys(r["model"] for r in detection):
        rows = [r for r in detection if r["model"] == model]
        parts += [
            f"## Detection under {model} (evaluation fold; thresholds from the calibration fold; 95% bootstrap CIs)\n",
            markdown_table(
                [{**r, "macro F1 [95% CI]": f"{r['macro_f1']:.3f} [{r['macro_f1_low']:.3f}, {r['macro_f1_high']:.3f}]",
                  "AUC [95% CI]": f"{r['auc']:.3f} [{r['auc_low']:.3f}, {r['auc_high']:.3f}]"} for r in rows],
                ["method", "n_eval", "threshold", "accuracy", "precision", "recall", "macro F1 [95% CI]", "AUC [95% CI]",
                 "tpr_at_1fpr", "tpr_at_5fpr"],
            ),
        ]
    return parts


def pivot(rows: list[dict], row_key: str, column_key: str, value: str, label) -> tuple[list[dict], list[str]]:
    """A wide table: one row per ``row_key`` value, one column per ``column_key`` value."""
    columns = sorted({r[column_key] for r in rows})
    table: dict = {}
    for r in rows:
        table.setdefault(r[row_key], {row_key: r[row_key]})[label(r[column_key])] = r[value]
    return list(table.values()), [row_key] + [label(c) for c in columns]


def sensitivity_sections(detection: list[dict]) -> list[str]:
    targets = [r for r in detection if r["ratio"] is not None]
    if not targets:
        return []
    parts = []
    ratios = sorted({r["ratio"] for r in targets})
    last_epoch = max(r["epoch"] for r in targets)
    for ratio in ratios:
        rows, columns = pivot([r for r in targets if r["ratio"] == ratio], "method", "epoch", "macro_f1", lambda e: f"epoch {e}")
        parts += [f"## Macro F1 by epoch (mixing ratio 1:{ratio:g})\n", markdown_table(rows, columns)]
        variant_counts = [r for r in targets if r["ratio"] == ratio and r["family"] == "srdetection_graybox"]
        if len({r["method"] for r in variant_counts}) > 1:
            rows, columns = pivot(variant_counts, "method", "epoch", "macro_f1", lambda e: f"epoch {e}")
            parts += [f"## SrDetection gray-box macro F1 by variant count n (mixing ratio 1:{ratio:g})\n", markdown_table(rows, columns)]
    if len(ratios) > 1:
        rows, columns = pivot([r for r in targets if r["epoch"] == last_epoch], "method", "ratio", "macro_f1", lambda r: f"1:{r:g}")
        parts += [f"## Macro F1 by mixing ratio (epoch {last_epoch})\n", markdown_table(rows, columns)]
    return parts


def render_report(samples: list[dict], detection: list[dict], perplexity: list[dict], cf: list[dict],
                  extra_sections: tuple[str, ...] = ()) -> str:
    kept = [s for s in samples if s["kept"]]
    dropped: dict[str, int] = defaultdict(int)
    for s in samples:
        if not s["kept"]:
            dropped[s["reason"].split(":")[0]] += 1
    parts = [
        "# leaktrace results\n",
        f"{len(samples)} samples; {len(kept)} kept "
        f"({sum(s['split'] == 'member' for s in kept)} members, "
        f"{sum(s['split'] == 'non-member' and s['fold'] != RECALL_PREFIX for s in kept)} non-members); "
        f"{sum(s['fold'] == RECALL_PREFIX for s in samples)} non-members held out as ReCaLL's prefix; "
        f"dropped: {', '.join(f'{k} {v}' for k, v in sorted(dropped.items())) or 'none'}.\n",
        *detection_sections(detection),
        *sensitivity_sections(detection),
        "\n## Perplexity of the original samples\n",
        markdown_table(perplexity, ["model", "split", "n", "mean_ppl", "median_ppl"], digits=2),
        *extra_sections,
        "\n## Counterfactual generation (target vs reference, mean ± std)\n",
        markdown_table(
            [{"group": r["group"], "metric": r["metric"], "n": r["n"],
              "target": mean_pm_std(r["target_mean"], r["target_std"]),
              "reference": mean_pm_std(r["reference_mean"], r["reference_std"]),
              "Δ": mean_pm_std(r["delta_mean"], r["delta_std"])} for r in cf],
            ["group", "metric", "n", "target", "reference", "Δ"],
        ),
    ]
    return "\n".join(parts)
