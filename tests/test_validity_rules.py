"""The calibration table's ``holds`` rules (leaktrace.calibration.validity_rules)
are valid tests: simulated over thousands of exactly exchangeable data sets
(vectorised, seconds), each rule's false-alarm rate is at most its nominal
level, and each rejects a clearly miscalibrated case. The sizes are the
default run's: 21 calibration-fold non-members as controls, 43 evaluation
non-members tested, 100 re-partitions, three unexposed models.

Run as a script, it prints each rule's simulated false-alarm rate."""

import numpy as np
import pytest
from scipy.stats import binomtest

from leaktrace.calibration.conformal import conformal_p_values
from leaktrace.calibration.rates import clopper_pearson
from leaktrace.calibration.validity_rules import (
    LEVEL,
    conformal_expected_rate,
    flag_rank,
    independent_draws_p,
    pooled_models,
    pooled_models_p,
    repartition_expected_rate,
    repartition_mean,
    repartition_mean_p,
    shared_controls,
    shared_controls_p,
)

M, N_TESTED, REPARTITIONS, MODELS = 21, 43, 100, 3
ALPHAS = (0.05, 0.1, 0.2)
DATA_SETS = 2000


def flagged_counts(control: np.ndarray, tested: np.ndarray, alpha: float) -> np.ndarray:
    """Per data set (leading axes), the tested samples whose conformal p-value
    (1 + #{c >= x}) / (m + 1) is at most alpha: computed as the pipeline does."""
    m = control.shape[-1]
    exceed = (control[..., :, None] >= tested[..., None, :]).sum(axis=-2)
    return ((1.0 + exceed) / (m + 1.0) <= alpha).sum(axis=-1)


def repartition_rates(
    pool: np.ndarray, m: int, partitions: int, rng: np.random.Generator, alpha: float, plus_one: int = 1
) -> np.ndarray:
    """(data sets, partitions): each partition's false-positive rate at alpha,
    ``pool`` (data sets, N) re-partitioned uniformly into m controls and the
    rest tested. The flag is "fewer than k controls score >= x" (the p-value
    (plus_one + #{c >= x}) / (m + 1) <= alpha), read off the sorted controls."""
    s, n_pool = pool.shape
    order = np.argsort(rng.random((s, partitions, n_pool), dtype=np.float32), axis=-1)
    scores = pool[np.arange(s)[:, None, None], order]
    control, tested = np.sort(scores[..., :m], axis=-1), scores[..., m:]
    k = int(np.sum((plus_one + np.arange(0, m + 1)) / (m + 1.0) <= alpha))  # #{c >= x} < k flags x
    if k == 0:
        return np.zeros((s, partitions))
    if k > m:
        return np.ones((s, partitions))
    kth_largest = control[..., m - k]
    return (tested > kth_largest[..., None]).mean(axis=-1)


def false_alarms(p: np.ndarray) -> tuple[int, int]:
    return int(np.sum(p < LEVEL)), int(p.size)


def assert_valid(alarms: int, n: int) -> None:
    """At most 5% with its Monte Carlo error (the 99.9% Clopper-Pearson upper
    end), and not improbably above the nominal level."""
    assert clopper_pearson(alarms, n, 0.999)[1] <= 0.05, (alarms, n)
    assert binomtest(alarms, n, LEVEL, alternative="greater").pvalue > 1e-3, (alarms, n)


# --- the rules' figures by hand ---


def test_flag_rank_agrees_with_the_conformal_p_value_and_its_expectation():
    assert [flag_rank(a, 19) for a in ALPHAS] == [1, 2, 4]  # 20 alpha, exactly
    assert [flag_rank(a, 46) for a in ALPHAS] == [2, 4, 9]  # floor(47 alpha)
    assert conformal_expected_rate(0.05, 46) == pytest.approx(2 / 47) and conformal_expected_rate(0.05, 10) == 0.0
    for m in (9, 19, 29, 46):
        for a in ALPHAS:  # one tested sample beaten by each count j = 0..m of controls: those with j < k are flagged
            p = conformal_p_values(np.arange(m, dtype=float), np.arange(m + 1, dtype=float) - 0.5)
            assert int(np.sum(p <= a)) == flag_rank(a, m)
    with pytest.raises(ValueError, match="at least one control"):
        flag_rank(0.05, 0)


def test_repartition_expectation_against_enumerating_every_partition():
    """A pool of 5 with ties, 3 controls, alpha 0.5 (k = 2): every one of the
    C(5, 3) = 10 partitions enumerated by hand-written loops."""
    from itertools import combinations

    pool = np.array([0.0, 1.0, 1.0, 2.0, 3.0])
    rates = []
    for controls in combinations(range(5), 3):
        tested = [i for i in range(5) if i not in controls]
        p = conformal_p_values(pool[list(controls)], pool[tested])
        rates.append(np.mean(p <= 0.5))
    assert repartition_expected_rate(pool, 3, 0.5) == pytest.approx(np.mean(rates))
    assert repartition_expected_rate(np.arange(5.0), 3, 0.5) == pytest.approx(2 / 4)  # no ties: k / (m + 1)
    assert repartition_expected_rate(pool, 3, 0.5) < 2 / 4  # ties counted against x
    with pytest.raises(ValueError, match="no part to test"):
        repartition_expected_rate(pool, 5, 0.5)


def test_the_rules_p_values_by_hand():
    # binomial: 3 of 10 at 0.1: 1 - P(X <= 2) = 1 - (0.9^10 + 10 * 0.1 * 0.9^9 + 45 * 0.01 * 0.9^8)
    assert independent_draws_p(3, 10, 0.1) == pytest.approx(1 - (0.9**10 + 0.9**9 + 0.45 * 0.9**8))
    # beta-binomial, m = 1 control, alpha 0.5: k = 1, the FPR given the control is Beta(1, 1), uniform, so the
    # count among n tested is uniform on 0..n: P(X >= 3) among 4 = 2 / 5
    assert shared_controls_p(3, 4, 1, 0.5) == pytest.approx(2 / 5)
    assert shared_controls(0, 45, 10, 0.05).holds and not shared_controls(1, 45, 10, 0.05).holds  # k = 0: none may flag
    # the mean of [0, 0.1] against 0: excess 0.05, se 0.05, t = 1 on 1 df: P(T_1 >= 1) = 1/4
    assert repartition_mean_p(np.array([0.0, 0.1]), 0.0) == pytest.approx(0.25)
    assert repartition_mean_p(np.full(5, 0.05), 0.05) == 1.0 and repartition_mean_p(np.full(5, 0.06), 0.05) == 0.0
    assert repartition_mean([0.05], 0.05).holds is None  # one partition: no Monte Carlo error to judge by
    assert (
        pooled_models_p(np.array([0.009, 0.4])) == pytest.approx(0.018) and not pooled_models([0.009, 0.4], 0.05).holds
    )
    with pytest.raises(ValueError, match="no model"):
        pooled_models([], 0.05)


# --- false alarms under exact exchangeability ---


@pytest.mark.parametrize("m", [M, 46])
def test_shared_control_rule_false_alarms_at_most_its_level(m):
    """One control set of m and 45 tested non-members per data set, all
    i.i.d.: the flags share the controls, and the beta-binomial rule keeps
    its level where a binomial one (independent flags) would not."""
    rng = np.random.default_rng(11)
    scores = rng.normal(size=(DATA_SETS, m + N_TESTED))
    for alpha in ALPHAS:
        count = flagged_counts(scores[:, :m], scores[:, m:], alpha)
        assert_valid(*false_alarms(shared_controls_p(count, N_TESTED, m, alpha)))


@pytest.mark.parametrize("ties", [False, True])
def test_repartition_mean_rule_false_alarms_at_most_its_level(ties):
    """A pool of 64 non-members per data set (continuous scores, or five
    tied levels), 100 uniform re-partitions into 21 controls and 43 tested;
    the mean rate judged against its exact expectation with its Monte Carlo
    error."""
    rng = np.random.default_rng(12 + ties)
    data_sets = DATA_SETS // 2
    pool = rng.integers(0, 5, size=(data_sets, M + N_TESTED)) if ties else rng.normal(size=(data_sets, M + N_TESTED))
    for alpha in ALPHAS:
        rates = repartition_rates(pool.astype(float), M, REPARTITIONS, rng, alpha)
        expected = (
            np.array([repartition_expected_rate(p, M, alpha) for p in pool])
            if ties
            else conformal_expected_rate(alpha, M)
        )
        assert_valid(*false_alarms(repartition_mean_p(rates, expected)))


def test_independent_draws_and_pooled_models_false_alarms_at_most_their_level():
    rng = np.random.default_rng(13)
    for alpha in ALPHAS:  # 200 independent draws, each rejecting with probability alpha
        assert_valid(*false_alarms(independent_draws_p(rng.binomial(200, alpha, size=20 * DATA_SETS), 200, alpha)))
    # three models' p-values on one data set, uniform each: independent, correlated (a shared normal factor), identical
    z = rng.normal(size=(20 * DATA_SETS, 1 + MODELS))
    from scipy.stats import norm

    for rho in (0.0, 0.8, 1.0):
        p = norm.cdf(rho * z[:, :1] + np.sqrt(1 - rho**2) * z[:, 1:])
        assert_valid(*false_alarms(pooled_models_p(p)))


# --- each rule rejects a clearly miscalibrated case ---


def test_each_rule_rejects_a_miscalibrated_decision():
    rng = np.random.default_rng(14)
    s = 400
    # draws that reject at three times alpha
    assert np.mean(independent_draws_p(rng.binomial(200, 0.15, size=s), 200, 0.05) < LEVEL) > 0.8
    # controls from a shifted distribution (scored lower by two standard deviations): the tested are flagged too often
    control, tested = rng.normal(size=(s, M)) - 2.0, rng.normal(size=(s, N_TESTED))
    assert np.mean(shared_controls_p(flagged_counts(control, tested, 0.1), N_TESTED, M, 0.1) < LEVEL) > 0.8
    # a p-value without its + 1 (#{c >= x} / (m + 1)): one more flag rank, a mean rate of 2/20 at alpha 0.05
    rates = repartition_rates(rng.normal(size=(s, M + N_TESTED)), M, REPARTITIONS, rng, 0.05, plus_one=0)
    assert np.mean(repartition_mean_p(rates, conformal_expected_rate(0.05, M)) < LEVEL) > 0.8
    # three models that prefer the real order (p-values Beta(0.1, 1), near 0)
    assert np.mean(pooled_models_p(rng.beta(0.1, 1.0, size=(s, MODELS))) < LEVEL) > 0.8


if __name__ == "__main__":  # the false-alarm rates, for the record
    rng = np.random.default_rng(11)
    for m in (M, 46):
        scores = rng.normal(size=(DATA_SETS, m + N_TESTED))
        for alpha in ALPHAS:
            a, n = false_alarms(
                shared_controls_p(flagged_counts(scores[:, :m], scores[:, m:], alpha), N_TESTED, m, alpha)
            )
            print(f"beta-binomial m={m} n={N_TESTED} alpha={alpha}: {a}/{n} = {a / n:.4f}")
    for ties in (False, True):
        rng = np.random.default_rng(12 + ties)
        pool = (
            rng.integers(0, 5, size=(DATA_SETS // 2, M + N_TESTED))
            if ties
            else rng.normal(size=(DATA_SETS // 2, M + N_TESTED))
        ).astype(float)
        for alpha in ALPHAS:
            rates = repartition_rates(pool, M, REPARTITIONS, rng, alpha)
            expected = (
                np.array([repartition_expected_rate(p, M, alpha) for p in pool])
                if ties
                else conformal_expected_rate(alpha, M)
            )
            a, n = false_alarms(repartition_mean_p(rates, expected))
            print(f"re-partition mean ties={ties} alpha={alpha}: {a}/{n} = {a / n:.4f}")
