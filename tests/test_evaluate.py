import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    f1_score,
    precision_score,
    recall_score,
    roc_auc_score,
)

from leaktrace.calibration.conformal import conformal_p_values, exceedances
from leaktrace.evaluate.bootstrap import Folds, bootstrap, percentile_interval
from leaktrace.evaluate.metrics import (
    best_balanced_accuracy,
    decision_metrics,
    macro_f1,
    roc_auc,
    tpr_at_fpr,
)
from leaktrace.evaluate.proportions import wilson_interval

# Sorted by score: P N P N P P N N, so the ROC curve visits
# (0, .25) (.25, .5) (.5, 1) among its corners.
LABELS = np.array([1, 0, 1, 0, 1, 1, 0, 0])
SCORES = np.array([0.9, 0.85, 0.8, 0.5, 0.4, 0.3, 0.2, 0.1])


def random_split(seed=0, n=60):
    rng = np.random.default_rng(seed)
    labels = np.repeat([0, 1], n // 2)
    scores = rng.normal(size=n) + labels
    return labels, scores


def test_roc_auc_matches_sklearn():
    labels, scores = random_split()
    assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores))
    assert roc_auc(LABELS, SCORES) == pytest.approx(11 / 16)


def test_single_class_gives_nan():
    labels, scores = [1, 1, 1], [0.1, 0.5, 0.9]
    assert math.isnan(roc_auc(labels, scores))
    assert math.isnan(tpr_at_fpr(labels, scores, 0.1))
    assert math.isnan(best_balanced_accuracy(labels, scores))


@pytest.mark.parametrize(("fpr", "tpr"), [(0.25, 0.5), (0.3, 0.5), (0.5, 1.0), (1.0, 1.0)])
def test_tpr_at_fpr_on_constructed_curve(fpr, tpr):
    assert tpr_at_fpr(LABELS, SCORES, fpr) == tpr


@pytest.mark.parametrize("fpr", [0.0, 0.01, 0.2, 0.249])
def test_tpr_below_one_false_positive_is_not_estimable(fpr):
    # 4 non-members: the smallest FPR above 0 is 1/4; below it the curve
    # offers only FPR 0 (where TPR would read 0.25), a different quantity.
    assert math.isnan(tpr_at_fpr(LABELS, SCORES, fpr))


def test_tpr_at_fpr_keeps_collinear_points():
    # Each tied pair holds one member and one non-member: the curve is the
    # diagonal, whose inner points roc_curve drops by default.
    labels = [1, 0, 1, 0, 1, 0, 1, 0]
    scores = [4, 4, 3, 3, 2, 2, 1, 1]
    assert tpr_at_fpr(labels, scores, 0.3) == 0.25


def test_best_balanced_accuracy_hand_computed():
    # score >= 0.3 catches every member and two of four non-members.
    assert best_balanced_accuracy(LABELS, SCORES) == pytest.approx(1 - (0.5 + 0.0) / 2)
    assert best_balanced_accuracy([0, 1], [1.0, 0.0]) == 0.5


def test_decision_metrics_hand_computed():
    # 2 members found, 1 missed, 1 non-member kept, 1 flagged: the non-member class has precision and recall 1/2
    metrics = decision_metrics([1, 1, 0, 0, 1], [1, 0, 0, 1, 1])
    assert metrics == pytest.approx(
        {
            "accuracy": 3 / 5,
            "macro_precision": (2 / 3 + 1 / 2) / 2,
            "macro_recall": (2 / 3 + 1 / 2) / 2,
            "macro_f1": (2 / 3 + 1 / 2) / 2,
            "member_precision": 2 / 3,
            "member_recall": 2 / 3,
            "member_f1": 2 / 3,
        }
    )


def test_decision_metrics_reproduce_srdetection_table_1_printed_row():
    """SrDetection Table 1, Zlib at 1 epoch on Qwen2.5-7B: Acc. 50.24, Prec. 25.12, Rec. 50.00, F1 33.44
    ("F1-Macro"), a detector that calls every sample a member of a test set of 1,051 (Table 5) with 528
    members. Only macro averages give these precision and recall (the member class's: 50.24 and 100)."""
    labels, flagged = [1] * 528 + [0] * 523, [1] * 1051
    metrics = {k: round(100 * v, 2) for k, v in decision_metrics(labels, flagged).items()}
    assert (metrics["accuracy"], metrics["macro_precision"], metrics["macro_recall"], metrics["macro_f1"]) == (
        50.24,
        25.12,
        50.0,
        33.44,
    )
    assert (metrics["member_precision"], metrics["member_recall"]) == (50.24, 100.0)


def test_decision_metrics_without_predicted_members_is_zero_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metrics = decision_metrics([1, 0, 0], [0, 0, 0])
    assert metrics["member_precision"] == metrics["member_recall"] == metrics["member_f1"] == 0.0
    assert metrics["macro_precision"] == pytest.approx((0 + 2 / 3) / 2) and metrics["macro_recall"] == 0.5
    assert metrics["macro_f1"] == pytest.approx((0 + 0.8) / 2)


def test_fast_macro_f1_and_auc_equal_sklearn_on_random_data():
    rng = np.random.default_rng(0)
    for _ in range(20):
        labels = rng.integers(0, 2, 30)
        labels[:2] = [0, 1]
        scores = rng.integers(0, 6, 30).astype(float)  # many ties
        predictions = rng.integers(0, 2, 30)
        assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores))
        assert macro_f1(labels, predictions) == pytest.approx(
            f1_score(labels, predictions, average="macro", zero_division=0)
        )


def test_threshold_metrics_equal_sklearn_on_random_data():
    rng = np.random.default_rng(3)
    for _ in range(20):
        labels = rng.integers(0, 2, 40)
        labels[:2] = [0, 1]
        scores = np.round(rng.normal(size=40) + labels, 1)  # ties
        # every threshold's (FPR, TPR) from sklearn's recall of members and of non-members
        thresholds = [*np.unique(scores), np.inf]
        tpr = np.array([recall_score(labels, scores >= t) for t in thresholds])
        fpr = np.array([recall_score(labels == 0, scores >= t) for t in thresholds])
        for budget in (0.0, 0.01, 0.05, 0.1, 0.5):
            if budget * np.sum(labels == 0) < 1:
                assert math.isnan(tpr_at_fpr(labels, scores, budget))
            else:
                assert tpr_at_fpr(labels, scores, budget) == pytest.approx(tpr[fpr <= budget].max())
        assert best_balanced_accuracy(labels, scores) == pytest.approx(balanced_accuracy_best(labels, scores))
        predictions = rng.integers(0, 2, 40)
        assert decision_metrics(labels, predictions) == pytest.approx(
            {
                "accuracy": accuracy_score(labels, predictions),
                "macro_precision": precision_score(labels, predictions, average="macro", zero_division=0),
                "macro_recall": recall_score(labels, predictions, average="macro", zero_division=0),
                "macro_f1": f1_score(labels, predictions, average="macro", zero_division=0),
                "member_precision": precision_score(labels, predictions, zero_division=0),
                "member_recall": recall_score(labels, predictions, zero_division=0),
                "member_f1": f1_score(labels, predictions, zero_division=0),
            }
        )


def balanced_accuracy_best(labels, scores):
    """max over thresholds of sklearn's balanced accuracy of ``score >= t``."""
    return max(balanced_accuracy_score(labels, scores >= t) for t in [*np.unique(scores), np.inf])


def test_orientation_flipped_scores_give_one_minus_auc():
    labels, scores = random_split(seed=4)
    assert roc_auc(labels, -scores) == pytest.approx(1 - roc_auc_score(labels, scores))


def test_batched_auc_and_f1_equal_row_by_row():
    rng = np.random.default_rng(5)
    labels = np.repeat([1, 0], [7, 9])
    scores = np.round(rng.normal(size=(3, 4, 16)), 1)  # ties
    predictions = rng.integers(0, 2, (3, 4, 16))
    aucs, f1s = roc_auc(labels, scores), macro_f1(labels, predictions)
    assert aucs.shape == f1s.shape == (3, 4)
    for i, j in np.ndindex(3, 4):
        assert aucs[i, j] == pytest.approx(roc_auc_score(labels, scores[i, j]))
        assert f1s[i, j] == pytest.approx(f1_score(labels, predictions[i, j], average="macro", zero_division=0))


def test_wilson_interval_against_hand_value():
    # 1 of 4, z = 1.959964: centre (0.25 + z^2/8) / (1 + z^2/4) = 0.372474,
    # half-width z sqrt(0.25 * 0.75 / 4 + z^2/64) / (1 + z^2/4) = 0.326885.
    low, high = wilson_interval(1, 4)
    assert low == pytest.approx(0.045589, abs=1e-5) and high == pytest.approx(0.699359, abs=1e-5)
    with pytest.raises(ValueError, match="at least one trial"):
        wilson_interval(0, 0)


def _folds(control_scores, evaluation_scores, alpha=0.25):
    """Split-conformal folds: 6 controls, 8 evaluation samples (4 members first)."""
    control_scores, evaluation_scores = np.asarray(control_scores, float), np.asarray(evaluation_scores, float)
    return Folds(
        evaluation_labels=np.array([1, 1, 1, 1, 0, 0, 0, 0], dtype=bool),
        evaluation_scores=evaluation_scores,
        exceedances=np.stack([exceedances(c, e) for c, e in zip(control_scores, evaluation_scores, strict=True)]),
        alpha=alpha,
    )


def test_bootstrap_recomputes_p_values_against_the_resampled_control_set():
    """The vectorised bootstrap against a loop over the same draws: each
    replicate draws the evaluation fold within class, then the control set,
    and flags a drawn sample where its conformal p-value against the drawn
    controls is at most alpha."""
    rng = np.random.default_rng(11)
    control_scores = np.round(rng.normal(size=(2, 6)), 1)
    folds = _folds(control_scores, np.round(rng.normal(size=(2, 8)) + np.repeat([1, 0], 4), 1))
    replicates = bootstrap(folds, 50, np.random.default_rng(3))
    draws = np.random.default_rng(3)
    evaluation = np.concatenate(
        [np.arange(4)[draws.integers(0, 4, (50, 4))], np.arange(4, 8)[draws.integers(0, 4, (50, 4))]], axis=1
    )
    controls = draws.integers(0, 6, (50, 6))
    labels = np.repeat([1, 0], 4)
    for m, b in np.ndindex(2, 50):
        scores = folds.evaluation_scores[m, evaluation[b]]
        flagged = conformal_p_values(control_scores[m, controls[b]], scores) <= 0.25
        assert replicates.auc[m, b] == pytest.approx(roc_auc_score(labels, scores))
        assert replicates.macro_f1[m, b] == pytest.approx(f1_score(labels, flagged, average="macro", zero_division=0))
    assert len({tuple(row) for row in controls}) > 1  # the control set is resampled, not fixed


def test_paired_bootstrap_difference_of_known_size():
    # Method 0 puts every member above all 6 controls (p = 1/7 <= 0.25) and
    # every non-member below them (p = 1); method 1 scores a constant that ties
    # every control (p = 1). Under any resampling AUC differs by 1 - 0.5 and
    # macro F1 by 1 - (0 + 2*4/(2*4 + 4)) / 2 = 2/3.
    labels = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    folds = _folds([np.zeros(6), np.zeros(6)], [labels * 2.0 - 1.0, np.zeros(8)])
    replicates = bootstrap(folds, 200, np.random.default_rng(0))
    low, high = percentile_interval(replicates.auc[1] - replicates.auc[0])
    assert low == high == pytest.approx(-0.5)
    low, high = percentile_interval(replicates.macro_f1[1] - replicates.macro_f1[0])
    assert low == high == pytest.approx(-2 / 3)


def test_bootstrap_needs_both_classes_and_a_control():
    with pytest.raises(ValueError, match="evaluation fold needs members and non-members"):
        Folds(
            evaluation_labels=np.array([True, True]),
            evaluation_scores=np.zeros((1, 2)),
            exceedances=np.zeros((1, 3, 2), dtype=bool),
            alpha=0.05,
        )
    with pytest.raises(ValueError, match="no non-member to serve as a control"):
        Folds(
            evaluation_labels=np.array([True, False]),
            evaluation_scores=np.zeros((1, 2)),
            exceedances=np.zeros((1, 0, 2), dtype=bool),
            alpha=0.05,
        )
