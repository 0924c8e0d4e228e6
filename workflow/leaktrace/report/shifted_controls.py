"""The shifted-control experiment's Markdown table
(:mod:`leaktrace.calibration.shifted_controls`): per condition and test, the
rejection rate over draws of a never-exposed model's audit, and the share
the gate leaves counted as evidence."""

from __future__ import annotations

from collections.abc import Sequence

from leaktrace.report.tables import markdown_table

READING = {
    "blind_baseline": "detection rate of the shift",
    "dataset_inference": "false-positive rate (naive)",
    "conformal_flags": "false-positive rate (naive; every detector's draws pooled)",
    "leakage_rate": "false-positive rate (naive)",
    "reference_contrast": "false-positive rate (gated where the blind baseline or the negative control rejects)",
}


def render(
    summary: Sequence[dict], page: Sequence[dict], alpha: float, draws: int, n_suspect: int, n_control: int
) -> str:
    rows = [
        r
        | {
            "reads as": READING.get(r["test"], ""),
            "rate [95% CI]": f"{r['n_rejected']}/{r['n_draws']} = {r['rate']:.2f} [{r['rate_low']:.2f}, {r['rate_high']:.2f}]",
            "counted as evidence after the gate": "–"
            if r["test"] == "blind_baseline"
            else f"{r['n_counted']}/{r['n_draws']} = {r['counted_rate']:.2f}",
        }
        for r in summary
    ]
    return (
        f"## Shifted controls: {draws} draws of {n_suspect} suspects and {n_control} controls, α = {alpha:g}\n\n"
        "A never-exposed model audited against controls that differ from the suspects by a known shift "
        "(shifted: the controls' docstrings removed; reversed: the suspects'), against the same control problems "
        "as released (unshifted), and against controls chosen with no text changed: drawn with weight exp(z) of a "
        "problem's standardised loss under the audited model (loss-target) or an independent never-exposed model "
        "(loss-reference), the hardest problems under the audited model (hardest-target), or the upper half of the "
        "problem ids against suspects from the lower half (id-split). Every rejection but the blind baseline's is a "
        "false positive. The reference is declared a negative control, so both gates close as in an audit. Draws "
        "share one pool of problems, so the intervals are optimistic.\n\n"
        "### What the verdict page answers\n\n"
        "Per draw, the page's answer for the audited model by the page's own rule (report/verdict.py). \"Evidence "
        "of exposure\" can come only from a design test, and no test of an audit against a user's control set is "
        "one, so its rate is 0 by construction; the observational findings are the measured weakness of comparing "
        "with controls a user chose.\n\n"
        + markdown_table(
            [
                r
                | {
                    "share [95% CI]": f"{r['n_answered']}/{r['n_draws']} = {r['rate']:.2f} [{r['rate_low']:.2f}, {r['rate_high']:.2f}]"
                }
                for r in page
            ],
            ["condition", "answer", "share [95% CI]"],
        )
        + "\n### Every test's rejections\n\n"
        + markdown_table(rows, ["condition", "test", "reads as", "rate [95% CI]", "counted as evidence after the gate"])
    )
