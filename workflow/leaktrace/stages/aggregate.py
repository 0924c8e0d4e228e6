"""aggregate: the papers' tables from the per-model scores — every detector
per model (mixing ratio × seed × epoch) on the filtered and the unfiltered
split, decisions from conformal p-values, with bootstrap intervals and a
paired comparison with SrDetection gray-box; the figures across training
seeds; the null check of SrDetection's variants under the base model;
perplexity of members and non-members per model — as Parquet and Markdown,
with ROC curves of the headline target and of the base model; and the
calibration table, joined from the row files of every family that checks a
null (``calibration.table``). Other stages' sections (leakage scans,
contamination, the functional-memorization tables of
counterfactual_aggregate) are appended as fragments."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.calibration.table import SCHEMA as CALIBRATION_SCHEMA
from leaktrace.calibration.table import combined_rows
from leaktrace.calibration.testbed_blind import scores_by_sample
from leaktrace.data.split import RECALL_PREFIX
from leaktrace.detect.registry import is_sensitivity_instance
from leaktrace.detect.scores import read_scores
from leaktrace.evaluate.detection import ORACLE_METHODS, detection_rows
from leaktrace.evaluate.null_check import NULL_CHECK_MODEL, graybox_params, null_check_rows
from leaktrace.evaluate.seeds import SUMMARISED, across_seeds
from leaktrace.models.naming import COORDINATES, headline_model, model_coordinates
from leaktrace.models.token_table import losses_by_text
from leaktrace.report.calibration import calibration_lines, calibration_section
from leaktrace.report.plots import roc_plot
from leaktrace.report.results import SUBSET_TITLES, method_label, render_pages
from leaktrace.settings.aggregate import AggregateSettings
from leaktrace.variants.kinds import detector_variant_counts

log = logging.getLogger(__name__)

DETECTION_SCHEMA = pa.schema(
    [
        *COORDINATES,
        ("subset", pa.string()),  # "filtered": not pre-exposed (SrDetection's protocol) | "all": the whole split
        ("method", pa.string()),
        ("family", pa.string()),
        ("oracle", pa.bool_()),  # Ref against the target's own base model: a best case no audit has
        ("n_control", pa.int32()),  # the calibration fold's non-members: the conformal p-values' control set
        ("n_eval", pa.int32()),
        ("n_eval_non_members", pa.int32()),
        ("alpha", pa.float64()),  # decisions: flagged where the conformal p-value is <= alpha
        ("auc", pa.float64()),
        ("auc_low", pa.float64()),
        ("auc_high", pa.float64()),
        ("tpr_at_1fpr", pa.float64()),  # null: not estimable (1% < 1 / evaluation non-members)
        ("tpr_at_5fpr", pa.float64()),
        # of the conformal decisions at alpha (every method alike): not SrDetection's rule, see own_rule_* below
        ("accuracy", pa.float64()),
        ("macro_precision", pa.float64()),  # averaged over members and non-members, as SrDetection's Tables 1-2 average
        ("macro_recall", pa.float64()),
        ("fpr", pa.float64()),  # the share of the evaluation fold's non-members flagged at alpha
        ("macro_f1", pa.float64()),
        ("macro_f1_low", pa.float64()),
        ("macro_f1_high", pa.float64()),
        ("member_precision", pa.float64()),  # the member class alone
        ("member_recall", pa.float64()),
        ("member_f1", pa.float64()),
        # the detector's own decision (scores' ``decision``), on the same evaluation samples: SrDetection's rule
        # (gray-box PPL_0 < min_i PPL_i, black-box NGO_0 > max_i NGO_i), the decisions of its paper's Tables 1-2;
        # a learned classifier's own threshold; null for a detector that records no decision
        ("own_rule_accuracy", pa.float64()),
        ("own_rule_macro_precision", pa.float64()),
        ("own_rule_macro_recall", pa.float64()),
        ("own_rule_macro_f1", pa.float64()),
        ("own_rule_macro_f1_low", pa.float64()),  # 95% percentile interval, evaluation fold resampled within each class
        ("own_rule_macro_f1_high", pa.float64()),
        ("own_rule_member_f1", pa.float64()),
        ("own_rule_fpr", pa.float64()),  # share of the evaluation fold's non-members the rule flags
        # the method minus SrDetection gray-box, paired bootstrap; null without SrDetection gray-box
        ("delta_auc", pa.float64()),
        ("delta_auc_low", pa.float64()),
        ("delta_auc_high", pa.float64()),
        ("beats_auc_share", pa.float64()),  # share of replicates with a higher AUC than SrDetection
        ("delta_macro_f1", pa.float64()),
        ("delta_macro_f1_low", pa.float64()),
        ("delta_macro_f1_high", pa.float64()),
        ("beats_macro_f1_share", pa.float64()),
        # the blind baseline (a text-only classifier of members against non-members, no model, fitted on the
        # evaluation fold by repeated cross-validation) on the same evaluation samples, and the method's AUC minus
        # it on the same bootstrap replicates ("beats blind by"); null without the testbed's blind baseline
        ("blind_auc", pa.float64()),
        ("blind_auc_low", pa.float64()),
        ("blind_auc_high", pa.float64()),
        ("delta_blind_auc", pa.float64()),
        ("delta_blind_auc_low", pa.float64()),
        ("delta_blind_auc_high", pa.float64()),
        ("beats_blind_auc_share", pa.float64()),  # share of replicates with a higher AUC than the blind baseline
        ("note", pa.string()),  # why a row has no figures
    ]
)

SEEDS_SCHEMA = pa.schema(
    [
        ("ratio", pa.float64()),
        ("epoch", pa.int32()),
        ("subset", pa.string()),
        ("method", pa.string()),
        ("family", pa.string()),
        ("oracle", pa.bool_()),
        ("n_seeds", pa.int32()),
        ("n_eval", pa.int32()),
        *[(f"{metric}_{stat}", pa.float64()) for metric in SUMMARISED for stat in ("mean", "sd")],
    ]
)

NULL_CHECK_SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("method", pa.string()),
        ("n_variants", pa.int32()),  # the method's variant count; a sample with fewer valid ones uses those
        ("n_samples", pa.int32()),
        ("mean_variants", pa.float64()),  # mean over samples of n_i, the variants each was compared with
        ("n_flagged", pa.int32()),
        ("rate", pa.float64()),  # share of samples whose original beat all its variants
        ("rate_low", pa.float64()),  # Wilson 95%
        ("rate_high", pa.float64()),
        ("expected_rate", pa.float64()),  # mean of 1 / (n_i + 1): exchangeable variants
        ("verdict", pa.string()),
    ]
)

PERPLEXITY_SCHEMA = pa.schema(
    [*COORDINATES, ("split", pa.string()), ("n", pa.int32()), ("mean_ppl", pa.float64()), ("median_ppl", pa.float64())]
)


def roc_figure(model: str | None, curves: dict[str, dict], families: dict[str, str], path: Path) -> None:
    """The ROC figure of one model on the filtered subset (SrDetection's
    protocol), or on the whole split where the filtered one could not be
    evaluated; the title says which. Sensitivity instances stay in the tables."""
    subset = next((s for s in ("filtered", "all") if curves.get(s)), None)
    drawn = (
        {}
        if subset is None
        else {m: c for m, c in curves[subset].items() if not is_sensitivity_instance(m, families[m])}
    )
    labels = {m: method_label({"method": m, "oracle": m in ORACLE_METHODS}) for m in drawn}
    title = f"{model or 'no model'}: {SUBSET_TITLES[subset] if subset else 'nothing to evaluate'}"
    roc_plot({labels[m]: c for m, c in drawn.items()}, {labels[m]: families[m] for m in drawn}, path, title)


def perplexity_rows(model: str, tokens: Path, split: dict[str, tuple[str, str]]) -> list[dict]:
    losses = losses_by_text(tokens)
    rows = []
    for group in ("member", "non-member"):
        ppl = np.array(
            [math.exp(losses[(sid, 0)]) for sid, (s, _) in split.items() if s == group and (sid, 0) in losses]
        )
        if len(ppl):
            rows.append(
                {
                    "model": model,
                    **model_coordinates(model),
                    "split": group,
                    "n": len(ppl),
                    "mean_ppl": float(ppl.mean()),
                    "median_ppl": float(np.median(ppl)),
                }
            )
    return rows


def aggregate(
    samples: Path,
    scores: Mapping[str, Path],
    tokens: Mapping[str, Path],
    variants: Path,
    settings: AggregateSettings,
    seed: int,
    output_dir: Path,
    fragments: tuple[str, ...] = (),
    calibration_rows: tuple[Path, ...] = (),
    blind: Path | None = None,
    blind_scores: Path | None = None,
) -> None:
    """Write the testbed's tables, figures and report pages of one benchmark
    to ``output_dir``.

    ``scores``, ``tokens``: each model's scores.parquet and token table.
    ``fragments``: ``FAMILY=PATH`` of other stages' Markdown sections (the
    leakage scans, the twin, ...), each on its family's page beside the
    summary ``report.md`` (``report.results.FAMILIES``). ``calibration_rows``:
    row files of ``calibration.table``, joined into calibration.parquet.
    ``blind``, ``blind_scores``: the testbed's blind baseline (its table, its
    out-of-fold scores) from the testbed-blind stage, set beside every
    detector (both or neither)."""
    by_family: dict[str, list[str]] = {}
    for item in fragments:
        family, sep, path = item.partition("=")
        if not sep:
            raise ValueError(f"--fragments: expected FAMILY=PATH, got {item!r}")
        by_family.setdefault(family, []).append(Path(path).read_text())
    records = read_records(samples)
    given = blind is not None and blind_scores is not None
    blind_rows = read_records(blind) if given else []
    blind_by_sample = scores_by_sample(read_records(blind_scores)) if given else None
    # Perplexity and the counterfactual table use the whole split; ReCaLL's prefix samples are no part of it.
    split = {r["sample_id"]: (r["split"], r["fold"]) for r in records if r["kept"] and r["fold"] != RECALL_PREFIX}

    detection, curves = [], {}
    for model, path in scores.items():
        try:
            rows, curves[model] = detection_rows(
                read_scores(path),
                records,
                n_resamples=settings.bootstrap_resamples,
                seed=seed,
                alpha=settings.calibration_alpha,
                min_per_class=settings.filtered_min_per_class,
                blind=blind_by_sample,
            )
        except ValueError as err:
            raise ValueError(f"evaluating {model} ({path}): {err}") from None
        detection += [
            {name: row.get(name) for name in DETECTION_SCHEMA.names} | {"model": model, **model_coordinates(model)}
            for row in rows
        ]
    write_table(detection, DETECTION_SCHEMA, output_dir / "detection.parquet")
    seeds = across_seeds(detection)
    write_table(seeds, SEEDS_SCHEMA, output_dir / "across_seeds.parquet")

    null_rows = []
    if NULL_CHECK_MODEL in scores:
        variant_rows = read_records(variants, ["sample_id", "kind", "valid"])
        graybox = settings.srdetection_graybox
        counts = detector_variant_counts(variant_rows)
        others = {g: detector_variant_counts(variant_rows, g) for g in graybox_params(graybox)["generators"]}
        null_rows = null_check_rows(read_scores(scores[NULL_CHECK_MODEL]), records, counts, graybox, others)
    write_table(null_rows, NULL_CHECK_SCHEMA, output_dir / "null_check.parquet")

    perplexity = [row for model, path in tokens.items() for row in perplexity_rows(model, path, split)]
    write_table(perplexity, PERPLEXITY_SCHEMA, output_dir / "perplexity.parquet")

    families = {r["method"]: r["family"] for r in detection}
    for model, name in ((headline_model(list(scores)), "roc.png"), (NULL_CHECK_MODEL, "roc_reference.png")):
        roc_figure(model, curves.get(model, {}), families, output_dir / name)

    calibration = combined_rows(calibration_rows)
    write_table(calibration, CALIBRATION_SCHEMA, output_dir / "calibration.parquet")

    pages = render_pages(
        records,
        detection,
        seeds,
        null_rows,
        perplexity,
        calibration_section(calibration),
        calibration_lines(calibration),
        by_family,
        blind_rows,
    )
    for name, text in pages.items():
        (output_dir / f"{name}.md").write_text(text)
    log.info("aggregate tables in %s", output_dir)
