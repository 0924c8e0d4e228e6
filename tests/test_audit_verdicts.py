"""The audit's verdicts that hold when the control set differs from
the suspects. The blind baseline (a text-only classifier of suspects against
controls), the power of each test, the reference-model contrast, the
training-conditional (PAC) conformal flags and the verdict wording, each
against hand values or closed forms."""

import math

import numpy as np
import pytest
from scipy.stats import beta, binom, mannwhitneyu, norm

from leaktrace.calibration.audit_verdicts import CONTRAST_UNDER_SHIFT, Settings, gate, model_rows, negative_control_gate
from leaktrace.calibration.blind_baseline import (
    auc,
    blind_baseline,
    blind_scores,
    delong_interval,
    delong_variance,
    feature_matrix,
    fold_mean_auc,
    out_of_fold,
    permutation_p,
    span_coordinates,
)
from leaktrace.calibration.conditional import flags_at_rank, fpr_exceed_probability, min_controls, pac_rank
from leaktrace.calibration.negative_controls import bootstrap_test
from leaktrace.calibration.power import (
    conformal_rank,
    detectable_auc,
    detectable_fisher_rate,
    detectable_flag_rate,
    fisher_power,
    flag_count_critical,
    flag_count_p,
)
from leaktrace.calibration.reference_contrast import ASSUMPTION, reference_contrast
from leaktrace.calibration.verdict import DESIGN, shift_text, verdict

PYTHON = [
    "def add(a, b):\n    return a + b\n",
    "def sub(a, b):\n    return a - b\n",
    "def mul(a, b):\n    return a * b\n",
]
SQL = ["SELECT name FROM users WHERE id = 1;", "SELECT * FROM orders WHERE total > 10;", "SELECT count(*) FROM items;"]


# --- the blind baseline ---


def test_the_permutation_p_enumerates_every_labelling_when_few():
    """Values 1..4, the two largest labelled: of the C(4, 2) = 6 labellings only
    the observed one reaches its mean gap (3.5 - 1.5 = 2), so p = 1/6 exactly."""
    values = np.array([1.0, 2.0, 3.0, 4.0])
    observed, p, exact, count = permutation_p(
        lambda y: values[y].mean() - values[~y].mean(), [False, False, True, True]
    )
    assert (observed, exact, count) == (2.0, True, 6) and p == pytest.approx(1 / 6)
    # {1, 4} against {2, 3}: gap 0, reached by 4 of 6 labellings ({1,4}, {2,3}, {2,4}, {3,4})
    assert permutation_p(lambda y: values[y].mean() - values[~y].mean(), [True, False, False, True])[
        1
    ] == pytest.approx(4 / 6)
    # more labellings than permutations: random ones, p = (1 + #>=) / (R + 1)
    _, p, exact, count = permutation_p(lambda y: float(y[0]), [True] * 5 + [False] * 5, permutations=99, seed=3)
    assert not exact and count == 99 and 0.3 < p < 0.7 and p * 100 == pytest.approx(round(p * 100))


def test_a_separable_set_gives_auc_one_and_the_smallest_p_its_labellings_allow():
    """Python against SQL, 3 and 3: the labelling and its swap both separate
    perfectly (the classifier is symmetric in the labels), none of the other
    18 of the C(6, 3) = 20 does, so p = 2/20 exactly."""
    result = blind_baseline(PYTHON + SQL, [True] * 3 + [False] * 3, seed=0)
    assert (result.auc, result.exact, result.n_labellings, result.folds) == (1.0, True, 20, 3)
    assert result.p_value == pytest.approx(2 / 20) and (result.ci_low, result.ci_high) == (1.0, 1.0)
    # 8 of each: C(16, 8) = 12870 labellings, 299 random ones; separable: p = 1 / 300
    python = [f"def f{i}(x):\n    return x + {i}\n" for i in range(8)]
    sql = [f"SELECT col{i} FROM t WHERE id = {i};" for i in range(8)]
    big = blind_baseline(python + sql, [True] * 8 + [False] * 8, seed=0, permutations=299, repeats=2)
    assert big.auc == 1.0 and not big.exact and big.n_labellings == 299 and big.p_value == pytest.approx(1 / 300)


def test_an_identically_distributed_set_is_not_rejected():
    """Suspects and controls drawn alike (the same template, numbers drawn at
    random, alternating): p is not small (a cross-validated AUC of so few
    samples often sits below 0.5: each fold's fit leans to the other class)."""
    rng = np.random.default_rng(5)
    texts = [f"def f(x):\n    return x * {rng.integers(100)} + {rng.integers(100)}\n" for _ in range(16)]
    result = blind_baseline(texts, [i % 2 == 0 for i in range(16)], seed=1, permutations=200, repeats=2)
    assert result.p_value > 0.2 and result.auc < 0.8
    # identical texts: every score ties, AUC 1/2 under every labelling, so p = 1
    same = blind_baseline([PYTHON[0]] * 6, [True] * 3 + [False] * 3, seed=0)
    assert (same.auc, same.p_value, same.exact) == (0.5, 1.0, True)


def test_the_blind_baseline_is_deterministic_and_its_fit_is_the_full_features_fit():
    labels = [True] * 3 + [False] * 3
    assert blind_baseline(PYTHON + SQL, labels, seed=4) == blind_baseline(PYTHON + SQL, labels, seed=4)
    assert blind_baseline(PYTHON + SQL, labels, seed=2**62).auc == 1.0  # a derived seed (63 bits) is accepted
    x = feature_matrix(PYTHON + SQL)
    z = span_coordinates(x)
    assert np.allclose(z @ z.T, (x @ x.T).toarray())


def test_the_statistic_is_the_mean_within_fold_auc_over_repeated_splits_and_its_null_recomputes_it():
    """Repeat r uses the folds of seed + r: the statistic is the mean over
    repeats and folds of the AUC within each fold, the interval is centred on
    it with DeLong's variance of the pooled scores averaged over the repeats,
    and one repeat is the single split; the exact null (C(8, 4) = 70
    labellings) recomputes the mean for each labelling."""
    rng = np.random.default_rng(2)
    texts = [f"def f(x):\n    return x * {rng.integers(9)} - {rng.integers(50)}\n" for _ in range(4)] + [
        f"def g(y):\n    # {rng.integers(9)}\n    return y + {rng.integers(50)}\n" for _ in range(4)
    ]
    y = np.array([True] * 4 + [False] * 4)
    x = span_coordinates(feature_matrix(texts))

    def by_hand(labels):
        runs = [out_of_fold(x, labels, 4, 7 + r) for r in range(3)]
        return np.mean(
            [np.mean([auc(s[(f == k) & labels], s[(f == k) & ~labels]) for k in range(4)]) for s, f in runs]
        ), runs

    mean, runs = by_hand(y)
    result, scores, folds = blind_scores(texts, y, seed=7, repeats=3)
    assert result.repeats == 3 and result.auc == pytest.approx(mean)
    assert np.array_equal(scores, np.stack([s for s, _ in runs])) and np.array_equal(
        folds, np.stack([f for _, f in runs])
    )
    half = norm.ppf(0.975) * math.sqrt(np.mean([delong_variance(s[y], s[~y]) for s, _ in runs]))
    assert (result.ci_low, result.ci_high) == pytest.approx((max(0, mean - half), min(1, mean + half)))
    _, p, exact, count = permutation_p(lambda lab: by_hand(lab)[0], y)
    assert (result.p_value, result.exact, result.n_labellings) == (pytest.approx(p), True, 70) and exact
    one = blind_baseline(texts, y, seed=7, repeats=1)
    s0, f0 = runs[0]
    assert one.auc == pytest.approx(np.mean([auc(s0[(f0 == k) & y], s0[(f0 == k) & ~y]) for k in range(4)]))
    with pytest.raises(ValueError, match="repeats must be >= 1, got 0"):
        blind_baseline(texts, y, seed=7, repeats=0)


def test_the_fold_mean_auc_by_hand_and_under_bootstrap_weights():
    """Fold 0: suspects [3, 1], controls [2, 0]: AUC 3/4; fold 1: suspect
    [5], controls [6, 4]: 1/2; mean 5/8 (pooled, the same scores give 6/12:
    the within-fold mean never compares scores of two fits). Weights
    [2, 0, 1, 1 | 1, 1, 1] (the suspect 1 left out, 3 twice): fold 0 is 1,
    fold 1 1/2, mean 3/4; a fold without a weighted suspect is left out."""
    scores = np.array([3, 1, 2, 0, 5, 6, 4], float)
    fold_of = np.array([0, 0, 0, 0, 1, 1, 1])
    labels = np.array([True, True, False, False, True, False, False])
    assert fold_mean_auc(scores, fold_of, labels) == pytest.approx(5 / 8)
    assert auc(scores[labels], scores[~labels]) == pytest.approx(1 / 2)
    weights = np.array([[1, 1, 1, 1, 1, 1, 1], [2, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 1, 1]], float)
    assert fold_mean_auc(scores, fold_of, labels, weights) == pytest.approx([5 / 8, 3 / 4, 3 / 4])


def test_delong_interval_by_hand():
    """Suspects [3, 1], controls [2, 0]: AUC 3/4; placements V10 = [1, 1/2],
    V01 = [1/2, 1], each sample variance 1/8, var = 1/16 + 1/16 = 1/8."""
    assert auc([3, 1], [2, 0]) == 0.75
    half = norm.ppf(0.975) * math.sqrt(1 / 8)
    assert delong_interval([3, 1], [2, 0]) == pytest.approx((0.75 - half, 1.0))
    with pytest.raises(ValueError, match="at least 2 of each class"):
        delong_interval([1], [0, 2])


def test_the_blind_baseline_refuses_too_few_samples():
    with pytest.raises(ValueError, match="at least 2 suspects and 2 controls, got 1 and 3"):
        blind_baseline(PYTHON[:1] + SQL, [True, False, False, False], seed=0)
    with pytest.raises(ValueError, match="4 texts but 3 labels"):
        blind_baseline(PYTHON[:1] + SQL, [True, False, False], seed=0)


# --- power ---


def test_detectable_auc_is_the_mann_whitney_normal_approximation():
    """n = m = 20, alpha = 0.05: 0.5 + (1.6449 + 0.8416) sqrt(41 / 4800) = 0.7298."""
    assert detectable_auc(20, 20, 0.05) == pytest.approx(0.5 + (1.644854 + 0.841621) * math.sqrt(41 / 4800), abs=1e-6)
    assert detectable_auc(20, 20, 0.05) == pytest.approx(0.7298, abs=1e-4)
    assert detectable_auc(3, 2, 0.05) is None  # beyond AUC 1: nothing detectable


def test_detectable_auc_has_about_80_percent_power_by_simulation():
    """Normal scores shifted so that AUC = Phi(shift / sqrt 2) is the figure:
    the one-sided Mann-Whitney test at 0.05 rejects about 80% of 2,000 draws."""
    n = m = 30
    target = detectable_auc(n, m, 0.05)
    shift = math.sqrt(2) * norm.ppf(target)
    rng = np.random.default_rng(0)
    x, y = rng.normal(shift, 1, (2000, n)), rng.normal(0, 1, (2000, m))
    power = np.mean(mannwhitneyu(x, y, alternative="greater", axis=1).pvalue <= 0.05)
    assert 0.75 < power < 0.86


def test_the_conformal_flag_count_null_and_its_power_by_hand():
    """n = 2 suspects, m = 3 controls, k = 1: X = suspects above the largest
    control; in a random order of 5 with 3 controls, P(X = 2) = 1/C(5, 2) = 0.1,
    P(X >= 1) = 1 - 3/5 = 0.4."""
    assert flag_count_p(2, 2, 3, 1) == pytest.approx(0.1) and flag_count_p(1, 2, 3, 1) == pytest.approx(0.4)
    assert flag_count_p(0, 2, 3, 1) == pytest.approx(1.0) and flag_count_p(1, 2, 3, 0) is None
    # m = 19 at alpha = 0.1: k = 2; n = 10: P(X >= c) first <= 0.1 at c where the tail drops
    assert conformal_rank(19, 0.1) == 2 and conformal_rank(8, 0.05) == 0 and conformal_rank(19, 0.05) == 1
    c = flag_count_critical(10, 19, 2, 0.1)
    assert flag_count_p(c, 10, 19, 2) <= 0.1 < flag_count_p(c - 1, 10, 19, 2)
    rate = detectable_flag_rate(10, 19, 0.1)
    assert binom.sf(c - 1, 10, rate) == pytest.approx(0.8)  # P(Bin(10, q) >= c) = 0.8
    assert detectable_flag_rate(12, 8, 0.05) is None  # 8 controls at 0.05 flag nothing


def test_fisher_power_against_its_closed_form_with_unflagged_controls():
    """Controls never flagged (rate 0): y = 0 always, and Fisher's p for x of 12
    against 0 of 8 is C(12, x) / C(20, x): first <= 0.05 at x = 6 (0.0238;
    x = 5 gives 0.0511), so the power at rate q is P(Bin(12, q) >= 6) and the
    80% rate is Beta(6, 7).ppf(0.8)."""
    assert math.comb(12, 5) / math.comb(20, 5) > 0.05 > math.comb(12, 6) / math.comb(20, 6)
    assert fisher_power(0.5, 0.0, 12, 8, 0.05) == pytest.approx(binom.sf(5, 12, 0.5))
    assert detectable_fisher_rate(12, 8, 0.0, 0.05) == pytest.approx(beta.ppf(0.8, 6, 7), abs=1e-9)


# --- the training-conditional (PAC) conformal flags ---


def test_the_conformal_fpr_tail_is_the_beta_of_its_rank():
    """19 controls at alpha = 0.05: k = 1, and P(FPR > 0.10) = P(Beta(1, 19) > 0.1) = 0.9^19 = 0.135."""
    assert fpr_exceed_probability(1, 19, 0.10) == pytest.approx(0.9**19) == pytest.approx(0.1351, abs=1e-4)
    for k, m, a in [(1, 19, 0.05), (3, 59, 0.05), (10, 99, 0.1)]:
        assert fpr_exceed_probability(k, m, a) == pytest.approx(beta(k, m + 1 - k).sf(a))
    with pytest.raises(ValueError, match="rank k must be in 1..m"):
        fpr_exceed_probability(0, 19, 0.05)


def test_the_pac_rank_is_the_largest_whose_tail_is_at_most_delta():
    # alpha = 0.05, delta = 0.1: k = 1 needs 0.95^m <= 0.1, m >= 45 (0.95^44 = 0.105, 0.95^45 = 0.099)
    assert min_controls(0.05, 0.1) == 45 and pac_rank(44, 0.05, 0.1) == 0 and pac_rank(45, 0.05, 0.1) == 1
    for m in (45, 100, 500):
        k = pac_rank(m, 0.05, 0.1)
        assert binom.cdf(k - 1, m, 0.05) <= 0.1 < (binom.cdf(k, m, 0.05) if k < conformal_rank(m, 0.05) else 1)
        assert k <= conformal_rank(m, 0.05)  # never looser than the marginal rule
    flags = flags_at_rank(np.array([1.0, 2.0, 3.0]), np.array([3.5, 3.0, 2.5, 0.0]), 1)
    assert flags.tolist() == [True, False, False, False]  # a tie with a control counts against the sample
    assert flags_at_rank(np.array([1.0, 2.0, 3.0]), np.array([3.5, 2.5]), 2).tolist() == [True, True]
    assert not flags_at_rank(np.array([1.0]), np.array([9.0]), 0).any()


# --- the reference-model contrast ---


def test_the_reference_contrast_is_an_exact_permutation_test_when_small():
    """d of suspects [3, 4] against controls [1, 2]: gap 2, the largest of the
    C(4, 2) = 6 relabellings: p = 1/6."""
    result = reference_contrast([3.0, 4.0], [1.0, 2.0], seed=0)
    assert result.exact and result.mean_difference == 2.0 and result.p_value == pytest.approx(1 / 6)
    assert "moves the target's and the reference's scores alike" in ASSUMPTION
    with pytest.raises(ValueError, match="not finite"):
        reference_contrast([np.nan], [1.0], seed=0)


# --- the verdicts and the gate ---


def test_the_verdict_wording_has_two_tiers():
    assert verdict(0.003, 0.05, "AUC", 0.7, 0.9, tier=DESIGN) == "evidence of exposure (p = 0.003)"
    assert verdict(0.003, 0.05, "AUC", 0.7, 0.9) == (
        "suspects score higher than controls (p = 0.003): exposure only if the controls were drawn like the "
        "suspects, which no run can establish"
    )
    assert (
        verdict(0.4, 0.05, "AUC", 0.7298, 0.9) == "no evidence; this test would have detected AUC ≥ 0.73 with 80% power"
    )
    assert verdict(0.4, 0.05, "AUC", 0.95, 0.9) == "inconclusive: too few samples to detect AUC < 0.95"
    assert verdict(None, 0.05, "flag rate", None, 0.5) == "inconclusive: too few samples to detect flag rate < 1.00"
    shift = shift_text(0.812, 0.72, 0.891, 0.001)
    assert shift == "control set differs from the suspects (blind AUC 0.81 [0.72, 0.89], p = 0.001): not calibrated"
    assert verdict(0.0001, 0.05, "AUC", 0.7, 0.9, shift) == shift


def test_a_rejecting_blind_baseline_gates_every_test_that_assumes_exchangeable_controls():
    """Suspects score higher on a detector than the controls, and their texts
    differ: the conformal flags and the leakage rate say "not calibrated" and
    count for nothing; so does the reference contrast (its assumption, that a
    shift moves both models alike, failed in the shifted-control experiment)."""
    controls = {f"b/{i}" for i in range(20, 40)}
    scores = {f"b/{i}": float(i) for i in range(40)}  # every suspect... below every control: controls 20..39
    scores = {sid: (100.0 - v if sid in controls else 200.0 + v) for sid, v in scores.items()}
    lookup = {"loss": scores}
    decisions = {"srdetection_graybox": {sid: sid not in controls for sid in scores}}
    python = [f"def f{i}(x):\n    return x + {i}\n" for i in range(20)]
    sql = [f"SELECT col{i} FROM t WHERE id = {i};" for i in range(20)]
    blind = blind_baseline(python + sql, [True] * 20 + [False] * 20, seed=0, permutations=100, repeats=2)
    s = Settings(alpha=0.05, delta=0.1, inconclusive_auc=0.9, inconclusive_rate=0.5, seed=0)
    assert gate(blind, 0.05).startswith(
        "control set differs from the suspects (blind AUC 1.00 [1.00, 1.00], p = 0.0099)"
    )
    rows = model_rows(
        "m", "b", lookup, decisions, controls | {"b/99"}, blind, None, s, reference=("ref", lookup, "loss")
    )
    by_test = {r["test"]: r for r in rows}
    assert set(by_test) == {"blind_baseline", "conformal_flags", "leakage_rate", "reference_contrast"}
    for test in ("conformal_flags", "leakage_rate"):
        row = by_test[test]
        assert row["verdict"] == gate(blind, 0.05) and not row["counted_as_evidence"] and row["p_value"] < 1e-5
        assert (row["n_controls_used"], row["n_controls_dropped"]) == (20, 1) and "b/99" in row["controls_dropped"]
    assert all(r["blind_rejected"] is True and r["blind_auc"] == 1.0 for r in rows)
    assert {r["evidence"] for r in rows if r["test"] != "blind_baseline"} == {"observational"}
    contrast = by_test["reference_contrast"]
    assert contrast["verdict"] == gate(blind, 0.05) + CONTRAST_UNDER_SHIFT and not contrast["counted_as_evidence"]
    assert by_test["conformal_flags"]["conformal_rank"] == 1 and by_test["conformal_flags"]["pac_rank"] == 0
    with pytest.raises(ValueError, match="audit.reference.method: 'zlib' has no finite score under m or ref on b"):
        model_rows("m", "b", lookup, decisions, controls, blind, None, s, reference=("ref", lookup, "zlib"))
    # the same scores without a blind rejection: an observational finding, counted, never "evidence of exposure"
    ungated = {r["test"]: r for r in model_rows("m", "b", lookup, decisions, controls, None, None, s)}
    assert ungated["conformal_flags"]["verdict"].startswith("suspects score higher than controls (p = ")
    assert ungated["conformal_flags"]["counted_as_evidence"] and ungated["conformal_flags"]["blind_rejected"] is None


def test_a_negative_control_that_rejects_closes_the_gate_for_every_observational_row():
    """Two never-exposed models on a control set that models see as different
    (every control scores lower under both): the declared negative control's
    own test rejects, so neither model's rejection is counted, and each says why."""
    controls = {f"b/{i}" for i in range(20, 40)}
    scores = {f"b/{i}": (float(i) if f"b/{i}" in controls else 100.0 + i) for i in range(40)}
    s = Settings(alpha=0.05, delta=0.1, inconclusive_auc=0.9, inconclusive_rate=0.5, seed=0)
    rows = model_rows("target", "b", {"loss": scores}, {}, controls, None, None, s)
    rows += model_rows("unexposed", "b", {"loss": scores}, {}, controls, None, None, s, negative_control=True)
    assert all(r["counted_as_evidence"] for r in rows)  # before the gate: both "find" the suspects
    gated = negative_control_gate(rows)
    assert [r["test"] for r in gated] == [r["test"] for r in rows]
    for r in gated:
        assert not r["counted_as_evidence"] and r["verdict"] == r["negative_control_gate"]
        assert r["verdict"].startswith(
            "the control set differs from the suspects in a way models see (negative control unexposed: "
            "conformal_flags (loss) p = "
        )
    # a negative control that finds nothing leaves the rows as they were
    flat = {sid: 1.0 for sid in scores}
    calm = model_rows("unexposed", "b", {"loss": flat}, {}, controls, None, None, s, negative_control=True)
    assert negative_control_gate(rows[:1] + calm) == rows[:1] + calm


def test_the_negative_control_bootstrap_carries_between_model_variation():
    """Three negative controls whose AUC of suspects over controls spreads
    around 0.7 (a shift every model sees): a target at 0.7 is not above them;
    a target that separates the sets perfectly is."""
    rng = np.random.default_rng(0)
    suspects, controls = [f"s{i}" for i in range(30)], [f"c{i}" for i in range(30)]

    def model(shift):
        return {i: float(rng.normal(shift if i.startswith("s") else 0.0)) for i in suspects + controls}

    negatives = [model(0.7), model(0.6), model(0.9)]
    same = bootstrap_test(model(0.75), negatives, suspects, controls, seed=1, resamples=500)
    assert 0.5 < same.auc_negative < 0.9 and same.p_value > 0.05 and same.ci_low < 0 < same.ci_high
    exposed = bootstrap_test(model(5.0), negatives, suspects, controls, seed=1, resamples=500)
    assert exposed.auc_target == 1.0 and exposed.p_value < 0.01 and exposed.difference > 0
    with pytest.raises(ValueError, match="needs 2 negative controls, got 1"):
        bootstrap_test(model(0.0), negatives[:1], suspects, controls, seed=1)


def test_the_blind_baselines_power_comes_from_its_own_permutation_null():
    texts = [f"def f{i}(x):\n    return x + {i % 7}\n" for i in range(24)]
    result = blind_baseline(texts, [True] * 12 + [False] * 12, seed=0, permutations=60, repeats=2)
    expected = result.null_mean + (norm.ppf(0.95) + norm.ppf(0.8)) * result.null_sd
    assert result.null_sd > 0 and result.detectable_auc(0.05) == pytest.approx(expected)
    # wider than the Mann-Whitney figure of one fit (the cross-validated AUC's null spreads more)
    assert result.detectable_auc(0.05) > detectable_auc(12, 12, 0.05) - 0.05
