"""The calibration table's section of the aggregate report: per null, how
often each method's decision at alpha fires where the testbed knows nothing
should, and whether that is consistent with alpha. A row that does not hold
is named above its table, and exchangeability's rejections on the real
order come with the condition under which that test is valid."""

from __future__ import annotations

from collections.abc import Sequence

from leaktrace.calibration.table import AVERAGE_MARGIN, CALIBRATION_FOLD, REAL_ORDER, REMEMBERSHIP, REPARTITIONED
from leaktrace.report.tables import markdown_table

NULL_TEXT = {
    CALIBRATION_FOLD: "conformal decisions as users get them: control set the calibration fold's non-members, tested "
                      "the evaluation fold's non-members; a count over those samples",
    REPARTITIONED: "the conformal guarantee, on average over the draw of the control set: random re-partitions of "
                   "all non-members into control and evaluation parts of the split's sizes, every label-dependent fit "
                   "(DPDLLM's and VeilProbe's cross-fits) refitted in each; the mean false-positive rate over "
                   f"partitions, which holds at or below α + {AVERAGE_MARGIN}",
    REMEMBERSHIP: "dataset inference on random member / non-member assignments (within each fold, the split's class "
                  "sizes), the learned features refitted on each, under models that never saw the split",
    REAL_ORDER: "the sharded exchangeability test on the benchmark's own order under models that never saw it",
}  # in the report's order; another family's null follows, described by its rows' note


def _interval(row: dict) -> str:
    return f"{row['rate']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"


def _failures(rows: Sequence[dict]) -> str:
    failed = [r for r in rows if not r["holds"]]
    if not failed:
        return "Every row holds.\n\n"
    listed = "; ".join(f"{r['method']} under {r['model']} at α = {r['alpha']:g} ({_interval(r)})" for r in failed)
    return f"**Does not hold** ({len(failed)} of {len(rows)} rows): {listed}.\n\n"


def _real_order(rows: Sequence[dict]) -> str:
    rejecting = sorted({r["model"] for r in rows if r["rejections"]})
    if not rejecting:
        return ""
    return (f"Exchangeability rejects the benchmark's real order under {', '.join(rejecting)}, which never saw it: "
            "the test is valid only for a benchmark whose order was randomised at release, and this benchmark's order "
            "carries structure a model can prefer without having seen it (e.g. related problems next to each other). "
            "Its p-values on this benchmark are not evidence of contamination.\n\n")


def calibration_section(rows: Sequence[dict]) -> str:
    parts = ["\n## Calibration: false-positive rates under nulls the testbed knows to be true\n\n"
             "`calibration.parquet`, one row per (method, model, null, α): `n` null draws (a count) or partitions "
             "(an average), the rate of decisions at α among them with its 95% interval (Clopper-Pearson for a count, "
             "normal over partitions for an average), and `holds`: for a count, the interval reaches down to α; for "
             f"an average, the rate is at most α + {AVERAGE_MARGIN}. `ks_d`, `ks_p`: a KS test of the null p-values "
             "(ties broken at random) against U(0, 1); where they pool re-partitions of one set of samples they "
             "are dependent, and `ks_p` is a guide.\n"]
    if not rows:
        return parts[0] + "\n_(no calibration rows)_\n"
    order = [*NULL_TEXT, *sorted({r["null"] for r in rows} - set(NULL_TEXT))]
    for null in [n for n in order if any(r["null"] == n for r in rows)]:
        chosen = [r for r in rows if r["null"] == null]
        table = [{**r, "rate [95% CI]": _interval(r), "rejections": "–" if r["rejections"] is None else r["rejections"]}
                 for r in chosen]
        parts += [f"\n### Null: {null}\n\n{NULL_TEXT.get(null, chosen[0].get('note') or '')}.\n\n",
                  _failures(chosen), _real_order(chosen) if null == REAL_ORDER else "",
                  markdown_table(table, ["method", "model", "alpha", "n", "rejections", "rate [95% CI]", "holds", "ks_d", "ks_p"])]
    return "".join(parts)
