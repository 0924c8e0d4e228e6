"""The aggregate stage's Markdown report. Threshold-free figures (AUC, TPR at
low FPR) come before macro F1 everywhere; TPR at an FPR the evaluation fold
cannot resolve reads "n/e" (not estimable); Ref against the target's own base
model is labelled "oracle"."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from leaktrace.data.split import RECALL_PREFIX
from leaktrace.evaluate.detection import BASELINE, SUBSETS
from leaktrace.report.own_rule import own_rule_sections
from leaktrace.report.tables import markdown_table, mean_pm_std

SUBSET_TITLES = {
    "filtered": "filtered split (SrDetection's protocol: samples the pre-exposure filter passes)",
    "all": "unfiltered split (every sample of the member / non-member split)",
}


def method_label(row: dict) -> str:
    return f"{row['method']} (oracle)" if row["oracle"] else row["method"]


def estimate(value: float | None, digits: int = 3) -> str:
    """A figure, or "n/e" where it is not estimable (None)."""
    return "n/e" if value is None else f"{value:.{digits}f}"


def with_interval(value: float | None, low: float | None, high: float | None) -> str:
    """``value [low, high]``; the value alone where the interval is not estimable (too few samples)."""
    if value is None:
        return "–"
    return f"{value:.3f}" if low is None or high is None else f"{value:.3f} [{low:.3f}, {high:.3f}]"


def unreachable_alpha(row: dict) -> str:
    """A sentence where no sample can be flagged: with m controls a conformal
    p-value is at least 1 / (m + 1), and where that exceeds alpha every
    decision is negative (macro F1 about 0.333 whatever the scores), which
    would otherwise read as a detector that finds nothing. Empty where alpha is reachable."""
    m, alpha = row.get("n_control"), row.get("alpha")
    if m is None or alpha is None or 1 / (m + 1) <= alpha:
        return ""
    return (
        f"**No sample can be flagged at this α**: with {m} controls the smallest conformal p-value is 1/{m + 1} = "
        f"{1 / (m + 1):.3f} > α = {alpha:g}, so every decision is negative and the decision columns (macro F1, FPR "
        f"at α, Δ macro F1) say nothing of the detector; AUC, TPR at low FPR and the own-rule columns do not depend "
        f"on it. A calibration fold of at least {math.ceil(1 / alpha) - 1} non-members makes α reachable "
        "(filter.split.calibration_fraction). "
    )


def summary_alpha(detection: Sequence[dict]) -> str:
    """The decisions' level, as the rows give it."""
    return next((f"{r['alpha']:g}" for r in detection if r.get("alpha") is not None), "n/e")


def mean_sd(mean: float | None, sd: float | None) -> str:
    if mean is None:
        return "n/e"
    return f"{mean:.3f}" if sd is None else mean_pm_std(mean, sd)


def sample_summary(samples: Sequence[dict]) -> str:
    kept = [s for s in samples if s["kept"] and s["fold"] != RECALL_PREFIX]
    dropped: dict[str, int] = defaultdict(int)
    for s in samples:
        if not s["kept"]:
            dropped[s["reason"].split(":")[0]] += 1
    pre_exposed = [s for s in kept if s["pre_exposed"] is True]
    return (
        f"{len(samples)} samples; {len(kept)} in the member / non-member split "
        f"({sum(s['split'] == 'member' for s in kept)} members, {sum(s['split'] == 'non-member' for s in kept)} non-members), "
        f"of which {len(pre_exposed)} are flagged pre-exposed ({sum(s['split'] == 'member' for s in pre_exposed)} members), "
        f"left out of the filtered subset; {sum(s['fold'] == RECALL_PREFIX for s in samples)} non-members held out "
        f"as ReCaLL's prefix; dropped: {', '.join(f'{k} {v}' for k, v in sorted(dropped.items())) or 'none'}.\n"
    )


def null_check_section(rows: Sequence[dict]) -> list[str]:
    text = (
        "\n## Null check: SrDetection gray-box under the base model\n\n"
        "The base model never saw the benchmark, so with exchangeable variants the original of a sample compared "
        "with n_i variants beats them all with probability 1/(n_i + 1). Observed: the share of kept samples it "
        "flags (Wilson 95% CI); expected: the mean of 1/(n_i + 1). A share above the expectation means the "
        "variants are less natural than the originals, which SrDetection reads as leakage.\n"
    )
    if not rows:
        return [text, "_(no base-model SrDetection gray-box scores: the null check did not run)_\n"]
    table = markdown_table(
        [
            {
                **r,
                "share flagged [95% CI]": with_interval(r["rate"], r["rate_low"], r["rate_high"]),
                "expected 1/(n+1)": r["expected_rate"],
                "mean n_i": r["mean_variants"],
            }
            for r in rows
        ],
        [
            "method",
            "n_variants",
            "n_samples",
            "mean n_i",
            "n_flagged",
            "share flagged [95% CI]",
            "expected 1/(n+1)",
            "verdict",
        ],
    )
    return [text, table]


def headline_sections(detection: Sequence[dict], seeds: Sequence[dict]) -> list[str]:
    """The last epoch of the first mixing ratio: mean ± sd across training
    seeds, then each seed's AUC / TPR at 5% FPR / macro F1."""
    targets = [r for r in detection if r["seed"] is not None]
    if not targets:
        return []
    ratio = targets[0]["ratio"]
    epoch = max(r["epoch"] for r in targets if r["ratio"] == ratio)
    seed_ids = sorted({r["seed"] for r in targets if r["ratio"] == ratio and r["epoch"] == epoch})
    parts = []
    for subset in SUBSETS:
        summary = [s for s in seeds if (s["ratio"], s["epoch"], s["subset"]) == (ratio, epoch, subset)]
        if not summary:
            continue
        per_seed = {
            (r["method"], r["seed"]): r
            for r in targets
            if (r["ratio"], r["epoch"], r["subset"]) == (ratio, epoch, subset)
        }
        rows = []
        for s in summary:
            row = {
                "method": method_label(s),
                "n eval": s["n_eval"],
                "AUC": mean_sd(s["auc_mean"], s["auc_sd"]),
                "TPR at 5% FPR": mean_sd(s["tpr_at_5fpr_mean"], s["tpr_at_5fpr_sd"]),
                "macro F1": mean_sd(s["macro_f1_mean"], s["macro_f1_sd"]),
                "macro F1, own rule": "–"
                if s["own_rule_macro_f1_mean"] is None
                else mean_sd(s["own_rule_macro_f1_mean"], s["own_rule_macro_f1_sd"]),
            }
            for seed in seed_ids:
                r = per_seed.get((s["method"], seed))
                row[f"seed {seed}"] = (
                    "–"
                    if r is None or r["n_eval"] is None
                    else f"{r['auc']:.3f} / {estimate(r['tpr_at_5fpr'])} / {r['macro_f1']:.3f}"
                )
            rows.append(row)
        parts += [
            f"\n## Headline: epoch {epoch}, mixing ratio 1:{ratio:g}, {SUBSET_TITLES[subset]}\n\n"
            f"Mean ± sd across {len(seed_ids)} training seeds; per seed: AUC / TPR at 5% FPR / macro F1 (of conformal "
            f"decisions at α = calibration.alpha = {summary_alpha(detection)}); `macro F1, own rule`: of the detector's own "
            "decision, SrDetection's PPL_0 < min PPL_i / NGO_0 > max NGO_i as its paper's Tables 1-2 (– for a detector "
            "without one). `n eval`: "
            "evaluation samples; a method with fewer (a variant generator that covers only some samples) is "
            "evaluated on its own samples and compared with SrDetection gray-box on those. "
            + unreachable_alpha(next(iter(per_seed.values()), {}))
            + "\n",
            markdown_table(
                rows,
                [
                    "method",
                    "n eval",
                    "AUC",
                    "TPR at 5% FPR",
                    "macro F1",
                    "macro F1, own rule",
                    *[f"seed {s}" for s in seed_ids],
                ],
            ),
        ]
    return parts


def detection_sections(detection: Sequence[dict]) -> list[str]:
    """Per model and subset, one row per method: the threshold-free figures
    first, the conformal decisions' macro F1 and the paired comparison."""
    parts = []
    for model in dict.fromkeys(r["model"] for r in detection):
        for subset in SUBSETS:
            rows = [r for r in detection if r["model"] == model and r["subset"] == subset]
            if not rows:
                continue
            if rows[0]["n_eval"] is None:
                reason = rows[0].get("note") or "a fold of this subset has no members or no non-members"
                parts.append(f"\n## Detection under {model}, {subset} subset\n\n{reason[0].upper()}{reason[1:]}.\n")
                continue
            parts += [
                f"\n## Detection under {model}, {subset} subset\n\n"
                f"Evaluation fold of {rows[0]['n_eval']} samples ({rows[0]['n_eval_non_members']} non-members). A sample is "
                f"flagged where its conformal p-value against the calibration fold's {rows[0]['n_control']} non-members is "
                f"at most α = calibration.alpha = {rows[0]['alpha']:g} (cross-conformal for the cross-fitted DPDLLM and VeilProbe); FPR is the share of "
                "the evaluation fold's non-members flagged, which a calibrated detector keeps near α or below. A method scored "
                "on fewer samples (column n eval) is evaluated on its own and compared with the baseline on those. 95% bootstrap "
                f"CIs resample the control set too; Δ is the method minus {BASELINE} on the same replicates (paired), 'beats' the "
                "share of replicates where the method is higher. Accuracy, macro precision and recall of these conformal decisions, and "
                "member-class precision, recall and F1, are in detection.parquet; SrDetection under its own rule (its paper's "
                "Tables 1-2) is in the section 'Detectors under their own decision rule'. "
                f"{unreachable_alpha(rows[0])}{blind_sentence(rows[0])}\n",
                markdown_table(
                    [
                        {
                            "method": method_label(r),
                            "n eval": "–" if r.get("n_eval") is None else f"{r['n_eval']} ({r['n_eval_non_members']})",
                            "AUC [95% CI]": with_interval(r["auc"], r["auc_low"], r["auc_high"]),
                            "TPR at 1% FPR": estimate(r["tpr_at_1fpr"]),
                            "TPR at 5% FPR": estimate(r["tpr_at_5fpr"]),
                            "macro F1 [95% CI]": with_interval(r["macro_f1"], r["macro_f1_low"], r["macro_f1_high"]),
                            "Δ AUC [95% CI]": with_interval(r["delta_auc"], r["delta_auc_low"], r["delta_auc_high"]),
                            "beats (AUC)": r["beats_auc_share"],
                            "Δ macro F1 [95% CI]": with_interval(
                                r["delta_macro_f1"], r["delta_macro_f1_low"], r["delta_macro_f1_high"]
                            ),
                            "beats (F1)": r["beats_macro_f1_share"],
                            "FPR at α": estimate(r.get("fpr")),
                            "beats blind by [95% CI]": with_interval(
                                r.get("delta_blind_auc"), r.get("delta_blind_auc_low"), r.get("delta_blind_auc_high")
                            ),
                        }
                        for r in rows
                    ],
                    [
                        "method",
                        "n eval",
                        "AUC [95% CI]",
                        "beats blind by [95% CI]",
                        "TPR at 1% FPR",
                        "TPR at 5% FPR",
                        "FPR at α",
                        "macro F1 [95% CI]",
                        "Δ AUC [95% CI]",
                        "beats (AUC)",
                        "Δ macro F1 [95% CI]",
                        "beats (F1)",
                    ],
                ),
            ]
    return parts


def pivot(rows: Sequence[dict], column_key: str, cell, label) -> tuple[list[dict], list[str]]:
    """A wide table: one row per method, one column per ``column_key`` value,
    each cell ``cell(row)``."""
    columns = sorted({r[column_key] for r in rows})
    table: dict = {}
    for r in rows:
        table.setdefault(r["method"], {"method": method_label(r)})[label(r[column_key])] = cell(r)
    return list(table.values()), ["method"] + [label(c) for c in columns]


METRIC_TITLES = {"auc": "AUC", "macro_f1": "Macro F1"}


def sensitivity_sections(seeds: Sequence[dict]) -> list[str]:
    """SrDetection's sensitivity tables from the across-seed summary (mean ±
    sd): by epoch and by variant count per mixing ratio, by mixing ratio at
    the last epoch; AUC before macro F1, per subset."""
    if not seeds:
        return []
    parts = []
    ratios = list(dict.fromkeys(r["ratio"] for r in seeds))
    last_epoch = max(r["epoch"] for r in seeds)
    for subset in SUBSETS:
        rows_of_subset = [r for r in seeds if r["subset"] == subset]
        for metric, title in METRIC_TITLES.items():

            def cell(r, metric=metric):
                return mean_sd(r[f"{metric}_mean"], r[f"{metric}_sd"])

            for ratio in ratios:
                at_ratio = [r for r in rows_of_subset if r["ratio"] == ratio]
                rows, columns = pivot(at_ratio, "epoch", cell, lambda e: f"epoch {e}")
                parts += [
                    f"\n## {title} by epoch (mixing ratio 1:{ratio:g}, {subset} subset)\n",
                    markdown_table(rows, columns),
                ]
                variant_counts = [r for r in at_ratio if r["family"] == BASELINE]
                if len({r["method"] for r in variant_counts}) > 1:
                    rows, columns = pivot(variant_counts, "epoch", cell, lambda e: f"epoch {e}")
                    parts += [
                        f"\n## SrDetection gray-box {title} by variant count n (mixing ratio 1:{ratio:g}, {subset} subset)\n",
                        markdown_table(rows, columns),
                    ]
            if len(ratios) > 1:
                rows, columns = pivot(
                    [r for r in rows_of_subset if r["epoch"] == last_epoch], "ratio", cell, lambda r: f"1:{r:g}"
                )
                parts += [
                    f"\n## {title} by mixing ratio (epoch {last_epoch}, {subset} subset)\n",
                    markdown_table(rows, columns),
                ]
    return parts


def blind_sentence(row: dict) -> str:
    """The blind baseline's AUC on a subset's evaluation samples, as the table's caption says it."""
    if row.get("blind_auc") is None:
        return "No blind baseline on these samples."
    return (
        f"The blind baseline (a text-only classifier of members against non-members, no model) has AUC "
        f"{with_interval(row['blind_auc'], row['blind_auc_low'], row['blind_auc_high'])} on these samples; 'beats blind by' "
        "is each method's AUC minus it on the same replicates (paired)."
    )


def blind_section(rows: Sequence[dict]) -> list[str]:
    """The testbed's blind baseline: members against non-members of the evaluation fold, by text alone."""
    parts = []
    for r in rows:
        if r.get("p_value") is None:
            parts.append(f"\n## Blind baseline of {r['benchmark']}\n\n{r.get('note') or 'not run'}.\n")
            continue
        how = "every labelling" if r["exact"] else f"{r['n_labellings']} random labellings"
        parts.append(
            f"\n## Blind baseline of {r['benchmark']}\n\nA classifier with no model ({r['features']}) tells the evaluation "
            f"fold's {r['n_suspect']} members from its {r['n_control']} non-members with cross-validated AUC "
            f"{r['auc']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] (mean of {r['repeats']} repeated {r['folds']}-fold "
            f"splits; {r['interval']}), permutation p = {r['p_value']:.3g} over {how}. The split is random, so it should sit "
            "near 0.5; each detector's AUC is set beside it below ('beats blind by').\n"
        )
    return parts


# The family pages beside report.md, in the summary's order: (title, what it holds, where it is off).
FAMILIES = {
    "detection": (
        "Detection",
        "every detector per model and subset, the sensitivity tables, perplexity, the complement twin",
        None,
    ),
    "calibration": (
        "Calibration",
        "the null check of SrDetection's variants and the calibration table (false-positive "
        "rates under nulls the testbed knows to be true)",
        None,
    ),
    "functional": (
        "Functional memorisation",
        "the counterfactual similarities of target and reference",
        "counterfactual",
    ),
    "scans": (
        "Leakage scans",
        "the near-duplicate scans of this benchmark (LessLeak's Table 2, sources, RQ3, RQ4)",
        "leakage.scans",
    ),
    "mutations": ("Mutations", "the mutation study's tables per model", "mutate.kinds"),
    "contamination": (
        "Contamination",
        "the dataset-level tests (a p-value per model), their calibration and power",
        "contamination",
    ),
    "watermark": ("Randomized publication", "the watermark rank-sum test of the published release", "watermark"),
}


def render_pages(
    samples: Sequence[dict],
    detection: Sequence[dict],
    seeds: Sequence[dict],
    null_check: Sequence[dict],
    perplexity: Sequence[dict],
    calibration_text: str,
    calibration_lines: Sequence[str],
    fragments: dict[str, Sequence[str]],
    blind: Sequence[dict] = (),
) -> dict[str, str]:
    """``report.md`` (a summary) and one page per family of ``FAMILIES``
    (file name ``<family>.md``): every section the aggregate writes is on
    exactly one page. ``fragments``: other stages' Markdown sections by family;
    ``blind``: the testbed's blind-baseline rows (on the detection page)."""
    unknown = sorted(set(fragments) - set(FAMILIES))
    if unknown:
        raise ValueError(f"report fragments of unknown families {unknown}; known: {', '.join(FAMILIES)}")
    sections = {
        "detection": [
            *headline_sections(detection, seeds),
            *blind_section(blind),
            *detection_sections(detection),
            *own_rule_sections(detection),
            *sensitivity_sections(seeds),
            "\n## Perplexity of the original samples\n",
            markdown_table(perplexity, ["model", "split", "n", "mean_ppl", "median_ppl"], digits=2),
        ],
        "calibration": [*null_check_section(null_check), calibration_text],
    }
    pages = {}
    for family, (title, holds, switch) in FAMILIES.items():
        body = [*sections.get(family, []), *fragments.get(family, [])]
        if not body:
            body = [f"\n_Nothing of this family in this run (`{switch}` is off or empty for this benchmark)._\n"]
        pages[family] = "\n".join(
            [
                f"# {title}\n",
                f"[Summary](report.md) · [Verdict](../../verdict.md). {holds[0].upper()}{holds[1:]}.\n",
                *body,
            ]
        )
    listing = markdown_table(
        [
            {
                "page": f"[{FAMILIES[f][0]}]({f}.md)",
                "what it holds": FAMILIES[f][1],
                "sections": pages[f].count("\n## "),
            }
            for f in FAMILIES
        ],
        ["page", "what it holds", "sections"],
    )
    summary = [
        "# leaktrace results\n",
        "The answer per model comes first on the run's [verdict page](../../verdict.md). This page is a summary; every "
        "table is on one of the family pages below, each beside this file.\n",
        sample_summary(samples),
        listing,
        *null_check_section(null_check),
        "\n## Calibration, in one line per null ([the table](calibration.md))\n\n" + "".join(calibration_lines),
        *headline_sections(detection, seeds),
    ]
    pages["report"] = "\n".join(summary)
    return pages
