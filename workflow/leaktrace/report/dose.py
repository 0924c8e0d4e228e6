"""The exposure-dose table as the report shows it: a Markdown section (one
row per test, one column per dose) and a figure of each test's detection
rate against the dose. The numbers come from evaluate/dose.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from leaktrace.evaluate.dose import (  # noqa: E402
    DATASET_INFERENCE,
    EXCHANGEABILITY,
    PER_SAMPLE,
    TESTS,
    TWIN,
    WATERMARK,
)
from leaktrace.report.plots import save  # noqa: E402
from leaktrace.report.tables import markdown_table  # noqa: E402
from leaktrace.settings.dose import DoseLevels  # noqa: E402


def dose_label(copies: int, epochs: int) -> str:
    return f"k={copies}" if epochs == 1 else f"k={copies}, {epochs} epochs"


def _doses(rows: Sequence[Mapping]) -> list[tuple[int, int]]:
    return sorted({(r["copies"], r["epochs"]) for r in rows}, key=lambda d: (d[1] > 1, d[0], d[1]))


def _num(value, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _p(value) -> str:
    return "–" if value is None else f"{value:.2g}"


def _cell(row: Mapping) -> str:
    """A dose's cell: seeds detected (p <= alpha) / seeds tested, the median p;
    for a per-sample detector its TPR [CI] and mean AUC first."""
    if row["n_tested"] == 0:
        return "not testable"
    share = f"{row['n_detected']}/{row['n_tested']}, p̃ {_p(row['median_p'])}"
    if row["test"] != PER_SAMPLE:
        return share
    return (
        f"TPR {_num(row['tpr_mean'])} [{_num(row['tpr_ci_low'])}, {_num(row['tpr_ci_high'])}]"
        f" · AUC {_num(row['auc_mean'])} · {share}"
    )


def render_section(rows: Sequence[Mapping], settings: DoseLevels, blind: Mapping | None) -> str:
    """The report's section: a table of every test against every dose."""
    doses = _doses(rows)
    by_key = {(r["test"], r["method"], r["copies"], r["epochs"]): r for r in rows}
    tests = sorted({(r["test"], r["method"]) for r in rows}, key=lambda t: (TESTS.index(t[0]), t[1]))
    columns = ["test", "method", *[dose_label(*d) for d in doses], "smallest k"]
    table = []
    for test, method in tests:
        line = {"test": test, "method": method}
        for d in doses:
            row = by_key.get((test, method, *d))
            line[dose_label(*d)] = _cell(row) if row else "–"
        smallest = next(r["smallest_copies"] for r in rows if (r["test"], r["method"]) == (test, method))
        line["smallest k"] = "none" if smallest is None else str(smallest)
        table.append(line)
    if blind and blind.get("auc") is not None:
        baseline = (
            f"The blind baseline (a text-only classifier of members against non-members, no model) on this split: "
            f"AUC {blind['auc']:.3f} [{blind['ci_low']:.3f}, {blind['ci_high']:.3f}], p = {_p(blind['p_value'])}; "
            "a detector's AUC is read against it, not against 0.5."
        )
    else:
        baseline = "The blind baseline's testbed row was not available to this run: its columns are empty."
    return (
        "## Exposure dose: the smallest exposure each test detects\n\n"
        "Each member inserted k times into the same training mix (the general text drawn for one copy), trained for one "
        "pass, per training seed; the last column's dose is the default's setting (one copy, every epoch) where shown. "
        f"A test detects at a seed when p ≤ α = {settings.alpha}. A cell reads seeds detected / seeds tested and the "
        f"median p (p̃); for a per-sample detector first its TPR at {settings.fpr:g} FPR with a Wilson interval over "
        "the members of every seed, and its mean AUC; its p is the one-sided Mann-Whitney test of members above "
        f'non-members. "smallest k": the smallest one-pass dose detected in at least {settings.power:.0%} of the '
        "seeds (none: no dose reached it). Every test is valid by design: the split is a seeded random draw, the twin's "
        "null is that split, the watermark's forms and the exchangeability test's order were published at random. "
        f'{baseline} A "no evidence" verdict of an audit can cite this table: at this sample size, the tests that ran '
        'detect, on the testbed, exposure of at least the dose in their "smallest k" column (not less).\n\n'
        + markdown_table(table, columns)
    )


def dose_plot(rows: Sequence[Mapping], alpha: float, path: Path) -> None:
    save(dose_figure(rows, alpha), path)


def dose_figure(rows: Sequence[Mapping], alpha: float) -> Figure:
    """Left: each per-sample detector's mean TPR against the dose (one colour
    per detector). Right: each test's share of seeds with p <= alpha: the
    twin's sign-flip test per detector in that detector's colour, the
    dataset-level tests in black. The top row (more than one epoch) sits at
    the far right."""
    doses = _doses(rows)
    x = {d: i for i, d in enumerate(doses)}
    fig, (tpr_ax, rate_ax) = plt.subplots(1, 2, figsize=(13, 4.8), layout="constrained")
    palette = plt.get_cmap("tab20").colors
    methods = sorted({r["method"] for r in rows if r["test"] == PER_SAMPLE or r["test"] == TWIN})
    colour = {m: palette[n % len(palette)] for n, m in enumerate(methods)}
    black = {DATASET_INFERENCE: ("-", "s"), WATERMARK: ("--", "^"), EXCHANGEABILITY: (":", "D")}

    def points(own: list[Mapping], key: str) -> list[tuple[int, float]]:
        return [(x[(r["copies"], r["epochs"])], r[key]) for r in own if r[key] is not None]

    series = sorted({(r["test"], r["method"]) for r in rows}, key=lambda t: (TESTS.index(t[0]), t[1]))
    for test, method in series:
        own = sorted(
            (r for r in rows if (r["test"], r["method"]) == (test, method)), key=lambda r: x[(r["copies"], r["epochs"])]
        )
        if test == PER_SAMPLE and points(own, "tpr_mean"):
            tpr_ax.plot(
                *zip(*points(own, "tpr_mean"), strict=True), color=colour[method], marker="o", ms=3, lw=1, label=method
            )
        elif test == TWIN and points(own, "detection_rate"):
            rate_ax.plot(
                *zip(*points(own, "detection_rate"), strict=True),
                color=colour[method],
                marker="o",
                ms=3,
                lw=0.8,
                alpha=0.7,
                label=f"twin sign-flip ({method})",
            )
        elif test in black and points(own, "detection_rate"):
            ls, marker = black[test]
            rate_ax.plot(
                *zip(*points(own, "detection_rate"), strict=True),
                color="black",
                ls=ls,
                marker=marker,
                ms=5,
                lw=1.5,
                label=test,
            )
    labels = [dose_label(*d) for d in doses]
    for ax in (tpr_ax, rate_ax):
        ax.set_xticks(range(len(doses)), labels, rotation=30, fontsize=8)
        ax.set(ylim=(-0.03, 1.03), xlabel="copies of each member in the mix (one pass unless stated)")
        if ax.has_data():
            ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    tpr_ax.set(ylabel="mean TPR at the table's FPR", title="Per-sample detectors")
    rate_ax.set(
        ylabel=f"share of seeds with p ≤ {alpha}", title="Dataset-level tests (black) and the twin's, per detector"
    )
    fig.suptitle("Exposure dose: how often each test detects k copies of the members", fontsize=10)
    return fig
