"""The report's section on detectors under their own decision rule: SrDetection
flags a sample where its original is easier than every variant (gray-box PPL_0
< min_i PPL_i, black-box NGO_0 > max_i NGO_i), and its paper's Tables 1-2 are
accuracy and macro precision / recall / F1 of that rule. The rest of the
report decides every method alike by a conformal p-value at alpha; this
section puts the two side by side, each named for what it is."""

from __future__ import annotations

from collections.abc import Sequence

from leaktrace.evaluate.detection import SUBSETS
from leaktrace.report.tables import markdown_table

COLUMNS = [
    "model",
    "method",
    "n eval",
    "own rule: accuracy",
    "macro precision",
    "macro recall",
    "macro F1 [95% CI]",
    "FPR",
    "conformal at α: macro F1 [95% CI]",
    "FPR at α",
]


def _interval(value: float | None, low: float | None, high: float | None) -> str:
    return "–" if value is None else f"{value:.3f} [{low:.3f}, {high:.3f}]"


def _figure(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def own_rule_sections(detection: Sequence[dict]) -> list[str]:
    """Per subset, one row per model and method that records its own decision."""
    parts = []
    for subset in SUBSETS:
        rows = [r for r in detection if r["subset"] == subset and r.get("own_rule_macro_f1") is not None]
        if not rows:
            continue
        alpha = rows[0]["alpha"]
        parts += [
            f"\n## Detectors under their own decision rule ({subset} subset)\n\n"
            "SrDetection's own rule (gray-box: flagged where PPL_0 < min_i PPL_i; black-box: NGO_0 > max_i NGO_i), which "
            "is how the SrDetection paper's Tables 1-2 decide: accuracy, macro precision, recall and F1 (averaged over "
            "members and non-members, the paper's F1-Macro) on the evaluation fold, with a 95% bootstrap interval "
            "(evaluation fold resampled within each class) and the share of non-members flagged (FPR). A learned "
            "classifier's row is its own threshold. Beside them, the same method's macro F1 and FPR under the conformal "
            f"decision at α = {alpha:g} that every other table uses. The own rule is not calibrated: its FPR is whatever "
            "the variants make it (under exchangeable variants 1/(n+1); the null check above measures it).\n",
            markdown_table(
                [
                    {
                        "model": r["model"],
                        "method": r["method"],
                        "n eval": f"{r['n_eval']} ({r['n_eval_non_members']})",
                        "own rule: accuracy": _figure(r["own_rule_accuracy"]),
                        "macro precision": _figure(r["own_rule_macro_precision"]),
                        "macro recall": _figure(r["own_rule_macro_recall"]),
                        "macro F1 [95% CI]": _interval(
                            r["own_rule_macro_f1"], r["own_rule_macro_f1_low"], r["own_rule_macro_f1_high"]
                        ),
                        "FPR": _figure(r["own_rule_fpr"]),
                        "conformal at α: macro F1 [95% CI]": _interval(
                            r["macro_f1"], r["macro_f1_low"], r["macro_f1_high"]
                        ),
                        "FPR at α": _figure(r["fpr"]),
                    }
                    for r in rows
                ],
                COLUMNS,
            ),
        ]
    return parts
