"""The robustness study's figures (CodeSnitch Sec. 5): a method x condition
AUC heat map per setting, and the AUC drop from T2a to T2b (Fig. 3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from leaktrace.report.plots import plt, save

SETTING_TITLES = {
    "setting1": "Setting 1\nmembers mutated",
    "setting2": "Setting 2\nclone-type aware",
    "setting3": "Setting 3\nboth sides mutated",
}


def setting_heatmaps(rows: Sequence[Mapping], path: Path) -> None:
    """One panel per setting: AUC of each method (rows) under each condition
    (columns), 0.5 white, so a drop towards chance reads as a fading colour.
    Panels share the method axis, labelled once."""
    settings = [s for s in SETTING_TITLES if any(r["analysis"] == s for r in rows)]
    methods = sorted({r["method"] for r in rows if r["analysis"] in settings})
    if not settings or not methods:
        raise ValueError("the study has no Setting 1-3 rows to draw")
    conditions = {s: list(dict.fromkeys(r["condition"] for r in rows if r["analysis"] == s)) for s in settings}
    widths = [max(1.5, 0.55 * len(conditions[s])) for s in settings]
    label_inches = 0.07 * max(len(m) for m in methods)
    fig, axes = plt.subplots(
        1,
        len(settings),
        sharey=True,
        squeeze=False,
        layout="constrained",
        gridspec_kw={"width_ratios": widths},
        figsize=(label_inches + 1.6 + sum(widths), 2.2 + 0.3 * len(methods)),
    )
    for ax, setting in zip(axes[0], settings, strict=True):
        columns = conditions[setting]
        grid = np.full((len(methods), len(columns)), np.nan)
        for r in rows:
            if r["analysis"] == setting and r["auc"] is not None:
                grid[methods.index(r["method"]), columns.index(r["condition"])] = r["auc"]
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="RdBu_r", aspect="auto")
        for (i, j), value in np.ndenumerate(grid):
            if not np.isnan(value):
                ax.text(
                    j,
                    i,
                    f"{value:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if abs(value - 0.5) > 0.3 else "black",
                )
        ax.set_xticks(range(len(columns)), columns, rotation=90, fontsize=8)
        ax.set_title(SETTING_TITLES[setting], fontsize=9)
    axes[0][0].set_yticks(range(len(methods)), methods, fontsize=8)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="AUC")
    save(fig, path)


def t2_drop_plot(drops: Sequence[Mapping], path: Path) -> None:
    """CodeSnitch Fig. 3: per method, Setting 1's AUC under T2a and under T2b."""
    methods = [d["method"] for d in drops]
    x = np.arange(len(methods))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(methods) + 1.5), 3.8))
    ax.bar(x - 0.2, [d["auc_t2a"] for d in drops], width=0.4, color="tab:blue", label="T2a (synonyms)")
    ax.bar(x + 0.2, [d["auc_t2b"] for d in drops], width=0.4, color="tab:orange", label="T2b (random names)")
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_xticks(x, methods, rotation=45, ha="right", fontsize=8)
    ax.set(ylabel="AUC (Setting 1)", ylim=(0, 1), title="AUC drop from T2a to T2b")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, path)
