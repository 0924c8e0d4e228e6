"""Detection figures across training seeds: the testbed's LoRA seed moves a
detector's macro F1 about as much as its sampling interval, so each (mixing
ratio, epoch, subset, method) is summarised as mean ± sd over the seeds, the
per-seed figures staying in the detection table."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# own_rule_macro_f1: SrDetection's macro F1 under its own rule (None for a detector without one)
SUMMARISED = ("auc", "tpr_at_5fpr", "macro_f1", "own_rule_macro_f1")


def _mean_sd(values: list[float | None]) -> tuple[float | None, float | None]:
    """Mean and sample sd (ddof 1); None where a seed's value is missing
    (not estimable), and sd None for a single seed."""
    if any(v is None for v in values):
        return None, None
    array = np.array(values, dtype=float)
    return float(array.mean()), float(array.std(ddof=1)) if array.size > 1 else None


def across_seeds(detection: Sequence[dict]) -> list[dict]:
    """One row per (ratio, epoch, subset, method) of the target models, in the
    order the detection rows first name them; rows of a subset that could not
    be evaluated (``n_eval`` None) are left out."""
    groups: dict[tuple, list[dict]] = {}
    for row in detection:
        if row["seed"] is not None and row.get("n_eval") is not None:
            groups.setdefault((row["ratio"], row["epoch"], row["subset"], row["method"]), []).append(row)
    summary = []
    for (ratio, epoch, subset, method), rows in groups.items():
        seeds = [r["seed"] for r in rows]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"{method} at ratio {ratio}, epoch {epoch}, subset {subset}: seeds {seeds} repeat")
        if len({r["n_eval"] for r in rows}) != 1:
            raise ValueError(
                f"{method} at ratio {ratio}, epoch {epoch}, subset {subset}: evaluated on different "
                f"sample counts across seeds ({sorted(r['n_eval'] for r in rows)})"
            )
        out = {
            "ratio": ratio,
            "epoch": epoch,
            "subset": subset,
            "method": method,
            "family": rows[0]["family"],
            "oracle": rows[0]["oracle"],
            "n_seeds": len(rows),
            "n_eval": rows[0]["n_eval"],
        }
        for metric in SUMMARISED:
            # own_rule_macro_f1 may be absent from a row: the detector records no decision of its own
            out[f"{metric}_mean"], out[f"{metric}_sd"] = _mean_sd(
                [r.get(metric) if metric.startswith("own_rule") else r[metric] for r in rows]
            )
        summary.append(out)
    return summary
