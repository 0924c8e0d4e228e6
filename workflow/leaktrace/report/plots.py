"""The aggregate plots, drawn with matplotlib's non-interactive backend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.metrics import roc_curve  # noqa: E402


def roc_plot(curves: Mapping[str, Mapping[str, tuple[np.ndarray, np.ndarray]]], path: Path) -> None:
    """One panel per model; in each, a ROC curve per method from (labels, scores)."""
    models = list(curves)
    fig, axes = plt.subplots(1, len(models), figsize=(4.2 * len(models), 4.2), squeeze=False)
    for ax, model in zip(axes[0], models, strict=True):
        for method, (labels, scores) in curves[model].items():
            if len(set(labels.tolist())) < 2:
                continue
            fpr, tpr, _ = roc_curve(labels, scores)
            ax.plot(fpr, tpr, label=method, lw=1.4)
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
        ax.set(title=model, xlabel="false positive rate", ylabel="true positive rate", xlim=(0, 1), ylim=(0, 1))
        ax.legend(fontsize=7, loc="lower right")
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
