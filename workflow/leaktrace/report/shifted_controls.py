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
    "reference_contrast": "false-positive rate (gated where the blind baseline rejects)",
}


def render(summary: Sequence[dict], alpha: float, draws: int, n_suspect: int, n_control: int) -> str:
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
        "(shifted: the controls' docstrings removed; reversed: the suspects'), and against the same control problems "
        "as released (unshifted): every rejection but the blind baseline's is a false positive. Draws share one pool "
        "of problems, so the intervals are optimistic.\n\n"
        + markdown_table(rows, ["condition", "test", "reads as", "rate [95% CI]", "counted as evidence after the gate"])
    )
