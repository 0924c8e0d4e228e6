"""The aggregate plots, drawn with matplotlib's non-interactive backend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.metrics import roc_curve  # noqa: E402

LINE_STYLES = ("-", "--", ":")


def roc_plot(curves: Mapping[str, Mapping[str, tuple[np.ndarray, np.ndarray]]], path: Path, columns: int | None = None) -> None:
    """One panel per model (a grid ``columns`` wide: the epochs of one mixing
    ratio in a row); in each, a ROC curve per method from (labels, scores)."""
    models = list(curves)
    columns = min(columns or len(models), len(models))
    rows = -(-len(models) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 4.4 * rows), squeeze=False)
    for ax in axes.flat[len(models):]:
        ax.set_axis_off()
    for ax, model in zip(axes.flat, models, strict=False):
        for i, (method, (labels, scores)) in enumerate(curves[model].items()):
            if len(set(labels.tolist())) < 2:
                continue
            fpr, tpr, _ = roc_curve(labels, scores)
            ax.plot(fpr, tpr, label=method, lw=1.4, ls=LINE_STYLES[i // 10 % len(LINE_STYLES)])  # 10 colours per style
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
        ax.set(title=model, xlabel="false positive rate", ylabel="true positive rate", xlim=(0, 1), ylim=(0, 1))
        ax.legend(fontsize=6, loc="lower right", ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def delta_scatter(bleu_target: Sequence[float], delta: Sequence[float], groups: Sequence[str], path: Path, metric: str) -> None:
    """Target BLEU against the target-minus-reference delta: memorised samples
    sit top right (the target reproduces them, the reference does not)."""
    fig, ax = plt.subplots(figsize=(5, 4.2))
    x, y, g = np.asarray(bleu_target), np.asarray(delta), np.asarray(groups)
    for group, colour in (("member", "tab:red"), ("non-member", "tab:blue")):
        sel = g == group
        ax.scatter(x[sel], y[sel], s=14, alpha=0.7, color=colour, label=group)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel="BLEU (target)", ylabel=f"Δ {metric} (target − reference)", title="counterfactual generations")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def leakage_heatmap(rates: Sequence[Mapping], path: Path) -> None:
    """SrDetection Fig. 2: leakage rate per model (rows) and benchmark
    (columns), one panel per detector (gray-box, black-box)."""
    detectors = list(dict.fromkeys(r["detector"] for r in rates))
    models = list(dict.fromkeys(r["model"] for r in rates))
    benchmarks = list(dict.fromkeys(r["benchmark"] for r in rates))
    fig, axes = plt.subplots(1, len(detectors), figsize=(1.6 + 1.4 * len(benchmarks) * len(detectors), 1.2 + 0.5 * len(models)),
                             squeeze=False)
    for ax, detector in zip(axes[0], detectors, strict=True):
        grid = np.full((len(models), len(benchmarks)), np.nan)
        for r in rates:
            if r["detector"] == detector:
                grid[models.index(r["model"]), benchmarks.index(r["benchmark"])] = r["leakage_rate"]
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="Reds", aspect="auto")
        for (i, j), value in np.ndenumerate(grid):
            if not np.isnan(value):
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8, color="white" if value > 0.6 else "black")
        ax.set_xticks(range(len(benchmarks)), benchmarks, rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(len(models)), models, fontsize=8)
        ax.set_title(f"SrDetection {detector}", fontsize=9)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="leakage rate")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def p_value_curves(points: Sequence[Mapping], alpha: float, path: Path) -> None:
    """Dataset inference's p-value against the number of suspect samples, one
    line per model and validation set, log scale, with the level alpha."""
    fig, ax = plt.subplots(figsize=(6, 4.2))
    keys = list(dict.fromkeys((p["model"], p["validation"]) for p in points))
    for i, (model, validation) in enumerate(keys):
        sel = [p for p in points if (p["model"], p["validation"]) == (model, validation)]
        ax.plot([p["n"] for p in sel], [max(p["p_value"], 1e-300) for p in sel], marker="o", ms=3, lw=1.3,
                ls=LINE_STYLES[i // 10 % len(LINE_STYLES)], label=f"{model} ({validation})")
    ax.axhline(alpha, color="grey", lw=0.8, ls="--", label=f"α = {alpha}")
    ax.set(xlabel="suspect samples n", ylabel="p-value (dataset inference)", yscale="log", title="p-value vs number of samples")
    ax.legend(fontsize=6, loc="lower left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
