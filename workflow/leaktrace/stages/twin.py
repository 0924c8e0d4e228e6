"""twin: the complement twin's paired test and its pooled evaluation.

The twin is the target's LoRA run (same ratio, epochs, seed, settings) on
the target's non-members instead of its members (rules/train.smk), so each
evaluated sample was a member of exactly one of the two models. Per detector
and epoch: d_i = s_seen(x_i) - s_unseen(x_i) and the exact sign-flip test of
``calibration.sign_flip`` (its null is the seeded split's own coin: which of
the two models saw x_i), and the AUC of each model on its own members against
the other's, and of both pooled (every sample once as a member, under the
model that saw it, and once as a non-member, under the one that did not).

Detectors fitted on the split's labels (DPDLLM, VeilProbe: the calibration
fold's) are paired on the evaluation fold only: there neither the target's
classifier nor the twin's (fitted on the swapped labels) saw the sample's
label, so d_i compares two scores free of it. Every other detector is paired
on every evaluated sample (both folds): the twin needs no calibration fold,
nor the pre-exposure filter, since both models share the base model's prior
exposure."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.calibration.sign_flip import paired_differences, sign_flip_test
from leaktrace.data.split import RECALL_PREFIX
from leaktrace.detect.registry import FAMILIES
from leaktrace.detect.scores import scores_by_method
from leaktrace.evaluate.detection import ORACLE_METHODS
from leaktrace.evaluate.metrics import pooled_auc, roc_auc
from leaktrace.models.naming import COORDINATES, model_coordinates, target_of
from leaktrace.report.plots import twin_plot
from leaktrace.report.results import method_label
from leaktrace.report.tables import markdown_table
from leaktrace.seeding import derive_seed
from leaktrace.settings.twin import TwinSettings

log = logging.getLogger(__name__)

ALL_FOLDS, EVALUATION_FOLD = "all folds", "evaluation fold"

TWIN_SCHEMA = pa.schema(
    [
        ("method", pa.string()),
        ("family", pa.string()),
        ("oracle", pa.bool_()),  # Ref against the target's own base model: a best case no audit has
        *COORDINATES,  # of the target; its twin has the same ratio, seed and epoch
        ("twin", pa.string()),
        ("samples", pa.string()),  # all folds | evaluation fold (detectors fitted on the calibration fold's labels)
        ("n", pa.int32()),  # pairs: samples scored under both models
        ("n_target_members", pa.int32()),  # of them seen by the target (the rest by the twin)
        ("statistic", pa.float64()),  # T = sum of d_i, d_i = s_seen - s_unseen
        ("mean_difference", pa.float64()),  # T / n
        ("p_value", pa.float64()),  # one-sided sign-flip test: the seen model scores higher
        ("exact", pa.bool_()),  # all 2^n sign vectors enumerated, else n_sign_vectors random ones
        ("n_sign_vectors", pa.int64()),
        ("alpha", pa.float64()),
        ("rejected", pa.bool_()),  # p_value <= alpha
        ("auc_target", pa.float64()),  # the target on its members against its non-members
        ("auc_twin", pa.float64()),  # the twin on its members (the target's non-members) against the target's members
        # both: each sample once under the model that saw it, once under the other. No bootstrap interval: resampling
        # samples weighs each drawn sample's own seen-unseen comparison twice and shifts it; the sign-flip test is the inference
        ("auc_pooled", pa.float64()),
    ]
)


def pair_rows(
    split: dict[str, tuple[bool, str]],
    target: Path,
    twin: Path,
    names: tuple[str, str],
    settings: TwinSettings,
    seed: int,
) -> list[dict]:
    """One row per detector scored under both ``target`` and ``twin``
    (``names``: their model names); ``split``: sample_id -> (a member of the
    target, fold) over the evaluated samples."""
    (target_name, twin_name), alpha = names, settings.contamination_alpha
    target_scores, families = scores_by_method(target)
    twin_scores, twin_families = scores_by_method(twin)
    only = sorted(set(families) ^ set(twin_families))
    if only:
        log.warning("%s / %s: %s scored under one model only; left out", target_name, twin_name, ", ".join(only))
    rows = []
    for method, family in families.items():
        if method not in twin_families:
            continue
        fitted = FAMILIES[family].label_fitted if family in FAMILIES else False
        ids = [
            sid
            for sid, (_, fold) in sorted(split.items())
            if (not fitted or fold == "evaluation") and sid in target_scores[method] and sid in twin_scores[method]
        ]
        if not ids:
            log.warning("%s: no sample scored under both %s and %s", method, target_name, twin_name)
            continue
        member = np.array([split[sid][0] for sid in ids])
        seen = {sid: (target_scores if split[sid][0] else twin_scores)[method][sid] for sid in ids}
        unseen = {sid: (twin_scores if split[sid][0] else target_scores)[method][sid] for sid in ids}
        d = paired_differences(seen, unseen, ids)
        test = sign_flip_test(d, seed=derive_seed(seed, "twin", "sign-flip", target_name, method))
        t = np.array([target_scores[method][sid] for sid in ids])
        w = np.array([twin_scores[method][sid] for sid in ids])
        rows.append(
            {
                "method": method,
                "family": family,
                "oracle": method in ORACLE_METHODS,
                "model": target_name,
                **model_coordinates(target_name),
                "twin": twin_name,
                "samples": EVALUATION_FOLD if fitted else ALL_FOLDS,
                "n": test.n,
                "n_target_members": int(member.sum()),
                "statistic": test.statistic,
                "mean_difference": test.mean_difference,
                "p_value": test.p_value,
                "exact": test.exact,
                "n_sign_vectors": test.n_sign_vectors,
                "alpha": alpha,
                "rejected": test.p_value <= alpha,
                "auc_target": roc_auc(member, t),
                "auc_twin": roc_auc(~member, w),
                "auc_pooled": pooled_auc(np.array([seen[s] for s in ids]), np.array([unseen[s] for s in ids])),
            }
        )
    return [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()} for row in rows]


def twin_tables(
    samples: Path,
    twins: Mapping[str, Path],
    targets: Mapping[str, Path],
    settings: TwinSettings,
    seed: int,
    output_dir: Path,
) -> None:
    """Write twin.parquet, the report section twin.md and the figure
    twin.png to ``output_dir``. ``twins``: twin model -> its scores.parquet;
    ``targets``: target model -> its scores.parquet, one per twin (same
    ratio, seed and epoch)."""
    records = read_records(samples, ["sample_id", "kept", "split", "fold"])
    split = {
        r["sample_id"]: (r["split"] == "member", r["fold"]) for r in records if r["kept"] and r["fold"] != RECALL_PREFIX
    }
    if not split:
        raise ValueError(f"{samples}: no evaluated sample (kept, outside ReCaLL's prefix) to pair")
    rows = []
    for twin, path in twins.items():
        target = target_of(twin)
        if target not in targets:
            raise ValueError(f"twin {twin} has no scores of its target {target} (targets given: {sorted(targets)})")
        rows += pair_rows(split, targets[target], path, (target, twin), settings, seed)
    write_table(rows, TWIN_SCHEMA, output_dir / "twin.parquet")
    twin_plot(rows, settings.contamination_alpha, output_dir / "twin.png")
    (output_dir / "twin.md").write_text(render_section(rows, settings.contamination_alpha))
    log.info(
        "twin: %d detector x epoch rows, %d rejected at alpha %s",
        len(rows),
        sum(r["rejected"] for r in rows),
        settings.contamination_alpha,
    )


def render_section(rows: list[dict], alpha: float) -> str:
    """The aggregate report's section: the sign-flip p and the AUCs per detector and epoch."""
    table = [
        {
            **r,
            "detector": method_label(r),
            "mean d": f"{r['mean_difference']:.3g}",
            "p": f"{r['p_value']:.2g}" + ("" if r["exact"] else f" ({r['n_sign_vectors']:,} draws)"),
        }
        for r in sorted(rows, key=lambda r: (r["epoch"], r["model"]))
    ]
    rejected = {}
    for r in rows:
        rejected.setdefault(r["epoch"], []).append(r["rejected"])
    summary = "; ".join(f"epoch {e}: {sum(v)} of {len(v)}" for e, v in sorted(rejected.items()))
    return (
        "\n## The complement twin: a paired test per detector\n\n"
        "The twin is the target's LoRA run (same mixing ratio, epochs, seed and settings) on the target's non-members "
        "instead of its members, so each evaluated sample was a member of exactly one of the two. Per sample "
        "d = s(model that saw it) − s(model that did not); the sign-flip test asks whether the d are larger than random "
        "signs make them (one-sided; exact enumeration of the 2^n sign vectors for n ≤ 20, else 10,000 random ones, "
        "p = (1 + #≥) / (R + 1)). Its null is the split itself: which of the two models saw a sample was a fair draw, "
        "so a detector that does not respond to exposure gives p-values that are uniform or larger. "
        "Detectors fitted on the calibration fold's labels (DPDLLM, VeilProbe) are paired on the evaluation fold, where "
        "neither model's classifier saw the sample's label; the others on every evaluated sample. AUC target / twin: each "
        "model on its own members against its non-members; pooled: both, every sample once as a member and once as a "
        f"non-member. Rejections at α = contamination.alpha = {alpha}, unadjusted for the number of detectors: {summary or 'none'}.\n\n"
        + markdown_table(
            table, ["model", "twin", "detector", "samples", "n", "mean d", "p", "auc_target", "auc_twin", "auc_pooled"]
        )
    )
