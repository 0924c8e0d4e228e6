import math
import warnings

import numpy as np
import pytest
from leaktrace.evaluate.metrics import (
    best_balanced_accuracy,
    bootstrap_ci,
    choose_threshold,
    decision_metrics,
    macro_f1,
    roc_auc,
    tpr_at_fpr,
)
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    f1_score,
    precision_score,
    recall_score,
    roc_auc_score,
)

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


@pytest.mark.parametrize(
    ("fpr", "tpr"), [(0.0, 0.25), (0.2, 0.25), (0.25, 0.5), (0.5, 1.0), (1.0, 1.0)]
)
def test_tpr_at_fpr_on_constructed_curve(fpr, tpr):
    assert tpr_at_fpr(LABELS, SCORES, fpr) == tpr


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


def test_choose_threshold_separable_data_uses_midpoint():
    assert choose_threshold([0, 0, 1, 1], [1.0, 2.0, 3.0, 4.0]) == 2.5


def test_choose_threshold_breaks_ties_towards_lower_threshold():
    # Thresholds 0.25 (tp 3, fp 1) and 0.45 (tp 2, fp 0) both give macro F1
    # (6/7 + 4/5) / 2; the lower one is chosen.
    labels = [0, 0, 1, 0, 1, 1]
    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    assert choose_threshold(labels, scores) == pytest.approx(0.25)
    assert choose_threshold(labels[::-1], scores[::-1]) == pytest.approx(0.25)


def test_choose_threshold_is_optimal_against_sklearn():
    labels, scores = random_split(seed=1)
    scores = np.round(scores, 1)  # create ties
    best = max(
        f1_score(labels, scores >= t, average="macro", zero_division=0) for t in [*scores, np.inf]
    )
    chosen = choose_threshold(labels, scores)
    assert f1_score(labels, scores >= chosen, average="macro") == pytest.approx(best)
    assert chosen not in set(scores)


def test_decision_metrics_hand_computed():
    metrics = decision_metrics([1, 1, 0, 0, 1], [1, 0, 0, 1, 1])
    assert metrics == pytest.approx(
        {"accuracy": 3 / 5, "precision": 2 / 3, "recall": 2 / 3, "macro_f1": (2 / 3 + 1 / 2) / 2}
    )


def test_decision_metrics_without_predicted_members_is_zero_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metrics = decision_metrics([1, 0, 0], [0, 0, 0])
    assert metrics["precision"] == 0.0
    assert metrics["recall"] == 0.0
    assert metrics["macro_f1"] == pytest.approx((0 + 0.8) / 2)


def test_bootstrap_is_deterministic_and_contains_point_estimate():
    labels, scores = random_split()
    interval = bootstrap_ci(labels, scores, roc_auc, n_resamples=100, seed=7)
    assert interval == bootstrap_ci(labels, scores, roc_auc, n_resamples=100, seed=7)
    assert interval != bootstrap_ci(labels, scores, roc_auc, n_resamples=100, seed=8)
    low, high = interval
    assert low < roc_auc(labels, scores) < high
    assert 0.5 < low and high <= 1.0


def test_bootstrap_keeps_class_sizes():
    labels, scores = random_split(n=40)

    def member_share(y, _):
        return float(np.mean(y))

    assert bootstrap_ci(labels, scores, member_share, n_resamples=50, seed=0) == (0.5, 0.5)


def test_bootstrap_of_predictions():
    labels, scores = random_split()
    predictions = (scores >= 0.5).astype(int)

    def accuracy(y, p):
        return float(np.mean(y == p))

    low, high = bootstrap_ci(labels, predictions, accuracy, n_resamples=200, seed=0)
    assert low <= accuracy(labels, predictions) <= high


def test_bootstrap_skips_nan_and_single_class_is_nan():
    labels, scores = random_split(n=20)

    def nan_for_some(_, s):
        return float("nan") if s[0] > 0 else 0.5

    assert bootstrap_ci(labels, scores, nan_for_some, n_resamples=50, seed=0) == (0.5, 0.5)
    low, high = bootstrap_ci([1] * 10, scores[:10], roc_auc, n_resamples=20, seed=0)
    assert math.isnan(low) and math.isnan(high)


def test_fast_macro_f1_and_auc_equal_sklearn_on_random_data():
    rng = np.random.default_rng(0)
    for _ in range(20):
        labels = rng.integers(0, 2, 30)
        labels[:2] = [0, 1]
        scores = rng.integers(0, 6, 30).astype(float)  # many ties
        predictions = rng.integers(0, 2, 30)
        assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores))
        assert macro_f1(labels, predictions) == pytest.approx(f1_score(labels, predictions, average="macro", zero_division=0))


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
            assert tpr_at_fpr(labels, scores, budget) == pytest.approx(tpr[fpr <= budget].max())
        assert best_balanced_accuracy(labels, scores) == pytest.approx(balanced_accuracy_best(labels, scores))
        predictions = rng.integers(0, 2, 40)
        assert decision_metrics(labels, predictions) == pytest.approx(
            {
                "accuracy": accuracy_score(labels, predictions),
                "precision": precision_score(labels, predictions, zero_division=0),
                "recall": recall_score(labels, predictions, zero_division=0),
                "macro_f1": f1_score(labels, predictions, average="macro", zero_division=0),
            }
        )
        threshold = choose_threshold(labels, scores)
        assert macro_f1(labels, scores >= threshold) == pytest.approx(
            max(f1_score(labels, scores >= t, average="macro", zero_division=0) for t in [*scores, np.inf])
        )


def balanced_accuracy_best(labels, scores):
    """max over thresholds of sklearn's balanced accuracy of ``score >= t``."""
    return max(balanced_accuracy_score(labels, scores >= t) for t in [*np.unique(scores), np.inf])


def test_orientation_flipped_scores_give_one_minus_auc():
    labels, scores = random_split(seed=4)
    assert roc_auc(labels, -scores) == pytest.approx(1 - roc_auc_score(labels, scores))
