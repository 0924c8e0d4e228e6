"""The functional-memorization paper's figures: Δ against the target's BLEU
per functional metric (Figure 2 / App. D.2), target against reference
similarity per metric (Figure 4), the Pearson correlations of all metrics
(App. D.3) and similarity and Δ by length (App. H, Figures 9-14). Agg PNGs
carry no timestamp, so the same tables give the same bytes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from leaktrace.evaluate.functional import ALL, LENGTH_BUCKETS, LENGTH_METRICS, SPLITS, TEXT_METRIC, label, metric_order
from leaktrace.report.plots import plt, save

SPLIT_COLOURS = {"member": "tab:red", "non-member": "tab:blue", None: "tab:grey"}


def _grid(n: int, width: float = 3.4, height: float = 3.0):
    columns = min(4, max(1, n))
    rows = max(1, math.ceil(n / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_axis_off()
    return fig, list(axes.flat[:n])


def _empty(path: Path, message: str) -> None:
    fig, ax = plt.subplots(figsize=(5, 2))
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=10)
    save(fig, path)


def _scatter_by_split(ax, frame: pd.DataFrame, x: str, y: str) -> None:
    """Points coloured by split (grey outside testbed mode), members on top."""
    for split in (None, *reversed(SPLITS)):
        sel = frame[frame["split"].isna()] if split is None else frame[frame["split"] == split]
        if len(sel):
            ax.scatter(
                sel[x], sel[y], s=10, alpha=0.6, color=SPLIT_COLOURS[split], label=split or "samples", linewidths=0
            )


def _r(x: pd.Series, y: pd.Series) -> str:
    known = x.notna() & y.notna()
    if known.sum() < 3 or x[known].nunique() < 2 or y[known].nunique() < 2:
        return "r = –"
    return f"r = {np.corrcoef(x[known], y[known])[0, 1]:.2f}"


def _title(ax, metric: str, sel: pd.DataFrame, x: str, y: str) -> None:
    """A panel's title: the metric, Pearson r of the plotted pair and the mean Δ."""
    mean = sel["delta"].mean()
    ax.set_title(
        f"{label(metric)}\n{_r(sel[x], sel[y])}, mean Δ = {'–' if pd.isna(mean) else f'{mean:+.3f}'}", fontsize=9
    )


def delta_vs_bleu(sim: pd.DataFrame, metrics: list[str], tau_text: float, path: Path) -> None:
    """Figure 2: per functional metric, Δ (target − reference) against the
    target's BLEU; the upper-left quadrant (BLEU < τ_text, Δ > 0) holds the
    functionally, not textually, memorized samples."""
    bleu = sim[sim["metric"] == TEXT_METRIC].set_index("sample_id")["target"]
    if not metrics or bleu.empty:
        _empty(path, "no functional similarity metric in this run")
        return
    fig, axes = _grid(len(metrics))
    for ax, metric in zip(axes, metrics, strict=True):
        sel = sim[sim["metric"] == metric].assign(bleu=lambda d: d["sample_id"].map(bleu))
        _scatter_by_split(ax, sel, "bleu", "delta")
        ax.axhline(0, color="grey", lw=0.8)
        ax.axvline(tau_text, color="grey", lw=0.8, ls=":")
        ax.set(xlim=(-0.02, 1.02), ylim=(-1.05, 1.05), xlabel="BLEU (target)", ylabel="Δ (target − reference)")
        _title(ax, metric, sel, "bleu", "delta")
    axes[0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    save(fig, path)


def target_vs_reference(sim: pd.DataFrame, metrics: list[str], path: Path) -> None:
    """Figure 4: per metric, the target's similarity against the reference's;
    points above the diagonal are closer to the ground truth under the target."""
    if not metrics:
        _empty(path, "no similarity metric in this run")
        return
    fig, axes = _grid(len(metrics))
    diagonal = np.linspace(0, 1, 2)
    for ax, metric in zip(axes, metrics, strict=True):
        sel = sim[sim["metric"] == metric]
        _scatter_by_split(ax, sel, "reference", "target")
        ax.plot(diagonal, diagonal, color="grey", lw=0.8, ls=":")
        ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), xlabel="SIM (reference)", ylabel="SIM (target)")
        _title(ax, metric, sel, "reference", "target")
    axes[0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    save(fig, path)


def correlation_heatmap(matrix: pd.DataFrame, path: Path, title: str) -> None:
    """App. D.3: Pearson r between every two metrics, annotated; blank where
    a metric is constant or too few samples have both."""
    if matrix.empty:
        _empty(path, "no similarity metric in this run")
        return
    names = [label(m) for m in matrix.columns]
    size = 1.2 + 0.55 * len(names)
    margin = 0.07 * max(map(len, names))  # room for the longest label, rotated below and beside
    fig, ax = plt.subplots(figsize=(size + 1.5 + margin, size + margin))
    values = matrix.to_numpy(dtype=float)
    image = ax.imshow(values, vmin=-1, vmax=1, cmap="RdBu_r")
    for (i, j), value in np.ndenumerate(values):
        if not np.isnan(value):
            ax.text(
                j,
                i,
                f"{value:.2f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if abs(value) > 0.6 else "black",
            )
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=ax, shrink=0.8, label="Pearson r")
    fig.tight_layout()
    save(fig, path)


LENGTH_TITLES = {
    "signature_chars": "signature (characters)",
    "context_chars": "preceding context (characters)",
    "body_lines": "ground-truth body (lines)",
}
SIDE_STYLES = (("target", "tab:red", "target"), ("reference", "tab:green", "reference"), ("delta", "black", "Δ"))


def length_panels(rows: list[dict], path: Path) -> None:
    """App. H (Figures 9-14 in one): a row of panels per length kind, a panel
    per metric (the paper's four where present, else the first four), each
    bucket's mean target, reference and Δ with ±1 std error bars; the title
    carries Pearson r of the length with Δ."""
    present = {r["metric"] for r in rows}
    metrics = [m for m in LENGTH_METRICS if m in present] or metric_order(present)[:4]
    kinds = [kind for kind in LENGTH_BUCKETS if any(r["length"] == kind for r in rows)]
    if not metrics or not kinds:
        _empty(path, "no length to group by in this run")
        return
    fig, axes = plt.subplots(len(kinds), len(metrics), figsize=(3.4 * len(metrics), 2.9 * len(kinds)), squeeze=False)
    for row_axes, kind in zip(axes, kinds, strict=True):
        buckets = [name for name, _, _ in LENGTH_BUCKETS[kind]]
        for ax, metric in zip(row_axes, metrics, strict=True):
            chosen = {r["bucket"]: r for r in rows if r["length"] == kind and r["metric"] == metric}
            shown = [b for b in buckets if b in chosen]
            for offset, (side, colour, name) in zip((-0.2, 0.0, 0.2), SIDE_STYLES, strict=True):
                xs = [buckets.index(b) + offset for b in shown]
                ax.errorbar(
                    xs,
                    [chosen[b][f"{side}_mean"] for b in shown],
                    yerr=[chosen[b][f"{side}_std"] or 0.0 for b in shown],
                    fmt="o",
                    color=colour,
                    ms=4,
                    capsize=2,
                    lw=1,
                    label=name,
                )
            ax.axhline(0, color="grey", lw=0.8)
            ax.set_xticks(
                range(len(buckets)), [f"{b}\nn={chosen[b]['n']}" if b in chosen else b for b in buckets], fontsize=7
            )
            ax.set(ylim=(-1.05, 1.05), xlim=(-0.6, len(buckets) - 0.4))
            r = chosen.get(ALL, {}).get("r_delta")
            ax.set_title(
                f"{label(metric)} by {LENGTH_TITLES[kind]}\nr(length, Δ) = {'–' if r is None else f'{r:.2f}'}",
                fontsize=8,
            )
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    save(fig, path)
