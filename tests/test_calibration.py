"""Calibrated verdicts (leaktrace.calibration): conformal p-values against
hand values and under exchangeability, the Clopper-Pearson figures of the
reference, the calibration table's rules, cross-fitting that never scores a
sample with a fit that saw its label, and the checks that use them."""

import math

import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import binomtest

from leaktrace.artifacts import write_table
from leaktrace.calibration.conformal import conformal_p_values, exceedances, p_values, randomised_p_values
from leaktrace.calibration.conformal_checks import (
    Refit,
    calibration_fold_rows,
    refitted_repartitioned_rows,
    repartitioned_rows,
)
from leaktrace.calibration.membership import membership_rows, shuffled_labels
from leaktrace.calibration.rates import clopper_pearson
from leaktrace.calibration.table import (
    AVERAGE,
    CALIBRATION_FOLD,
    COUNT,
    REPARTITIONED,
    SCHEMA,
    average_row,
    combined_rows,
    count_row,
    write_rows,
)
from leaktrace.calibration.unexposed import is_unexposed, unexposed_models
from leaktrace.calibration.validity_rules import repartition_expected_rate
from leaktrace.detect.cross_fit import (
    UNLABELLED,
    Problem,
    assign_folds,
    cross_fit,
    cross_fit_many,
    row_conformal_inputs,
)
from leaktrace.errors import InputError
from leaktrace.settings.contamination import DatasetInferenceSettings

CONTROL = np.array([0.1, 0.4, 0.4, 0.7, 0.9])


def test_conformal_p_value_on_five_controls_by_hand():
    # p(x) = (1 + #{c >= x}) / (5 + 1); ties count against x
    p = conformal_p_values(CONTROL, np.array([0.95, 0.9, 0.7, 0.4, 0.0]))
    assert p.tolist() == pytest.approx([1 / 6, 2 / 6, 3 / 6, 5 / 6, 6 / 6])
    # bootstrap weights: the control set [0.1, 0.9, 0.9] (0.1 once, 0.9 twice) against x = 0.5: (1 + 2) / 4
    assert p_values(exceedances(CONTROL, np.array([0.5])), np.array([[1, 0, 0, 0, 2]]))[0, 0] == pytest.approx(3 / 4)


def test_cross_conformal_compares_each_control_under_its_own_fit_by_hand():
    # two fits; controls 0-2 held out by fit 0, 3-4 by fit 1; x scores 0.5 under fit 0 and 0.8 under fit 1
    test = np.array([[0.5], [0.8]])
    e = exceedances(CONTROL, test, np.array([0, 0, 0, 1, 1]))
    assert e[:, 0].tolist() == [False, False, False, False, True]  # 0.1, 0.4, 0.4 < 0.5; 0.7 < 0.8 <= 0.9
    assert p_values(e)[0] == pytest.approx(2 / 6)
    with pytest.raises(ValueError, match="do not index"):
        exceedances(CONTROL, test, np.array([0, 0, 0, 1, 2]))


def test_conformal_p_values_are_valid_and_the_randomised_ones_uniform():
    rng = np.random.default_rng(0)
    plain, randomised = [], []
    for _ in range(3000):  # a fresh exchangeable draw each time: 9 controls, 1 non-member, scores with ties
        scores = rng.integers(0, 6, size=10).astype(float)
        plain.append(conformal_p_values(scores[:9], scores[9:])[0])
        randomised.append(randomised_p_values(scores[:9], scores[9:], rng)[0])
    for alpha in (0.1, 0.2, 0.5):
        assert np.mean(np.array(plain) <= alpha) <= alpha + 0.02
        assert abs(np.mean(np.array(randomised) <= alpha) - alpha) < 0.03
    assert np.mean(plain) > np.mean(randomised)  # ties counted against x make the plain p-value conservative


def test_clopper_pearson_figures_of_the_reference():
    assert clopper_pearson(0, 20)[1] == pytest.approx(0.168, abs=5e-4)
    assert clopper_pearson(0, 100)[1] == pytest.approx(0.036, abs=5e-4)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        clopper_pearson(3, 2)


def test_count_and_average_rows_hold_by_their_rules():
    assert count_row("m", "reference", CALIBRATION_FOLD, 0.05, 0, 46)["holds"]
    # 6 of 46: the interval's lower end 0.049 still reaches 0.05; 8 of 46 (0.074) does not
    assert count_row("m", "reference", CALIBRATION_FOLD, 0.05, 6, 46)["holds"]
    row = count_row("m", "reference", CALIBRATION_FOLD, 0.05, 8, 46)
    assert not row["holds"] and row["kind"] == COUNT and row["ci_low"] > 0.05
    assert (row["rule"], row["expected_rate"], row["holds_p"]) == (
        "binomial",
        0.05,
        pytest.approx(binomtest(8, 46, 0.05, "greater").pvalue),
    )
    # an average against its expectation with its Monte Carlo error: [0.05, 0.07] has mean 0.06, standard error
    # 0.01, so t = 1 on one degree of freedom, p = 1/4: the excess is noise; 200 partitions at 0.06 +- 0.01 are not
    row = average_row("m", "reference", REPARTITIONED, 0.05, [0.05, 0.07])
    assert row["holds"] and row["holds_p"] == pytest.approx(0.25) and row["rule"] == "mean vs expectation"
    row = average_row("m", "reference", REPARTITIONED, 0.05, [0.05, 0.07] * 100)
    assert not row["holds"] and row["kind"] == AVERAGE and row["rejections"] is None and row["n"] == 200
    assert average_row("m", "reference", REPARTITIONED, 0.05, [0.05, 0.07] * 100, expected_rate=0.06)["holds"]
    assert average_row("m", "reference", REPARTITIONED, 0.05, [0.05])["holds"] is None  # one partition: unjudgeable


def test_row_files_join_sorted_and_a_stranger_file_or_a_repeated_key_is_named(tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    write_rows(
        [
            count_row("z", "reference", CALIBRATION_FOLD, 0.1, 1, 10),
            count_row("a", "reference", CALIBRATION_FOLD, 0.1, 1, 10),
        ],
        a,
    )
    write_rows([average_row("m", "target", REPARTITIONED, 0.05, [0.0, 0.1])], b)
    rows = combined_rows([a, b])
    assert [r["method"] for r in rows] == ["a", "m", "z"] and list(rows[0]) == SCHEMA.names
    with pytest.raises(InputError, match="also in"):
        combined_rows([a, a])
    write_table([{"x": 1}], pa.schema([("x", pa.int32())]), tmp_path / "other.parquet")
    with pytest.raises(InputError, match="other.parquet: not a calibration row file"):
        combined_rows([tmp_path / "other.parquet"])


def test_unexposed_models_are_recognised_by_name():
    names = [
        "reference",
        "ref-model",
        "target-r5-s0-e5",
        "sham-r5-s0-e5",
        "twin-r5-s0-e5",
        "audit-x",
        "twin-r0.5-s1-e3",
    ]
    assert unexposed_models(names) == ["reference", "ref-model", "sham-r5-s0-e5", "twin-r5-s0-e5", "twin-r0.5-s1-e3"]
    assert not is_unexposed("target-r5-s0-e5")


class Recorder:
    """A fit_many that scores sample i by whether it was in the training set
    (1 if trained on as a member, 0 as a non-member, 0.5 if unseen), and
    records what each fit was trained on."""

    def __init__(self):
        self.tasks = []

    def __call__(self, tasks):
        self.tasks += [set(train.tolist()) for train, _ in tasks]
        scores = np.full((len(tasks), 12), 0.5)
        for k, (train, labels) in enumerate(tasks):
            scores[k, train] = labels
        return scores, scores > 0.5


def test_cross_fitting_never_scores_a_sample_with_a_fit_that_saw_its_label():
    labelled = np.arange(8)  # samples 8..11 are outside the labelled set
    labels = np.array([1, 0, 1, 0, 1, 0, 1, 0], dtype=bool)
    recorder = Recorder()
    fit = cross_fit(labelled, labels, 12, recorder, n_folds=4, seed=1)
    assert len(recorder.tasks) == 5 and recorder.tasks[-1] == set(range(8))  # 4 folds, then the full fit
    for i in range(12):
        fit_index = fit.fold[i] if fit.fold[i] != UNLABELLED else 4
        assert i not in set(fit.trained_on[fit_index].tolist())
    assert (fit.scores == 0.5).all()  # every reported score is an unseen one's
    assert sorted(np.bincount(fit.fold[:8]).tolist()) == [2, 2, 2, 2]  # stratified: a member and a non-member per fold
    assert (np.bincount(fit.fold[:8][labels]) == 1).all()
    assert fit.fold_scores.shape == (4, 12)


def test_folds_need_two_of_each_class_and_shrink_to_the_smaller_class():
    assert assign_folds(np.array([1, 1, 1, 0, 0, 0], dtype=bool), 5, 0).max() == 2
    with pytest.raises(ValueError, match="cross-fitting needs 2 folds"):
        assign_folds(np.array([1, 0, 0, 0], dtype=bool), 5, 0)


def test_row_conformal_inputs_read_a_cross_fit_from_score_rows():
    rows = {
        "c0": {"score": 0.2, "fold": 0, "fold_scores": [0.2, 0.9]},
        "c1": {"score": 0.6, "fold": 1, "fold_scores": [0.1, 0.6]},
        "x": {"score": 0.5, "fold": UNLABELLED, "fold_scores": [0.1, 0.7]},
    }
    control, test, fit = row_conformal_inputs(rows, ["c0", "c1"], ["x"])
    # c0 against x under fit 0 (0.2 >= 0.1), c1 under fit 1 (0.6 < 0.7): p = (1 + 1) / 3
    assert p_values(exceedances(control, test, fit))[0] == pytest.approx(2 / 3)
    plain = {k: {"score": v["score"]} for k, v in rows.items()}
    control, test, fit = row_conformal_inputs(plain, ["c0", "c1"], ["x"])
    assert fit is None and conformal_p_values(control, test)[0] == pytest.approx(2 / 3)


def test_calibration_fold_check_counts_flags_among_evaluation_non_members():
    rows = {f"c{i}": {"score": float(i)} for i in range(9)} | {f"t{i}": {"score": 7.5 + i} for i in range(4)}
    out = calibration_fold_rows(
        "m", "reference", rows, [f"c{i}" for i in range(9)], [f"t{i}" for i in range(4)], [0.1, 0.2]
    )
    # t0 (7.5) is reached by one control (8): p = 2/10; t1..t3 by none: p = 1/10
    assert [(r["alpha"], r["rejections"], r["n"]) for r in out] == [(0.1, 3, 4), (0.2, 4, 4)]
    # the flags share the 9 controls: k = 1 at 0.1, the count is BetaBinomial(4, 1, 9), P(X >= 3) = 36/2860 + 9/6435
    assert out[0]["rule"] == "beta-binomial" and out[0]["expected_rate"] == pytest.approx(0.1)
    assert out[0]["holds_p"] == pytest.approx(2 / 143) and not out[0]["holds"] and out[0].get("ks_p") is None


def test_calibration_fold_check_holds_where_only_chance_flags():
    """6 of 45 flagged at 0.05 with 19 shared controls. As independent flags
    (Binomial(45, 0.05): the Clopper-Pearson interval [0.0505, 0.268] above
    0.05) the row would fail; the flags share the controls, whose FPR is
    Beta(1, 19), and the count's beta-binomial P(X >= 6) holds: with k = 1,
    X >= 6 iff the top 6 of all 64 scores are tested ones, C(45, 6) / C(64, 6)
    = 0.109."""
    rows = {f"c{i}": {"score": float(i)} for i in range(19)}
    rows |= {
        f"t{i}": {"score": 18.5 if i < 6 else 0.5} for i in range(45)
    }  # above every control (p = 1/20), or below 18
    (row,) = calibration_fold_rows(
        "m", "reference", rows, [f"c{i}" for i in range(19)], [f"t{i}" for i in range(45)], [0.05]
    )
    assert row["rejections"] == 6 and row["ci_low"] > 0.05 and row["holds"]
    assert row["holds_p"] == pytest.approx(math.comb(45, 6) / math.comb(64, 6))


def test_repartitioned_check_holds_for_a_label_free_score():
    scores = np.random.default_rng(1).normal(size=60)
    rows = repartitioned_rows("loss", "reference", scores, 19, 200, [0.05, 0.1, 0.2], seed=3)
    assert all(r["holds"] and r["n"] == 200 for r in rows)
    assert [r["rate"] for r in rows] == pytest.approx([0.05, 0.1, 0.2], abs=0.02)
    # continuous scores: the exact expectation over partitions is k / (m + 1) = alpha with 19 controls
    assert [r["expected_rate"] for r in rows] == pytest.approx([0.05, 0.1, 0.2])
    assert all(r["rule"] == "mean vs expectation" and r.get("ks_p") is None for r in rows)


def test_repartitioned_check_judges_tied_scores_against_their_lower_exact_expectation():
    """Two score levels, 30 non-members each: a tested sample on the lower
    level is never flagged (every control scores >= it), so the exact
    expectation over partitions is far below alpha, and the mean is judged
    against it, not against alpha."""
    scores = np.repeat([0.0, 1.0], 30)
    (row,) = repartitioned_rows("loss", "reference", scores, 19, 200, [0.2], seed=3)
    assert (
        row["expected_rate"] == pytest.approx(repartition_expected_rate(scores, 19, 0.2))
        and row["expected_rate"] < 0.01
    )
    assert row["holds"] and row["rate"] <= row["ci_high"] and row["ci_low"] <= row["expected_rate"] + 0.01


def _memorising(features):
    """A fit_many whose classifier scores its own training members high and
    non-members low, and anything else by its feature (noise here)."""

    def fit_many(tasks):
        scores = np.tile(features, (len(tasks), 1))
        for k, (train, labels) in enumerate(tasks):
            scores[k, train] = np.where(labels, 10.0, -10.0)
        return scores, scores > 0

    return fit_many


def test_refitted_repartitions_keep_a_memorising_classifier_calibrated():
    """Fitted on its controls, such a classifier flags every tested
    non-member (the controls score -10); cross-fitted, each control is scored
    by a fit that never saw it, and the decisions are calibrated."""
    rng = np.random.default_rng(2)
    features = rng.normal(size=80)
    members, non_members = np.arange(20), np.arange(20, 80)
    refit = Refit(_memorising(features), 80, folds=5)
    rows = refitted_repartitioned_rows(
        "veilprobe", "reference", refit, members, non_members, 20, 200, [0.05, 0.1], seed=4
    )
    assert all(r["holds"] for r in rows), rows
    assert rows[0]["rate"] == pytest.approx(0.05, abs=0.025)
    # the deployed-as-before fit: controls scored by the classifier that saw them
    naive = _memorising(features)([(np.r_[members, non_members[:20]], np.r_[np.ones(20, bool), np.zeros(20, bool)])])[
        0
    ][0]
    assert np.mean(conformal_p_values(naive[non_members[:20]], naive[non_members[20:]]) <= 0.05) == 1.0


def test_shuffled_labels_keep_each_folds_class_sizes():
    members = np.array([1, 1, 0, 0, 0, 1, 0, 1], dtype=bool)
    folds = np.array(["calibration"] * 4 + ["evaluation"] * 4)
    shuffled = shuffled_labels(members, folds, np.random.default_rng(0))
    for fold in ("calibration", "evaluation"):
        assert shuffled[folds == fold].sum() == members[folds == fold].sum()


def test_membership_null_holds_with_a_memorising_learned_feature():
    """Dataset inference with a feature that memorises its training labels:
    cross-fitted and refitted per draw, the re-randomised null holds."""
    rng = np.random.default_rng(5)
    ids = [f"s{i:02d}" for i in range(60)]
    split = {sid: (i % 2 == 0, "calibration" if i < 24 else "evaluation") for i, sid in enumerate(ids)}
    lookup = {"loss": {sid: float(v) for sid, v in zip(ids, rng.normal(size=60), strict=True)}}
    refits = {"dpdllm": (Refit(_memorising(rng.normal(size=60)), 60, folds=4), ids)}
    di = DatasetInferenceSettings(n_splits=3, exclude_methods=(), curve_sizes=(), curve_draws=0)
    rows = membership_rows("reference", lookup, split, refits, di, [0.05], draws=60, seed=1)
    (row,) = rows
    assert row["holds"] and row["rate"] <= 0.1 and "dpdllm" in row["note"]


def test_cross_fit_many_without_the_full_fit_leaves_unlabelled_samples_unscored():
    recorder = Recorder()
    problems = [Problem(np.arange(8), np.array([1, 0] * 4, dtype=bool), seed=s) for s in (1, 2)]
    fits = cross_fit_many(problems, 12, recorder, n_folds=2, full=False)
    assert len(recorder.tasks) == 4 and np.isnan(fits[0].scores[8:]).all() and not np.isnan(fits[0].scores[:8]).any()


def test_report_section_names_failed_rows_counts_unjudged_ones_and_shows_ks_only_for_independent_draws():
    from leaktrace.calibration.table import POOLED_UNEXPOSED, REAL_ORDER, REMEMBERSHIP
    from leaktrace.calibration.validity_rules import pooled_models, unjudgeable
    from leaktrace.report.calibration import calibration_section

    flags = {f"c{i}": {"score": float(i)} for i in range(9)} | {f"t{i}": {"score": 7.5 + i} for i in range(4)}
    rows = calibration_fold_rows(
        "m", "reference", flags, [f"c{i}" for i in range(9)], [f"t{i}" for i in range(4)], [0.1]
    )
    rows += [
        count_row("exchangeability", "ref-model", REAL_ORDER, 0.05, 1, 1, unjudgeable(0.05)),
        count_row("exchangeability", POOLED_UNEXPOSED, REAL_ORDER, 0.05, 1, 1, pooled_models([0.3], 0.05)),
        count_row("dataset_inference", "reference", REMEMBERSHIP, 0.05, 10, 200, ks_d=0.05, ks_p=0.6),
    ]
    text = calibration_section(rows)
    fold = text[text.index("### Null: calibration fold") : text.index("### Null: re-randomised")]
    assert "**Does not hold** (1 of 1 rows): m under reference at α = 0.1" in fold and "ks_p" not in fold
    assert "| ks_d | ks_p |" in text[text.index("### Null: re-randomised") : text.index("### Null: real order")]
    order = text[text.index("### Null: real order") :]
    assert "1 of 2 rows cannot be judged" in order and "real order at some α under ref-model" in order
    assert "(Bonferroni, p = 0.3) that is within chance" in order  # the pooled row holds: no structure claimed
    failing = [
        *rows[1:2],
        count_row("exchangeability", POOLED_UNEXPOSED, REAL_ORDER, 0.05, 1, 1, pooled_models([0.001], 0.05)),
    ]
    assert "this benchmark's order carries structure" in calibration_section(failing)
