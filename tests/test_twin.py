"""The complement twin: its split, the sign-flip test (hand values by
enumeration), its pairing of scores (label-fitted detectors on the
evaluation fold only) and length-grouped training batches."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow.parquet as pq
import pytest

from leaktrace.artifacts import write_table
from leaktrace.calibration.sign_flip import RESAMPLES, paired_differences, sign_flip_test
from leaktrace.data.split import RECALL_PREFIX, SAMPLES_SCHEMA, complement
from leaktrace.detect.scores import SCORES_SCHEMA
from leaktrace.evaluate.metrics import pooled_auc
from leaktrace.models.naming import target_of
from leaktrace.settings.twin import TwinSettings
from leaktrace.stages.split import twin_split
from leaktrace.stages.twin import twin_tables
from leaktrace.train.lora import length_grouped_order, megabatch_size, padding_share


def test_sign_flip_p_of_five_pairs_is_the_enumerated_share():
    # five samples, each scored under the model that trained on it and the one that did not
    seen = {"a": 3.0, "b": 5.0, "c": 1.0, "d": 7.0, "e": 2.25}
    unseen = {"a": 2.0, "b": 3.0, "c": 1.5, "d": 4.0, "e": 2.0}
    d = paired_differences(seen, unseen, ["a", "b", "c", "d", "e"])
    assert d.tolist() == [1.0, 2.0, -0.5, 3.0, 0.25]
    # by hand: T = 5.75 and sum |d| = 6.75, so a sign vector reaches T iff the |d| it makes negative sum to at
    # most 0.5: none, {0.5} or {0.25}; 3 of the 2^5 = 32 vectors
    test = sign_flip_test(d, seed=1)
    assert test.exact and test.n_sign_vectors == 32 and test.n == 5
    assert test.statistic == pytest.approx(5.75) and test.mean_difference == pytest.approx(1.15)
    assert test.p_value == pytest.approx(3 / 32, abs=1e-12)
    # the same count by brute force over every sign vector
    brute = sum(np.dot(signs, np.abs(d)) >= d.sum() - 1e-12 for signs in itertools.product((-1, 1), repeat=5)) / 32
    assert test.p_value == pytest.approx(brute, abs=1e-12)
    assert sign_flip_test(d, seed=2).p_value == test.p_value  # exact: no randomness
    # every pair pointing the other way: the observed vector is the least extreme, p = 1
    assert sign_flip_test(-np.abs(d), seed=1).p_value == pytest.approx(1.0)


def test_sign_flip_beyond_twenty_pairs_draws_ten_thousand_sign_vectors():
    d = np.linspace(1.0, 2.0, 25)  # all positive: only the all-plus vector (chance 2^-25) reaches T
    test = sign_flip_test(d, seed=3)
    assert not test.exact and test.n_sign_vectors == RESAMPLES == 10_000
    assert test.p_value == pytest.approx(1 / (RESAMPLES + 1))  # (1 + #>=) / (R + 1), never 0
    mixed = np.r_[d, -d[:20]]
    assert sign_flip_test(mixed, seed=4).p_value == sign_flip_test(mixed, seed=4).p_value  # seeded
    assert 0 < sign_flip_test(mixed, seed=4).p_value <= 1


def test_sign_flip_refuses_empty_and_non_finite_differences():
    with pytest.raises(ValueError, match="non-empty"):
        sign_flip_test([], seed=0)
    with pytest.raises(ValueError, match="1 paired differences are not finite"):
        sign_flip_test([1.0, float("nan")], seed=0)
    with pytest.raises(ValueError, match="1 samples lack a score"):
        paired_differences({"a": 1.0}, {"a": 0.0, "b": 1.0}, ["a", "b"])


def test_complement_swaps_the_classes_and_keeps_folds_and_the_recall_prefix():
    assert complement("member", "calibration") == "non-member"
    assert complement("non-member", "evaluation") == "member"
    assert complement("non-member", RECALL_PREFIX) == "non-member"  # neither model trains on ReCaLL's prefix
    assert complement(None, None) is None
    with pytest.raises(ValueError, match="unknown split 'held-out'"):
        complement("held-out", "evaluation")


def _samples(rows: list[tuple[str, str, str, bool]]) -> list[dict]:
    return [{"sample_id": sid, "kept": kept, "split": split, "fold": fold} for sid, split, fold, kept in rows]


def test_twin_split_swaps_members_and_non_members_and_nothing_else(tmp_path):
    rows = _samples(
        [
            ("h/0", "member", "calibration", True),
            ("h/1", "non-member", "calibration", True),
            ("h/2", "member", "evaluation", True),
            ("h/3", "non-member", "evaluation", True),
            ("h/4", "non-member", RECALL_PREFIX, False),
            ("h/5", None, None, False),
        ]
    )
    write_table(rows, SAMPLES_SCHEMA, tmp_path / "samples.parquet")
    twin_split(tmp_path / "samples.parquet", tmp_path / "twin.parquet")
    before = pq.read_table(tmp_path / "samples.parquet")
    after = pq.read_table(tmp_path / "twin.parquet")
    assert after.schema == before.schema
    assert after.column("split").to_pylist() == ["non-member", "member", "non-member", "member", "non-member", None]
    for name in before.column_names:
        if name != "split":
            assert after.column(name).equals(before.column(name))


def _scores(path, table: dict[str, dict[str, float]], families: dict[str, str] | None = None) -> None:
    rows = [
        {"sample_id": sid, "method": m, "family": (families or {}).get(m, m), "score": s, "decision": None}
        for m, by_id in table.items()
        for sid, s in by_id.items()
    ]
    write_table(rows, SCORES_SCHEMA, path)


def test_twin_pairs_each_sample_seen_minus_unseen_and_pairs_label_fitted_detectors_on_the_evaluation_fold(tmp_path):
    # members of the target: a, b (calibration), c (evaluation); non-members (the twin's members): d, e, f;
    # g is ReCaLL's prefix and never paired
    write_table(
        _samples(
            [
                ("a", "member", "calibration", True),
                ("b", "member", "calibration", True),
                ("c", "member", "evaluation", True),
                ("d", "non-member", "calibration", True),
                ("e", "non-member", "evaluation", True),
                ("f", "non-member", "evaluation", True),
                ("g", "non-member", RECALL_PREFIX, False),
            ]
        ),
        SAMPLES_SCHEMA,
        tmp_path / "samples.parquet",
    )
    target = {
        "loss": {"a": 3.0, "b": 5.0, "c": 1.0, "d": 4.0, "e": 2.0, "f": 0.0, "g": 9.0},
        "dpdllm": {s: 0.5 + 0.1 * k for k, s in enumerate("abcdef")},
    }
    twin = {
        "loss": {"a": 2.0, "b": 3.0, "c": 1.5, "d": 7.0, "e": 2.25, "f": 1.0, "g": -9.0},
        "dpdllm": {s: 0.5 for s in "abcdef"},
    }
    _scores(tmp_path / "target.parquet", target)
    _scores(tmp_path / "twin.parquet", twin)
    twin_tables(
        tmp_path / "samples.parquet",
        {"twin-r5-s0-e3": tmp_path / "twin.parquet"},
        {"target-r5-s0-e3": tmp_path / "target.parquet"},
        TwinSettings(contamination_alpha=0.1),
        11,
        tmp_path,
    )
    rows = {r["method"]: r for r in pq.read_table(tmp_path / "twin.parquet").to_pylist()}
    loss = rows["loss"]
    # d = target - twin for the target's members (a, b, c), twin - target for its non-members (d, e, f):
    # 1, 2, -0.5, 3, 0.25, 1 -> T = 6.75; sum |d| = 7.75, so the negated |d| must sum to <= 0.5:
    # none, {0.5}, {0.25}: 3 of 64
    assert (loss["n"], loss["n_target_members"], loss["samples"]) == (6, 3, "all folds")
    assert loss["statistic"] == pytest.approx(6.75) and loss["exact"] and loss["n_sign_vectors"] == 64
    assert loss["p_value"] == pytest.approx(3 / 64) and loss["rejected"]
    assert (loss["model"], loss["twin"], loss["ratio"], loss["seed"], loss["epoch"]) == (
        "target-r5-s0-e3",
        "twin-r5-s0-e3",
        5.0,
        0,
        3,
    )
    # target: members 3, 5, 1 against non-members 4, 2, 0 win 2 + 3 + 1 = 6 of 9 pairs; the twin: its members
    # d, e, f (7, 2.25, 1) against a, b, c (2, 3, 1.5) win 3 + 2 + 0 = 5 of 9
    assert loss["auc_target"] == pytest.approx(6 / 9)
    assert loss["auc_twin"] == pytest.approx(5 / 9)
    seen = np.array([3.0, 5.0, 1.0, 7.0, 2.25, 1.0])
    unseen = np.array([2.0, 3.0, 1.5, 4.0, 2.0, 0.0])
    wins = sum((s > u) + 0.5 * (s == u) for s in seen for u in unseen)
    assert loss["auc_pooled"] == pytest.approx(wins / 36)
    # DPDLLM's classifiers saw the calibration fold's labels: its pairs are c, e, f only
    dpdllm = rows["dpdllm"]
    assert (dpdllm["n"], dpdllm["n_target_members"], dpdllm["samples"]) == (3, 1, "evaluation fold")
    assert dpdllm["statistic"] == pytest.approx((0.7 - 0.5) + (0.5 - 0.9) + (0.5 - 1.0))
    section = (tmp_path / "twin.md").read_text()
    assert "## The complement twin" in section and "epoch 3: 1 of 2" in section
    assert (tmp_path / "twin.png").stat().st_size > 1000


def test_twin_without_its_target_is_a_clear_error(tmp_path):
    write_table(
        _samples([("a", "member", "evaluation", True), ("b", "non-member", "evaluation", True)]),
        SAMPLES_SCHEMA,
        tmp_path / "samples.parquet",
    )
    _scores(tmp_path / "s.parquet", {"loss": {"a": 1.0, "b": 0.0}})
    with pytest.raises(ValueError, match="twin twin-r5-s0-e1 has no scores of its target target-r5-s0-e1"):
        twin_tables(
            tmp_path / "samples.parquet",
            {"twin-r5-s0-e1": tmp_path / "s.parquet"},
            {"target-r5-s0-e3": tmp_path / "s.parquet"},
            TwinSettings(contamination_alpha=0.05),
            0,
            tmp_path,
        )
    with pytest.raises(ValueError, match="'target-r5-s0-e1' is not a twin model name"):
        target_of("target-r5-s0-e1")


def test_pooled_auc_counts_every_seen_score_against_every_unseen_one():
    assert pooled_auc(np.array([2.0, 3.0, 4.0]), np.array([0.0, 1.0, 1.5])) == 1.0
    assert pooled_auc(np.array([1.0, 3.0]), np.array([2.0, 1.0])) == pytest.approx((0.5 + 0 + 1 + 1) / 4)


def test_length_grouped_batches_cut_padding_and_keep_every_sequence_once():
    rng = np.random.default_rng(0)
    lengths = rng.integers(20, 510, size=203)
    assert megabatch_size(203, 8) == 6  # Hugging Face's rule: 203 // 32, at most 50
    assert megabatch_size(10, 8) == 1 and megabatch_size(100_000, 8) == 50
    orders = [length_grouped_order(lengths, 8, np.random.default_rng(5)) for _ in range(2)]
    assert np.array_equal(*orders)  # seeded
    order = orders[0]
    assert sorted(order.tolist()) == list(range(203))
    grouped, shuffled = (
        padding_share(lengths, order, 8),
        padding_share(lengths, np.random.default_rng(5).permutation(203), 8),
    )
    assert grouped < shuffled / 3
    # batches start at multiples of 8 with the one short batch last; every batch lies in one megabatch
    batches = [set(order[s : s + 8].tolist()) for s in range(0, 203, 8)]
    assert [len(b) for b in batches] == [8] * 25 + [3]
    # a new epoch draws new batches, not the same ones reordered
    again = length_grouped_order(lengths, 8, np.random.default_rng(6))
    assert {frozenset(b) for b in batches} != {frozenset(again[s : s + 8].tolist()) for s in range(0, 203, 8)}
    # by hand: batches (4, 3) and (2, 1) are 7 + 3 tokens in 2 x 4 + 2 x 2 cells
    assert padding_share([1, 2, 3, 4], [3, 2, 1, 0], 2) == pytest.approx(1 - 10 / 12)
    # an epoch of fewer than 4 megabatches of 2 batches is one batch per megabatch: the permutation's own batches
    tiny = length_grouped_order([5, 1, 4, 2, 3, 9, 7], 2, np.random.default_rng(0))
    perm = np.random.default_rng(0).permutation(7)
    assert {frozenset(tiny[s : s + 2].tolist()) for s in (0, 2, 4)} == {
        frozenset(perm[s : s + 2].tolist()) for s in (0, 2, 4)
    }
    assert tiny[6] == perm[6]


def test_label_fitted_families_are_exactly_those_whose_methods_read_a_fitted_classifier():
    from leaktrace.detect.registry import FAMILIES, family_params

    for name, family in FAMILIES.items():
        if name == "dc_pdd":  # needs token counts to build; a gray-box statistic, fitted on nothing
            assert not family.label_fitted
            continue
        methods = family.build(family_params(name, None), None)
        assert family.label_fitted == any(m.needs_learned for m in methods) == (name in ("dpdllm", "veilprobe")), name


def test_twin_epochs_outside_the_training_epochs_stop_the_plan_naming_the_key(tmp_path):
    from helpers import snakemake, write_config

    config = write_config(tmp_path, {"contamination": {"twin_epochs": [1, 2]}})  # micro trains epoch 1 only
    result = snakemake(tmp_path, "-n", "--configfile", str(config))
    assert result.returncode != 0
    assert "contamination.twin_epochs [2] are not among train.epochs [1]" in result.stdout + result.stderr
    off = write_config(tmp_path, {"contamination": {"twin": False}})
    planned = snakemake(tmp_path, "-n", "--configfile", str(off))
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert "twin_mix" not in planned.stdout and "rule twin:" not in planned.stdout


def test_the_twin_command_names_a_mistyped_alpha_by_its_config_key(tmp_path, capsys):
    from leaktrace.cli import main

    argv = ["twin", "--samples", "s.parquet", "--twins", "twin-r5-s0-e1=t.parquet", "--targets"]
    argv += ["target-r5-s0-e1=u.parquet", "--settings", '{"contamination_alpha": null}', "--seed", "0"]
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--output-dir", str(tmp_path)])
    assert stopped.value.code == 2
    assert "config contamination.alpha: expected a number, got None" in capsys.readouterr().err
