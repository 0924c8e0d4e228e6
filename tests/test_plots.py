"""The figures people read: ROC panels by detector family with distinct
styles and a log-FPR axis; heat-map labels that never overlap."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pytest

from leaktrace.detect.registry import is_sensitivity_instance
from leaktrace.report.plots import heatmap_figure, roc_figure, roc_panels

FAMILIES = {
    "loss": "loss",
    "zlib": "zlib",
    "min_k_20": "min_k",
    "min_k_pp_20": "min_k_plus_plus",
    "ref": "ref",
    "ref_oracle (oracle)": "ref",
    "recall": "recall",
    "srdetection_graybox": "srdetection_graybox",
    "srdetection_blackbox": "srdetection_blackbox",
    "new_baseline": "new_family",
}


def test_roc_panels_group_families_and_give_an_unknown_family_its_own_panel():
    panels = roc_panels(FAMILIES)
    assert list(panels) == ["token statistics", "reference and perturbation", "SrDetection", "new_family"]
    assert panels["reference and perturbation"] == ["ref", "ref_oracle (oracle)", "recall"]
    assert sorted(itertools.chain(*panels.values())) == sorted(FAMILIES)


def test_sensitivity_instances_are_recognised_by_their_family():
    assert is_sensitivity_instance("srdetection_graybox_n3", "srdetection_graybox")
    assert not is_sensitivity_instance("srdetection_graybox", "srdetection_graybox")
    assert not is_sensitivity_instance("min_k_20", "min_k")


def test_roc_figure_has_a_log_fpr_panel_per_family_and_distinct_styles():
    rng = np.random.default_rng(0)
    labels = np.array([1] * 20 + [0] * 20)
    curves = {m: (labels, labels + rng.normal(size=40)) for m in FAMILIES}
    fig = roc_figure(curves, FAMILIES, "a model")
    axes = np.array(fig.axes).reshape(-1, 2)
    assert len(axes) == 4
    for linear, logarithmic in axes:
        assert linear.get_xscale() == "linear" and logarithmic.get_xscale() == "log"
        assert logarithmic.get_xlim()[0] == pytest.approx(1 / 20)  # one false positive among 20 non-members
        drawn = [line for line in linear.get_lines() if line.get_label() in FAMILIES]
        styles = {(line.get_color(), line.get_linestyle()) for line in drawn}
        assert len(styles) == len(drawn)
    plt.close(fig)


@pytest.mark.parametrize("n_models", [2, 25])
def test_heatmap_labels_never_overlap(n_models):
    models = [f"org/a-model-with-a-long-name-{i}-instruct" for i in range(n_models)]
    benchmarks = ["humaneval", "mbpp", "apps-introductory", "ds-1000"]
    rates = [
        {"detector": d, "model": m, "benchmark": b, "leakage_rate": 0.5}
        for d in ("gray-box", "black-box")
        for m in models
        for b in benchmarks
    ]
    fig = heatmap_figure(rates)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    first, second = fig.axes[:2]
    model_labels = [t.get_window_extent(renderer) for t in first.get_yticklabels() if t.get_text()]
    assert len(model_labels) == n_models
    assert not any(t.get_text() for t in second.get_yticklabels() if t.get_visible())  # labelled once
    for a, b in itertools.pairwise(model_labels):
        assert not a.overlaps(b)
    for box in model_labels:
        assert not box.overlaps(second.get_window_extent(renderer)) and box.x0 >= 0
    for ax in fig.axes[:2]:
        ticks = [t.get_window_extent(renderer) for t in ax.get_xticklabels()]
        assert not any(a.overlaps(b) for a, b in itertools.combinations(ticks, 2))
    plt.close(fig)
