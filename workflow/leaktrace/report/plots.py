"""The aggregate plots, drawn with matplotlib's non-interactive backend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from sklearn.metrics import roc_curve  # noqa: E402

# ROC panels: detector families that answer the same question share a panel,
# so each panel has few enough curves for distinct colours. A family not
# listed here gets a panel of its own.
ROC_PANELS = {
    "token statistics": ("loss", "zlib", "lowercase", "min_k", "min_k_plus_plus", "dc_pdd"),
    "reference and perturbation": ("ref", "neighbor", "recall"),
    "SrDetection": ("srdetection_graybox", "srdetection_blackbox"),
}
LINE_STYLES = ("-", "--", "-.", ":")


def roc_panels(families: Mapping[str, str]) -> dict[str, list[str]]:
    """Panel title -> methods drawn in it, from {method: family}, in the
    order of ROC_PANELS, then unlisted families."""
    panel_of = {family: title for title, members in ROC_PANELS.items() for family in members}
    panels: dict[str, list[str]] = {title: [] for title in ROC_PANELS}
    for method, family in families.items():
        panels.setdefault(panel_of.get(family, family), []).append(method)
    return {title: methods for title, methods in panels.items() if methods}


def save(fig: Figure, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def roc_plot(
    curves: Mapping[str, tuple[np.ndarray, np.ndarray]], families: Mapping[str, str], path: Path, title: str
) -> None:
    save(roc_figure(curves, families, title), path)


def roc_figure(curves: Mapping[str, tuple[np.ndarray, np.ndarray]], families: Mapping[str, str], title: str) -> Figure:
    """ROC curves of one model, from {method: (labels, scores)}: a row per
    detector family, with a linear panel and a log-FPR panel (membership
    inference is compared at low FPR). The log axis starts at the smallest
    FPR the evaluation non-members can show, 1 / n."""
    panels = roc_panels({m: families[m] for m in curves})
    negatives = max([1] + [int((labels == 0).sum()) for labels, _ in curves.values()])  # one evaluation fold
    fig, axes = plt.subplots(max(1, len(panels)), 2, figsize=(10, 4 * max(1, len(panels))), squeeze=False)
    colours = plt.get_cmap("tab10").colors
    for (panel, methods), (linear, logarithmic) in zip(panels.items(), axes, strict=False):
        for i, method in enumerate(methods):
            labels, scores = curves[method]
            if len(set(labels.tolist())) < 2:
                continue
            fpr, tpr, _ = roc_curve(labels, scores)
            style = {
                "color": colours[i % len(colours)],
                "ls": LINE_STYLES[i % len(LINE_STYLES)],
                "lw": 1.5,
                "label": method,
            }
            linear.plot(fpr, tpr, **style)
            logarithmic.plot(np.maximum(fpr, 1 / negatives), tpr, **style)
        chance = np.linspace(0, 1, 200)
        linear.plot(chance, chance, color="grey", lw=0.8, ls=":")
        linear.set(title=panel, xlabel="false positive rate", ylabel="true positive rate", xlim=(0, 1), ylim=(0, 1))
        logarithmic.plot(np.maximum(chance, 1 / negatives), chance, color="grey", lw=0.8, ls=":")
        logarithmic.set_xscale("log")
        logarithmic.set(
            title=f"{panel} (log FPR)",
            xlabel="false positive rate (log)",
            ylabel="true positive rate",
            xlim=(1 / negatives, 1),
            ylim=(0, 1),
        )
        linear.legend(fontsize=8, loc="lower right")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def leakage_heatmap(rates: Sequence[Mapping], path: Path) -> None:
    save(heatmap_figure(rates), path)


def heatmap_figure(rates: Sequence[Mapping]) -> Figure:
    """SrDetection Fig. 2: leakage rate per model (rows) and benchmark
    (columns), one panel per detector (gray-box, black-box). The panels share
    the model axis, labelled once; the figure grows with the number of models
    and benchmarks and with the longest label, so labels never overlap."""
    detectors = list(dict.fromkeys(r["detector"] for r in rates))
    models = list(dict.fromkeys(r["model"] for r in rates))
    benchmarks = list(dict.fromkeys(r["benchmark"] for r in rates))
    label_inches = 0.07 * max(len(m) for m in models)  # about 0.07 in per character at 8 pt
    panel_width = max(1.6, 0.75 * len(benchmarks))
    fig, axes = plt.subplots(
        1,
        len(detectors),
        sharey=True,
        squeeze=False,
        layout="constrained",
        figsize=(
            label_inches + 1.4 + panel_width * len(detectors),
            1.6 + 0.07 * max(len(b) for b in benchmarks) + 0.32 * len(models),
        ),
    )
    for ax, detector in zip(axes[0], detectors, strict=True):
        grid = np.full((len(models), len(benchmarks)), np.nan)
        for r in rates:
            if r["detector"] == detector:
                grid[models.index(r["model"]), benchmarks.index(r["benchmark"])] = r["leakage_rate"]
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="Reds", aspect="auto")
        for (i, j), value in np.ndenumerate(grid):
            if not np.isnan(value):
                ax.text(
                    j,
                    i,
                    f"{value:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if value > 0.6 else "black",
                )
        ax.set_xticks(range(len(benchmarks)), benchmarks, rotation=90, fontsize=8)
        ax.set_title(f"SrDetection {detector}", fontsize=9)
    axes[0][0].set_yticks(range(len(models)), models, fontsize=8)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="leakage rate")
    return fig


def p_value_curves(points: Sequence[Mapping], alpha: float, path: Path) -> None:
    """Dataset inference's p-value against the number of suspect samples, one
    line per model and validation set, log scale, with the level alpha."""
    fig, ax = plt.subplots(figsize=(6, 4.2))
    keys = list(dict.fromkeys((p["model"], p["validation"]) for p in points))
    colours = plt.get_cmap("tab10").colors
    for i, (model, validation) in enumerate(keys):
        sel = [p for p in points if (p["model"], p["validation"]) == (model, validation)]
        ax.plot(
            [p["n"] for p in sel],
            [max(p["p_value"], 1e-300) for p in sel],
            marker="o",
            ms=3,
            lw=1.3,
            color=colours[i % len(colours)],
            ls=LINE_STYLES[i % len(LINE_STYLES)],
            label=f"{model} ({validation})",
        )
    ax.axhline(alpha, color="grey", lw=0.8, ls=":", label=f"α = {alpha}")
    ax.set(
        xlabel="suspect samples n",
        ylabel="p-value (dataset inference)",
        yscale="log",
        title="p-value vs number of samples",
    )
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    save(fig, path)


def twin_plot(rows: Sequence[Mapping], alpha: float, path: Path) -> None:
    save(twin_figure(rows, alpha), path)


def twin_figure(rows: Sequence[Mapping], alpha: float) -> Figure:
    """The complement twin per detector (rows) and epoch (markers): the
    pooled AUC (left) and the sign-flip p-value on
    a log axis with the level alpha (right); a filled marker is a rejection."""
    methods = list(dict.fromkeys(f"{r['method']} (oracle)" if r["oracle"] else r["method"] for r in rows))
    epochs = sorted({r["epoch"] for r in rows})
    fig, (auc_ax, p_ax) = plt.subplots(
        1, 2, sharey=True, figsize=(10, 1.2 + 0.3 * max(1, len(methods))), layout="constrained"
    )
    colours = plt.get_cmap("tab10").colors
    for k, epoch in enumerate(epochs):
        offset = (k - (len(epochs) - 1) / 2) * 0.22
        for r in (r for r in rows if r["epoch"] == epoch):
            y = methods.index(f"{r['method']} (oracle)" if r["oracle"] else r["method"]) + offset
            style = {
                "color": colours[k % len(colours)],
                "marker": "o",
                "ms": 4,
                "mfc": colours[k % len(colours)] if r["rejected"] else "white",
            }
            if r["auc_pooled"] is not None:
                auc_ax.plot(r["auc_pooled"], y, **style)
            p_ax.plot(max(r["p_value"], 1e-6), y, **style)
        p_ax.plot([], [], color=colours[k % len(colours)], marker="o", ls="", label=f"epoch {epoch}")
    auc_ax.axvline(0.5, color="grey", lw=0.8, ls=":")
    auc_ax.set(xlabel="pooled AUC (seen vs unseen model)", xlim=(0, 1))
    auc_ax.set_yticks(range(len(methods)), methods, fontsize=8)
    auc_ax.invert_yaxis()
    p_ax.axvline(alpha, color="grey", lw=0.8, ls=":")
    p_ax.set(xscale="log", xlabel=f"sign-flip p-value (filled: p ≤ α = {alpha})", xlim=(1e-6 / 2, 1.5))
    p_ax.legend(fontsize=8, loc="lower left")
    fig.suptitle("The complement twin: each sample under the model that saw it and the one that did not", fontsize=10)
    return fig
