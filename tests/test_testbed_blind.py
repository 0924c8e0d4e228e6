"""Every detector beside the blind baseline on the
testbed. The blind baseline (a text-only classifier) of the evaluation fold's
members against its non-members, and each detector's AUC minus it on the
same bootstrap replicates, against hand values."""

import numpy as np
import pytest
from helpers import toy_split

from leaktrace.calibration.testbed_blind import blind_auc, evaluation_samples, scores_by_sample, split_blind_baseline
from leaktrace.evaluate.detection import detection_rows
from leaktrace.report.results import blind_section, detection_sections

BLIND_COLUMNS = (
    "blind_auc",
    "blind_auc_low",
    "blind_auc_high",
    "delta_blind_auc",
    "delta_blind_auc_low",
    "delta_blind_auc_high",
    "beats_blind_auc_share",
)
MEMBERS = {"c1", "c2", "e1", "e2", "e3"}


def _rows(blind):
    scores, samples = toy_split()
    return {
        (r["subset"], r["method"]): r
        for r in detection_rows(scores, samples, n_resamples=200, seed=1, alpha=0.7, min_per_class=2, blind=blind)[0]
    }


def test_each_detector_is_set_beside_the_blind_baseline_on_the_same_replicates():
    """The toy's loss AUC is 11/12 on the unfiltered evaluation fold. A blind
    baseline that separates members perfectly has AUC 1 in every replicate
    (resampling within each class keeps it separable), so loss beats it by
    11/12 - 1 and its interval is loss's own shifted by -1. Two repeats, one
    perfect and one reversed, average to 1/2 in every replicate."""
    evaluation = [f"e{i}" for i in range(1, 8)]
    perfect = {sid: [(1.0 if sid in MEMBERS else 0.0, 0)] for sid in evaluation}
    by = _rows(perfect)
    loss = by[("all", "loss")]
    assert (loss["blind_auc"], loss["blind_auc_low"], loss["blind_auc_high"]) == (1.0, 1.0, 1.0)
    assert loss["delta_blind_auc"] == pytest.approx(11 / 12 - 1)
    assert (loss["delta_blind_auc_low"], loss["delta_blind_auc_high"]) == pytest.approx(
        (loss["auc_low"] - 1, loss["auc_high"] - 1)
    )
    assert loss["beats_blind_auc_share"] == 0.0
    halves = _rows(
        {sid: [(1.0 if sid in MEMBERS else 0.0, 0), (0.0 if sid in MEMBERS else 1.0, 0)] for sid in evaluation}
    )
    loss = halves[("all", "loss")]
    assert (loss["blind_auc"], loss["blind_auc_low"], loss["blind_auc_high"]) == (0.5, 0.5, 0.5)
    assert loss["delta_blind_auc"] == pytest.approx(11 / 12 - 0.5)
    assert halves[("filtered", "loss")]["blind_auc"] == 0.5  # the same scores restricted to the filtered samples
    # the blind baseline draws nothing from the bootstrap: every other figure is unchanged, and without it the columns are null
    without = _rows(None)
    for key, row in without.items():
        assert all(row.get(c) is None for c in BLIND_COLUMNS)
        assert {k: v for k, v in halves[key].items() if k not in BLIND_COLUMNS} == row
    # a sample it did not score: no blind columns rather than a comparison on other samples
    assert _rows({sid: v for sid, v in perfect.items() if sid != "e1"})[("all", "loss")].get("blind_auc") is None


def test_the_blind_auc_of_a_replicate_is_its_within_fold_mean():
    """Two folds and one repeat: the detector-side statistic is the same
    within-fold mean the blind baseline's table reports."""
    scores = np.array([[3, 1, 2, 0, 5, 6, 4]], float)
    folds = np.array([[0, 0, 0, 0, 1, 1, 1]])
    labels = np.array([True, True, False, False, True, False, False])
    assert blind_auc(scores, folds, labels) == pytest.approx(5 / 8)
    assert blind_auc(np.vstack([scores, -scores]), np.vstack([folds, folds]), labels) == pytest.approx(
        (5 / 8 + 3 / 8) / 2
    )


def test_the_testbed_blind_baseline_uses_the_evaluation_fold_only():
    """Members' texts are Python, non-members' SQL, on the evaluation fold
    only: AUC 1 with p = 1 / (permutations + 1); calibration and ReCaLL
    prefix samples are left out; its scores come back per sample and repeat."""
    _, samples = toy_split()
    texts = {
        s["sample_id"]: (f"def f{i}(x):\n    return x + {i}\n" if s["split"] == "member" else f"SELECT c{i} FROM t;")
        for i, s in enumerate(samples)
    }
    assert [sid for sid, _ in evaluation_samples(samples)] == [f"e{i}" for i in range(1, 8)]
    row, scores = split_blind_baseline("toy", samples, texts, alpha=0.05, permutations=9, repeats=2, seed=3)
    assert (row["n_suspect"], row["n_control"], row["auc"], row["repeats"], row["folds"]) == (3, 4, 1.0, 2, 3)
    assert row["exact"] is False and row["p_value"] == pytest.approx(1 / 10) and row["blind_rejected"] is False
    by_sample = scores_by_sample(scores)
    assert sorted(by_sample) == [f"e{i}" for i in range(1, 8)] and {len(v) for v in by_sample.values()} == {2}
    for r in range(2):
        member = [by_sample[s][r][0] for s in by_sample if s in MEMBERS]
        other = [by_sample[s][r][0] for s in by_sample if s not in MEMBERS]
        assert min(member) > max(other) and {by_sample[s][r][1] for s in by_sample} == {0, 1, 2}
    with pytest.raises(ValueError, match="1 samples of the split are not in the benchmark's table, e.g. \\['e3'\\]"):
        split_blind_baseline(
            "toy", samples, {k: v for k, v in texts.items() if k != "e3"}, alpha=0.05, permutations=9, repeats=1, seed=3
        )
    # too few of a class: the row says why and there are no scores
    few = [s | {"split": "non-member"} if s["sample_id"] in {"e1", "e2"} else s for s in samples]
    row, scores = split_blind_baseline("toy", few, texts, alpha=0.05, permutations=9, repeats=1, seed=3)
    assert row["note"].startswith("not run: needs at least 2") and scores == []


def test_regression_the_report_shows_the_blind_baseline_and_beats_blind_by():
    evaluation = [f"e{i}" for i in range(1, 8)]
    rows = [
        r | {"model": "m"} for r in _rows({sid: [(1.0 if sid in MEMBERS else 0.0, 0)] for sid in evaluation}).values()
    ]
    text = "\n".join(detection_sections(rows))
    assert (
        "The blind baseline (a text-only classifier of members against non-members, no model) has AUC 1.000 [1.000, 1.000]"
        in text
    )
    assert "| beats blind by [95% CI] |" in text and "| -0.083 [" in text
    _, samples = toy_split()
    texts = {s["sample_id"]: "x = 1\n" * (1 + i % 3) for i, s in enumerate(samples)}
    row, _ = split_blind_baseline("toy", samples, texts, alpha=0.05, permutations=9, repeats=1, seed=3)
    assert blind_section([row])[0].startswith("\n## Blind baseline of toy\n\nA classifier with no model")
    assert "3 members from its 4 non-members" in blind_section([row])[0]


def test_an_interval_that_is_not_estimable_prints_the_value_alone():
    """A tiny evaluation fold can leave the blind baseline's interval empty (the micro run's)."""
    from leaktrace.report.results import with_interval

    assert with_interval(0.5, None, None) == "0.500" and with_interval(None, 0.1, 0.9) == "–"
    assert with_interval(0.5, 0.25, 0.75) == "0.500 [0.250, 0.750]"
