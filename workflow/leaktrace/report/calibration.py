"""The calibration table's section of the aggregate report: per null, how
often each method's decision at alpha fires where the testbed knows nothing
should, and whether that is consistent with alpha (each row's rule from
``calibration.validity_rules``). A row that does not hold is named above its
table, a row that cannot be judged is counted there, and exchangeability's
rejections on the real order come with the condition under which that test
is valid."""

from __future__ import annotations

from collections.abc import Sequence

from leaktrace.calibration.table import CALIBRATION_FOLD, POOLED_UNEXPOSED, REAL_ORDER, REMEMBERSHIP, REPARTITIONED
from leaktrace.calibration.validity_rules import LEVEL
from leaktrace.report.tables import markdown_table

NULL_TEXT = {
    CALIBRATION_FOLD: "conformal decisions as users get them: control set the calibration fold's non-members, tested "
    "the evaluation fold's non-members; a count over those samples, which share one control set, so "
    "it is judged by its beta-binomial distribution (the false-positive rate given the controls is "
    "Beta(k, m + 1 − k), k = ⌊α(m + 1)⌋), not as independent flags",
    REPARTITIONED: "the conformal guarantee, on average over the draw of the control set: random re-partitions of "
    "all non-members into control and evaluation parts of the split's sizes, every label-dependent fit "
    "(DPDLLM's and VeilProbe's cross-fits) refitted in each; the mean false-positive rate over "
    "partitions, judged against its exact expectation over partitions (`expected_rate`, at most α; α "
    "itself for a refitted detector) with its Monte Carlo error (a one-sided t test)",
    REMEMBERSHIP: "dataset inference on random member / non-member assignments (within each fold, the split's class "
    "sizes), the learned features refitted on each, under models that never saw the split",
    REAL_ORDER: "the sharded exchangeability test on the benchmark's own order under models that never saw it; one "
    f"model's row is a single draw and is not judged, the `{POOLED_UNEXPOSED}` row is, by Bonferroni over "
    "the models' p-values (one order, so they are dependent)",
}  # in the report's order; another family's null follows, described by its rows' note


def _interval(row: dict) -> str:
    return f"{row['rate']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"


def _failures(rows: Sequence[dict]) -> str:
    failed = [r for r in rows if r["holds"] is False]
    unjudged = sum(r["holds"] is None for r in rows)
    aside = f"; {unjudged} of {len(rows)} rows cannot be judged (one draw each)" if unjudged else ""
    if not failed:
        return f"Every row that can be judged holds{aside}.\n\n"
    listed = "; ".join(
        f"{r['method']} under {r['model']} at α = {r['alpha']:g} ({_interval(r)}, p = {r['holds_p']:.2g})"
        for r in failed
    )
    return f"**Does not hold** ({len(failed)} of {len(rows)} rows{aside}): {listed}.\n\n"


def _real_order(rows: Sequence[dict]) -> str:
    rejecting = sorted({r["model"] for r in rows if r["rejections"] and r["model"] != POOLED_UNEXPOSED})
    if not rejecting:
        return ""
    pooled = [r for r in rows if r["model"] == POOLED_UNEXPOSED and r.get("holds_p") is not None]
    if pooled and all(r["holds"] for r in pooled):
        return (
            f"Exchangeability rejects the benchmark's real order at some α under {', '.join(rejecting)}, which never "
            f"saw it; pooled over the unexposed models (Bonferroni, p = {pooled[0]['holds_p']:.3g}) that is within "
            "chance, so structure in the order is not established either way. The test is valid only for a "
            "benchmark whose order was randomised at release; without that, its p-values on this benchmark are "
            "not evidence of contamination.\n\n"
        )
    return (
        f"Exchangeability rejects the benchmark's real order under {', '.join(rejecting)}, which never saw it: "
        "the test is valid only for a benchmark whose order was randomised at release, and this benchmark's order "
        "carries structure a model can prefer without having seen it (e.g. related problems next to each other). "
        "Its p-values on this benchmark are not evidence of contamination.\n\n"
    )


def calibration_section(rows: Sequence[dict]) -> str:
    parts = [
        (
            "\n## Calibration: false-positive rates under nulls the testbed knows to be true\n\n"
            "`calibration.parquet`, one row per (method, model, null, α; α from calibration.alphas, the random "
            "publication's from watermark.alphas): `n` null draws (a count) or partitions "
            "(an average), the rate of decisions at α among them with its 95% interval (Clopper-Pearson for a count, "
            "normal over partitions for an average), and `holds`: whether the row's `rule` finds the rate consistent "
            f"with `expected_rate` at level {LEVEL} (one-sided), a test chosen for how the row's draws depend on each "
            "other, whose false-alarm rate under exact exchangeability is at most that level: `binomial` for "
            "independent draws (the Clopper-Pearson interval reaches down to α), `beta-binomial` for flags sharing "
            "one control set, `mean vs expectation` for re-partitions (with the mean's Monte Carlo error), "
            "`Bonferroni over models` for models scoring one data set; empty where a row is one draw. `holds_p`: "
            "the rule's p-value. `ks_d`, `ks_p`: a KS test of null p-values against U(0, 1), only where the draws "
            "are independent given the data (not for conformal p-values, which share a control set or a pool).\n"
        )
    ]
    if not rows:
        return parts[0] + "\n_(no calibration rows)_\n"
    order = [*NULL_TEXT, *sorted({r["null"] for r in rows} - set(NULL_TEXT))]
    for null in [n for n in order if any(r["null"] == n for r in rows)]:
        chosen = [r for r in rows if r["null"] == null]
        table = [
            {
                **r,
                "rate [95% CI]": _interval(r),
                "rejections": "–" if r["rejections"] is None else r["rejections"],
                "holds": "–" if r["holds"] is None else r["holds"],
            }
            for r in chosen
        ]
        columns = ["method", "model", "alpha", "n", "rejections", "rate [95% CI]", "expected_rate", "holds", "holds_p"]
        ks = ["ks_d", "ks_p"] if any(r.get("ks_p") is not None for r in chosen) else []
        parts += [
            f"\n### Null: {null}\n\n{NULL_TEXT.get(null, chosen[0].get('note') or '')}.\n\n",
            _failures(chosen),
            _real_order(chosen) if null == REAL_ORDER else "",
            markdown_table(table, columns + ks),
        ]
    return "".join(parts)


def calibration_lines(rows: Sequence[dict]) -> list[str]:
    """One line per null for the summary: whether its rows hold, and which do not."""
    if not rows:
        return ["_(no calibration rows)_\n"]
    order = [*NULL_TEXT, *sorted({r["null"] for r in rows} - set(NULL_TEXT))]
    return [
        f"- **{null}**: {_failures([r for r in rows if r['null'] == null]).strip()}\n"
        for null in order
        if any(r["null"] == null for r in rows)
    ]
