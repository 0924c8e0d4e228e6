"""The aggregate and audit stages on hand-made score tables: model
coordinates, the papers' sensitivity layouts, leakage rates with their
intervals, and the heatmap."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import ALPHA, TOY, toy_split

from leaktrace.artifacts import write_table
from leaktrace.calibration.leakage_rates import leakage_rates
from leaktrace.calibration.table import REAL_ORDER, count_row, write_rows
from leaktrace.config_slice import read_slice
from leaktrace.detect.scores import SCORES_SCHEMA
from leaktrace.evaluate.detection import detection_rows, subset_samples
from leaktrace.evaluate.null_check import null_check, null_check_rows
from leaktrace.evaluate.seeds import across_seeds
from leaktrace.models.backend import TokenStats
from leaktrace.models.naming import model_coordinates
from leaktrace.models.token_table import write_token_stats
from leaktrace.report.results import pivot, sensitivity_sections
from leaktrace.settings.aggregate import AggregateSettings, GrayboxInstances
from leaktrace.settings.audit import AuditSettings, SrDetectionMethods, VariantCount
from leaktrace.stages.aggregate import aggregate
from leaktrace.stages.audit import audit
from leaktrace.variants.kinds import detector_variant_counts


def test_model_coordinates():
    assert model_coordinates("reference") == {"ratio": None, "seed": None, "epoch": 0}
    assert model_coordinates("target-r0.5-s2-e3") == {"ratio": 0.5, "seed": 2, "epoch": 3}
    with pytest.raises(ValueError, match="neither"):
        model_coordinates("target-r5-e3")


def test_subsets_exclude_the_prefix_and_filtered_drops_pre_exposed():
    _, samples = toy_split()
    assert sorted(subset_samples(samples, "all")) == sorted(sid for sid, *_ in TOY[:-1])
    assert sorted(subset_samples(samples, "filtered")) == sorted(sid for sid, *_ in TOY[:-2])
    with pytest.raises(ValueError, match="no pre_exposed column"):
        subset_samples([{k: v for k, v in s.items() if k != "pre_exposed"} for s in samples], "all")


def _rows(scores, samples, alpha=ALPHA, min_per_class=2, n_resamples=200):
    return detection_rows(scores, samples, n_resamples=n_resamples, seed=1, alpha=alpha, min_per_class=min_per_class)


def test_detection_rows_on_a_toy_table():
    scores, samples = toy_split()
    rows, curves = _rows(scores, samples)
    by = {(r["subset"], r["method"]): r for r in rows}
    loss = by[("all", "loss")]
    assert (loss["n_control"], loss["n_eval"], loss["n_eval_non_members"], loss["alpha"]) == (
        2,
        7,
        4,
        ALPHA,
    )  # prefix excluded
    # flagged: tp e1 e2 e3, fp e5, tn e4 e6 e7: F1 (6/7 + 6/7) / 2; FPR 1/4
    assert loss["macro_f1"] == pytest.approx(6 / 7) and loss["fpr"] == pytest.approx(1 / 4)
    assert (loss["member_precision"], loss["member_recall"]) == (pytest.approx(3 / 4), pytest.approx(1.0))
    # non-members: all 3 predicted are, 3 of the 4 are predicted
    assert (loss["macro_precision"], loss["macro_recall"]) == (
        pytest.approx((3 / 4 + 1) / 2),
        pytest.approx((1 + 3 / 4) / 2),
    )
    assert loss["auc"] == pytest.approx(11 / 12)  # 0.5 loses to 0.56 only
    assert loss["tpr_at_1fpr"] is None and loss["tpr_at_5fpr"] is None  # 4 non-members: below 1/4, not estimable
    filtered = by[("filtered", "loss")]  # without e7 (a true negative)
    assert (filtered["n_eval"], filtered["macro_f1"]) == (6, pytest.approx((6 / 7 + 4 / 5) / 2))
    strict = {(r["subset"], r["method"]): r for r in _rows(scores, samples, alpha=0.5)[0]}[("all", "loss")]
    assert (strict["member_recall"], strict["fpr"]) == (pytest.approx(1 / 3), 0.0)  # p <= 0.5: e3 alone
    gray = by[("all", "srdetection_graybox")]  # its own flag (score > 0.55) is not the decision: the p-value is
    assert gray["macro_f1"] == pytest.approx(6 / 7)
    for method in ("srdetection_graybox", "srdetection_graybox_n1"):
        row = by[("all", method)]
        assert (row["delta_auc"], row["delta_auc_low"], row["delta_auc_high"], row["beats_auc_share"]) == (0, 0, 0, 0)
        assert (row["delta_macro_f1"], row["delta_macro_f1_low"], row["delta_macro_f1_high"]) == (0, 0, 0)
    assert loss["delta_auc"] == pytest.approx(0.0) and loss["delta_macro_f1"] == pytest.approx(0.0)
    assert (
        set(curves["filtered"]) == {"loss", "srdetection_graybox", "srdetection_graybox_n1"}
        and len(curves["filtered"]["loss"][0]) == 6
    )
    assert rows == _rows(scores, samples)[0]  # seeded


def test_srdetection_under_its_own_rule_beside_the_conformal_decision():
    scores, samples = toy_split()
    by = {(r["subset"], r["method"]): r for r in _rows(scores, samples)[0]}
    gray = by[("all", "srdetection_graybox")]
    # own rule score > 0.55: e1 (0.6), e3 (0.9) members flagged, e2 (0.5) missed; e5 (0.56) non-member flagged,
    # e4, e6, e7 not: tp 2, fn 1, fp 1, tn 3. Member P = R = 2/3, non-member P = R = 3/4.
    assert gray["own_rule_accuracy"] == pytest.approx(5 / 7)
    assert gray["own_rule_macro_precision"] == pytest.approx(17 / 24) and gray[
        "own_rule_macro_recall"
    ] == pytest.approx(17 / 24)
    assert gray["own_rule_macro_f1"] == pytest.approx((2 / 3 + 3 / 4) / 2) and gray[
        "own_rule_member_f1"
    ] == pytest.approx(2 / 3)
    assert gray["own_rule_fpr"] == pytest.approx(1 / 4)
    assert gray["own_rule_macro_f1_low"] <= gray["own_rule_macro_f1"] <= gray["own_rule_macro_f1_high"]
    assert gray["macro_f1"] == pytest.approx(6 / 7)  # the conformal decision, unchanged beside it
    # filtered subset (e7 out): tp 2, fn 1, fp 1, tn 2: member F1 2/3, non-member F1 2/3
    assert by[("filtered", "srdetection_graybox")]["own_rule_macro_f1"] == pytest.approx(2 / 3)
    assert by[("all", "loss")].get("own_rule_macro_f1") is None  # a score-only detector has no own rule


def test_own_rule_section_names_both_decisions():
    from leaktrace.report.own_rule import own_rule_sections

    scores, samples = toy_split()
    rows = [r | {"model": "target-r5-s0-e5"} for r in _rows(scores, samples)[0]]
    text = "".join(own_rule_sections(rows))
    assert "## Detectors under their own decision rule (all subset)" in text and "PPL_0 < min_i PPL_i" in text
    line = next(row for row in text.splitlines() if row.startswith("| target-r5-s0-e5 | srdetection_graybox | 7 (4) |"))
    assert "| 0.714 | 0.708 | 0.708 | 0.708 [" in line and "| 0.250 | 0.857 [" in line
    assert "| loss |" not in text
    assert own_rule_sections([r for r in rows if r["method"] == "loss"]) == []


def test_a_learned_detector_is_cross_conformal_over_its_folds():
    scores, samples = toy_split()
    # fold 0 held out c3, fold 1 c4; under fit 0 e1 scores 0.85 (above c3's 0.8), under fit 1 0.3 (below c4's 0.4)
    fold_scores = {"c3": [0.8, 0.5], "c4": [0.1, 0.4], "e1": [0.85, 0.3]}
    learned = [
        {
            **s,
            "method": "dpdllm",
            "family": "dpdllm",
            "decision": False,
            "fold": {"c3": 0, "c4": 1}.get(s["sample_id"], -1 if s["sample_id"] not in ("c1", "c2") else 0),
            "fold_scores": fold_scores.get(s["sample_id"], [s["score"], s["score"]]),
        }
        for s in scores
        if s["method"] == "loss"
    ]
    by = {(r["subset"], r["method"]): r for r in _rows(scores + learned, samples, alpha=0.5)[0]}
    # e1: c3 under fit 0 (0.8 < 0.85) no, c4 under fit 1 (0.4 >= 0.3) yes: p = 2/3, not flagged at 0.5;
    # e3 (0.9 under both) p = 1/3, flagged
    assert by[("all", "dpdllm")]["member_recall"] == pytest.approx(1 / 3)


def test_a_method_of_less_coverage_is_evaluated_on_its_own_samples_and_shrinks_no_other():
    scores, samples = toy_split()
    # a generator-specific instance that scored neither e1 nor e5 (a member and a non-member)
    scores += [
        {**s, "method": "srdetection_graybox_ast_tt"}
        for s in scores
        if s["method"] == "srdetection_graybox" and s["sample_id"] not in ("e1", "e5")
    ]
    by = {(r["subset"], r["method"]): r for r in _rows(scores, samples, n_resamples=50)[0]}
    alone = {(r["subset"], r["method"]): r for r in _rows(toy_split()[0], samples, n_resamples=50)[0]}
    for method in ("loss", "srdetection_graybox"):
        assert by[("all", method)] == alone[("all", method)]  # the same 7 evaluation samples, the same figures
    ast_tt = by[("all", "srdetection_graybox_ast_tt")]
    # its 5 samples: members e2 (p 2/3), e3 (1/3) flagged; non-members e4, e6, e7 (p 1) not
    assert (ast_tt["n_eval"], ast_tt["n_eval_non_members"]) == (5, 3)
    assert ast_tt["macro_f1"] == pytest.approx(1.0)
    # paired with the baseline restricted to the same samples, whose scores are identical: Δ 0
    assert (ast_tt["delta_auc"], ast_tt["delta_macro_f1"]) == (0, 0)


def test_a_filtered_subset_short_of_samples_says_why():
    scores, samples = toy_split()
    samples = [
        {**s, "pre_exposed": True if s["sample_id"] in ("c3", "c4", "e1") else s["pre_exposed"]} for s in samples
    ]  # no control left
    rows = {(r["subset"], r["method"]): r for r in _rows(scores, samples, n_resamples=20)[0]}
    assert rows[("filtered", "loss")].get("n_eval") is None
    assert rows[("filtered", "loss")]["note"].startswith("not evaluated: the calibration fold has no non-member")
    rows = {(r["subset"], r["method"]): r for r in _rows(scores, samples, n_resamples=20, min_per_class=20)[0]}
    note = rows[("filtered", "loss")]["note"]
    assert note == (
        "not evaluated: the pre-exposure filter clears 4 members and 3 non-members, fewer than 20 per class "
        "(4 of the 11 samples of the split flagged pre-exposed)"
    )
    assert rows[("all", "loss")]["macro_f1"] == pytest.approx(6 / 7)
    samples = [{**s, "split": "member"} if s["fold"] == "calibration" else s for s in samples]
    with pytest.raises(ValueError, match="subset 'all': the calibration fold has no non-member"):
        _rows(scores, samples, n_resamples=20)


def test_decisions_do_not_move_when_evaluation_labels_flip():
    flipped = _rows(*toy_split(flip_evaluation_labels=True), n_resamples=20)[0]
    loss = next(r for r in flipped if r["method"] == "loss" and r["subset"] == "all")
    # the same four flagged (e1, e2, e3, e5), now one member and three non-members
    assert (loss["fpr"], loss["member_recall"]) == (pytest.approx(3 / 3), pytest.approx(1 / 4))
    assert loss["auc"] == pytest.approx(1 - 11 / 12)


def test_null_check_share_beside_one_over_n_plus_one():
    # 1 of 4 flagged; n_i = 3, 1, 9, 4: expected (1/4 + 1/2 + 1/10 + 1/5) / 4 = 0.2625, inside Wilson [0.0456, 0.6994]
    row = null_check({"a": True, "b": False, "c": False, "d": False}, {"a": 3, "b": 1, "c": 9, "d": 4})
    assert (row["n_flagged"], row["rate"], row["expected_rate"], row["mean_variants"]) == (
        1,
        0.25,
        pytest.approx(0.2625),
        4.25,
    )
    assert row["verdict"] == "within CI of 1/(n+1)"
    # 10 of 10 with 9 variants each: Wilson low 10 / (10 + z^2) = 0.7225, far above 1/10
    row = null_check({str(i): True for i in range(10)}, {str(i): 9 for i in range(10)})
    assert row["rate_low"] == pytest.approx(10 / (10 + 1.959964**2), abs=1e-5)
    assert row["verdict"] == "outside CI of 1/(n+1)"
    with pytest.raises(ValueError, match="no variant count"):
        null_check({"a": True}, {})


def test_null_check_counts_detector_variants_only_and_caps_them_per_instance():
    variants = (
        [{"sample_id": "a", "kind": "original", "valid": True}]
        + [{"sample_id": "a", "kind": "rename", "valid": v} for v in (True, True, True, False)]
        + [{"sample_id": "a", "kind": "ast+tt", "valid": v} for v in (True, False)]
        + [{"sample_id": "b", "kind": "original", "valid": True}, {"sample_id": "b", "kind": "rename", "valid": True}]
    )
    counts = detector_variant_counts(variants)
    assert counts == {"a": 3, "b": 1}
    composed = detector_variant_counts(variants, "ast+tt")
    assert composed == {"a": 1, "b": 0}
    samples = [{"sample_id": "a", "kept": True}, {"sample_id": "b", "kept": True}, {"sample_id": "x", "kept": False}]
    scores = [
        {"sample_id": sid, "method": method, "decision": sid == "a"}
        for sid in ("a", "b", "x")
        for method in ("srdetection_graybox", "srdetection_graybox_n1", "loss")
    ]
    scores += [{"sample_id": "a", "method": "srdetection_graybox_ast_tt", "decision": False}]  # b has no such variant
    settings = GrayboxInstances(n_variants=10, sensitivity=(1,), generators=("ast+tt",))
    rows = {r["method"]: r for r in null_check_rows(scores, samples, counts, settings, {"ast+tt": composed})}
    assert rows["srdetection_graybox"]["n_samples"] == 2  # the unkept x is left out
    assert rows["srdetection_graybox"]["expected_rate"] == pytest.approx((1 / 4 + 1 / 2) / 2)  # n_i = 3, 1
    assert rows["srdetection_graybox_n1"]["expected_rate"] == pytest.approx(1 / 2)  # capped at 1
    tt = rows["srdetection_graybox_ast_tt"]
    assert (tt["n_samples"], tt["n_flagged"], tt["expected_rate"]) == (1, 0, pytest.approx(1 / 2))  # a: 1 variant


def test_null_check_keeps_the_samples_the_pre_exposure_filter_removed():
    """With ``pre_exposure: remove`` a flagged sample leaves the split, yet the null check (the base
    model's share of originals beating their variants) must still count it: without it the share is
    0 by construction. An ineligible sample (never judged) stays out."""
    samples = [
        {"sample_id": "a", "kept": True, "pre_exposed": False},
        {"sample_id": "r", "kept": False, "pre_exposed": True},
        {"sample_id": "x", "kept": False, "pre_exposed": None},
    ]
    scores = [{"sample_id": sid, "method": "srdetection_graybox", "decision": sid != "a"} for sid in ("a", "r", "x")]
    rows = null_check_rows(
        scores, samples, {"a": 1, "r": 1, "x": 1}, GrayboxInstances(n_variants=10, sensitivity=(), generators=())
    )
    [row] = [r for r in rows if r["method"] == "srdetection_graybox"]
    assert (row["n_samples"], row["n_flagged"], row["expected_rate"]) == (2, 1, pytest.approx(1 / 2))


def _seed_row(seed, auc, f1, tpr, method="loss", epoch=5, subset="filtered", own_f1=None):
    return {
        "model": f"target-r5-s{seed}-e{epoch}",
        "ratio": 5.0,
        "seed": seed,
        "epoch": epoch,
        "subset": subset,
        "n_eval": 10,
        "method": method,
        "family": method,
        "oracle": method == "ref_oracle",
        "auc": auc,
        "macro_f1": f1,
        "tpr_at_5fpr": tpr,
        "own_rule_macro_f1": own_f1,
    }


def test_across_seeds_mean_and_sample_sd():
    rows = [
        _seed_row(0, 0.7, 0.6, 0.2),
        _seed_row(1, 0.8, 0.8, None),
        _seed_row(2, 0.9, 0.7, 0.4),
        {**_seed_row(3, None, None, None), "n_eval": None},  # not evaluated: left out
        {**_seed_row(0, 0.5, 0.5, 0.1), "model": "reference", "ratio": None, "seed": None, "epoch": 0},
    ]
    (summary,) = across_seeds(rows)
    assert (summary["ratio"], summary["epoch"], summary["n_seeds"]) == (5.0, 5, 3)
    assert summary["auc_mean"] == pytest.approx(0.8) and summary["auc_sd"] == pytest.approx(0.1)
    assert summary["macro_f1_mean"] == pytest.approx(0.7) and summary["macro_f1_sd"] == pytest.approx(0.1)
    assert summary["tpr_at_5fpr_mean"] is None  # one seed not estimable
    assert summary["own_rule_macro_f1_mean"] is None  # a detector without its own decision
    (own,) = across_seeds(
        [_seed_row(s, 0.7, 0.5, 0.1, method="srdetection_graybox", own_f1=f) for s, f in ((0, 0.654), (1, 0.688))]
    )
    assert own["own_rule_macro_f1_mean"] == pytest.approx(0.671) and own["own_rule_macro_f1_sd"] == pytest.approx(
        0.034 / 2**0.5
    )
    with pytest.raises(ValueError, match="repeat"):
        across_seeds([_seed_row(0, 0.7, 0.6, 0.2)] * 2)


def test_sensitivity_tables_pivot_epochs_ratios_and_variant_counts():
    detection = []
    for ratio in (1.0, 5.0):
        for epoch in (1, 3):
            for seed in (0, 1):
                base = {
                    "ratio": ratio,
                    "epoch": epoch,
                    "seed": seed,
                    "subset": "filtered",
                    "tpr_at_5fpr": 0.1,
                    "n_eval": 10,
                }
                detection += [
                    {
                        **base,
                        "method": "loss",
                        "family": "loss",
                        "oracle": False,
                        "auc": 0.5 + seed / 10,
                        "macro_f1": 0.1 * epoch + ratio / 100,
                    },
                    {
                        **base,
                        "method": "srdetection_graybox",
                        "family": "srdetection_graybox",
                        "oracle": False,
                        "auc": 0.6,
                        "macro_f1": 0.6,
                    },
                    {
                        **base,
                        "method": "srdetection_graybox_n3",
                        "family": "srdetection_graybox",
                        "oracle": False,
                        "auc": 0.7,
                        "macro_f1": 0.7,
                    },
                ]
    seeds = across_seeds(detection)
    text = "\n".join(sensitivity_sections(seeds))
    assert text.index("## AUC by epoch (mixing ratio 1:1, filtered subset)") < text.index(
        "## Macro F1 by epoch (mixing ratio 1:1, filtered subset)"
    )
    assert "## SrDetection gray-box Macro F1 by variant count n (mixing ratio 1:5, filtered subset)" in text
    assert "## AUC by mixing ratio (epoch 3, filtered subset)" in text
    rows, columns = pivot(
        [r for r in seeds if r["ratio"] == 5.0], "epoch", lambda r: r["auc_mean"], lambda e: f"epoch {e}"
    )
    assert columns == ["method", "epoch 1", "epoch 3"]
    assert rows[0] == {"method": "loss", "epoch 1": pytest.approx(0.55), "epoch 3": pytest.approx(0.55)}
    assert "| loss | 0.550 ± 0.071 | 0.550 ± 0.071 |" in text  # sd of 0.5 and 0.6


def _scores(decisions: dict[str, list[bool]]) -> list[dict]:
    return [
        {"sample_id": f"b/{i}", "method": method, "family": method, "score": 1.0 if d else -1.0, "decision": d}
        for method, ds in decisions.items()
        for i, d in enumerate(ds)
    ]


def test_leakage_rate_beside_the_chance_rate_of_each_samples_own_variant_count():
    scores = _scores({"srdetection_graybox": [True, False, False, False], "loss": [True] * 4})
    counts = {"srdetection_graybox": {"b/0": 3, "b/1": 1, "b/2": 9, "b/3": 4}}
    (gray,) = leakage_rates("m", "b", scores, counts, set(), 0.05, None, 0.5)
    assert (gray["detector"], gray["n_samples"], gray["n_flagged"], gray["leakage_rate"]) == ("gray-box", 4, 1, 0.25)
    assert gray["rate_low"] == pytest.approx(0.00631, abs=1e-4) and gray["rate_high"] == pytest.approx(
        0.80589, abs=1e-4
    )
    # chances 1/4, 1/2, 1/10, 1/5: mean 0.2625; P(at least one flag) = 1 - 3/4 * 1/2 * 9/10 * 4/5 = 0.73
    assert (gray["null"], gray["null_rate"], gray["p_value"]) == (
        "chance 1/(n_i + 1)",
        pytest.approx(0.2625),
        pytest.approx(0.73),
    )
    assert gray["calibration"].startswith("uncalibrated") and gray.get("n_flagged_at_alpha") is None


def test_leakage_rate_beside_a_control_sets_rate_with_fisher_and_conformal_decisions():
    scores = _scores({"srdetection_graybox": [True, True, True, False, False, False]})
    (gray,) = leakage_rates("m", "b", scores, {}, {"b/3", "b/4", "b/5", "b/9"}, 0.25, None, 0.5)
    # suspect 3 of 3 flagged, control 0 of 3: Fisher's one-sided p = 1 / C(6, 3) = 0.05
    assert (gray["n_samples"], gray["null"], gray["null_n"], gray["null_rate"]) == (3, "control set", 3, 0.0)
    assert gray["null_high"] == pytest.approx(0.7076, abs=1e-4) and gray["p_value"] == pytest.approx(0.05)
    # every suspect scores above the 3 controls: conformal p = 1/4 <= 0.25
    assert gray["n_flagged_at_alpha"] == 3 and gray["calibration"].startswith("control set: 3 known-unseen")


def test_audit_writes_table_and_heatmap_and_refuses_scores_without_srdetection(tmp_path):
    paths = {}
    for model, flags in (("base", [False, False, True]), ("lora", [True, True, True])):
        path = tmp_path / f"{model}.parquet"
        write_table(_scores({"srdetection_graybox": flags, "srdetection_blackbox": flags[::-1]}), SCORES_SCHEMA, path)
        paths[(model, "humaneval")] = path
    pq.write_table(
        pa.Table.from_pylist(
            [{"sample_id": f"b/{i}", "kind": "rename", "valid": True} for i in range(3) for _ in range(4)]
        ),
        tmp_path / "variants.parquet",
    )
    settings = AuditSettings(
        calibration_alpha=0.05,
        contamination_alpha=0.05,
        inconclusive_rate=0.5,
        methods=SrDetectionMethods(VariantCount(n_variants=3), VariantCount(n_variants=10)),
    )
    audit(paths, {"humaneval": tmp_path / "variants.parquet"}, settings, tmp_path / "audit")
    rows = pq.read_table(tmp_path / "audit" / "leakage_rates.parquet").to_pylist()
    rates = {(r["model"], r["detector"]): r["leakage_rate"] for r in rows}
    assert rates == {
        ("base", "gray-box"): pytest.approx(1 / 3),
        ("base", "black-box"): pytest.approx(1 / 3),
        ("lora", "gray-box"): 1.0,
        ("lora", "black-box"): 1.0,
    }
    # gray-box compares at most 3 of the 4 variants (chance 1/4), black-box all 4 (1/5)
    assert {r["detector"]: r["null_rate"] for r in rows if r["model"] == "base"} == {
        "gray-box": 0.25,
        "black-box": pytest.approx(0.2),
    }
    assert (tmp_path / "audit" / "heatmap.png").stat().st_size > 1000
    table = (tmp_path / "audit" / "leakage_rates.md").read_text()
    assert "| lora | humaneval | gray-box | 3 | 3 |" in table and "| uncalibrated: no control set" in table
    held_out = tmp_path / "held_out.txt"
    held_out.write_text("b/0\n")
    audit(paths, {"humaneval": tmp_path / "variants.parquet"}, settings, tmp_path / "audit-held", held_out)
    assert {r["null_n"] for r in pq.read_table(tmp_path / "audit-held" / "leakage_rates.parquet").to_pylist()} == {1}
    write_table(_scores({"loss": [True]}), SCORES_SCHEMA, tmp_path / "loss.parquet")
    with pytest.raises(ValueError, match="no SrDetection scores"):
        audit(
            {("x", "humaneval"): tmp_path / "loss.parquet"},
            {"humaneval": tmp_path / "variants.parquet"},
            settings,
            tmp_path / "bad",
        )


def test_the_audit_tables_command_names_a_mistyped_inconclusive_rate_by_its_config_key(tmp_path, capsys):
    from leaktrace.cli import main

    settings = {
        "calibration_alpha": 0.05,
        "contamination_alpha": 0.05,
        "inconclusive_rate": None,
        "methods": {"srdetection_graybox": {"n_variants": 3}},
    }
    argv = ["audit-tables", "--scores", "m:b=s.parquet", "--variants", "b=v.parquet"]
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--settings", json.dumps(settings), "--output-dir", str(tmp_path)])
    assert stopped.value.code == 2
    assert "config audit.inconclusive_rate: expected a number, got None" in capsys.readouterr().err


def write_synthetic_run(root, *, n_samples, models, methods, seed=0):
    """Inputs of the aggregate stage: ``models`` scoring every sample with
    ``methods`` (target members shifted up by 0.8), 30% of each class in the
    calibration fold, every fifth sample flagged pre-exposed, sample 0 as
    ReCaLL's prefix, three renamed variants each. Returns the score and token
    paths by model."""
    rng = np.random.default_rng(seed)
    samples = [
        {
            "sample_id": f"b/{i:03d}",
            "kept": True,
            "reason": None,
            "split": "member" if i % 2 else "non-member",
            "fold": "recall-prefix" if i == 0 else "calibration" if i // 2 % 10 < 3 else "evaluation",
            "pre_exposed": i % 5 == 1,
        }
        for i in range(n_samples)
    ]
    pq.write_table(pa.Table.from_pylist(samples), root / "samples.parquet")
    pq.write_table(
        pa.Table.from_pylist(
            [
                {"sample_id": s["sample_id"], "variant_id": v, "kind": "rename" if v else "original", "valid": True}
                for s in samples
                for v in range(4)
            ]
        ),
        root / "variants.parquet",
    )
    scores, tokens = {}, {}
    for model in models:
        rows = []
        for s in samples:
            shift = 0.8 * (s["split"] == "member" and model != "reference")
            for method in methods:
                score = float(rng.normal() + shift)
                gray = method.startswith("srdetection_graybox")
                rows.append(
                    {
                        "sample_id": s["sample_id"],
                        "method": method,
                        "family": "srdetection_graybox" if gray else method,
                        "score": score,
                        "decision": score > 0 if gray else None,
                    }
                )
        scores[model], tokens[model] = root / model / "scores.parquet", root / model / "tokens.parquet"
        write_table(rows, SCORES_SCHEMA, scores[model])
        write_token_stats(
            [(s["sample_id"], 0, "text") for s in samples],
            [
                TokenStats(
                    np.arange(4, dtype=np.int32),
                    np.full(4, -2.0 - 0.1 * (s["split"] == "member"), dtype=np.float32),
                    None,
                    None,
                    False,
                )
                for s in samples
            ],
            tokens[model],
        )
    return scores, tokens


AGGREGATE_SETTINGS = AggregateSettings(
    bootstrap_resamples=50,
    filtered_min_per_class=5,
    calibration_alpha=0.1,
    srdetection_graybox=GrayboxInstances(n_variants=10, sensitivity=(1,), generators=()),
)


def test_aggregate_writes_both_subsets_seeds_and_the_null_check(tmp_path):
    models = ["reference"] + [f"target-r5-s{seed}-e{epoch}" for seed in (0, 1) for epoch in (1, 3)]
    methods = ["loss", "ref_oracle", "srdetection_graybox", "srdetection_graybox_n1"]
    scores, tokens = write_synthetic_run(tmp_path, n_samples=41, models=models, methods=methods)
    out = tmp_path / "aggregate"
    aggregate(tmp_path / "samples.parquet", scores, tokens, tmp_path / "variants.parquet", AGGREGATE_SETTINGS, 7, out)
    detection = pq.read_table(out / "detection.parquet").to_pylist()
    assert len(detection) == len(models) * len(methods) * 2
    assert {(r["subset"], r["n_eval"]) for r in detection} == {("all", 28), ("filtered", 22)}
    assert {r["seed"] for r in detection} == {None, 0, 1}
    assert {r["method"] for r in detection if r["oracle"]} == {"ref_oracle"}
    assert {r["tpr_at_1fpr"] for r in detection} == {None}  # 14 or 10 evaluation non-members
    seeds = pq.read_table(out / "across_seeds.parquet").to_pylist()
    assert len(seeds) == 2 * len(methods) * 2 and {r["n_seeds"] for r in seeds} == {2}
    null = {r["method"]: r for r in pq.read_table(out / "null_check.parquet").to_pylist()}
    assert null["srdetection_graybox"]["n_samples"] == 41 and null["srdetection_graybox"]["expected_rate"] == 0.25
    assert null["srdetection_graybox_n1"]["expected_rate"] == 0.5
    report = (out / "report.md").read_text()
    assert (
        report.index("## Null check")
        < report.index("## Headline: epoch 3, mixing ratio 1:5, filtered split")
        < report.index("## Headline: epoch 3, mixing ratio 1:5, unfiltered split")
    )
    assert "| method | n eval | AUC | TPR at 5% FPR | macro F1 | macro F1, own rule | seed 0 | seed 1 |" in report
    # the summary links one page per family, each beside it; the detection tables moved to theirs
    detection_page = (out / "detection.md").read_text()
    assert "## Detection under reference" in detection_page and "## Detection under" not in report
    assert "| ref_oracle (oracle) |" in detection_page and "| n/e |" in detection_page
    assert detection_page.index("## Detection under reference") < detection_page.index(
        "## Detectors under their own decision rule (filtered subset)"
    )
    for family in ("detection", "calibration", "functional", "scans", "mutations", "contamination", "watermark"):
        assert f"]({family}.md)" in report and (out / f"{family}.md").is_file(), family
    assert "Nothing of this family in this run" in (out / "watermark.md").read_text()
    own = [r for r in detection if r["own_rule_macro_f1"] is not None]
    assert {r["method"] for r in own} == {
        "srdetection_graybox",
        "srdetection_graybox_n1",
    }  # loss and Ref record no decision
    assert all(r["own_rule_macro_f1_low"] <= r["own_rule_macro_f1"] <= r["own_rule_macro_f1_high"] for r in own)
    assert {r["own_rule_macro_f1_mean"] is None for r in seeds if r["method"] == "loss"} == {True}
    before = {p.name: p.read_bytes() for p in out.glob("*.parquet")}
    aggregate(tmp_path / "samples.parquet", scores, tokens, tmp_path / "variants.parquet", AGGREGATE_SETTINGS, 7, out)
    assert before == {p.name: p.read_bytes() for p in out.glob("*.parquet")}
    # other families' row files join the calibration table, which the report shows
    write_rows([count_row("exchangeability", "reference", REAL_ORDER, 0.05, 1, 1)], tmp_path / "rows.parquet")
    aggregate(
        tmp_path / "samples.parquet",
        scores,
        tokens,
        tmp_path / "variants.parquet",
        AGGREGATE_SETTINGS,
        7,
        out,
        calibration_rows=(tmp_path / "rows.parquet",),
    )
    (row,) = pq.read_table(out / "calibration.parquet").to_pylist()
    assert (row["method"], row["null"], row["rejections"], row["holds"]) == ("exchangeability", "real order", 1, True)
    report = (out / "calibration.md").read_text()
    assert "### Null: real order" in report and "randomised at release" in report
    assert "- **real order**:" in (out / "report.md").read_text()


def test_a_level_no_conformal_p_value_can_reach_is_said_beside_the_decisions():
    """The toy split has 2 controls: a conformal p-value is at least 1/3. At
    alpha 0.05 nothing can be flagged (the default's 18 controls give 1/19 =
    0.053 > 0.05), and the section says so instead of showing a macro F1 of
    all-negative decisions as the detector's; at alpha 0.7 it is reachable."""
    from leaktrace.report.results import detection_sections, unreachable_alpha

    scores, samples = toy_split()
    for alpha, said in ((0.05, True), (ALPHA, False)):
        rows = [
            r | {"model": "m"}
            for r in detection_rows(scores, samples, n_resamples=20, seed=1, alpha=alpha, min_per_class=2)[0]
        ]
        text = "\n".join(detection_sections(rows))
        assert ("**No sample can be flagged at this α**: with 2 controls" in text) is said
    assert unreachable_alpha({"n_control": 19, "alpha": 0.05}) == ""
    assert "at least 19 non-members" in unreachable_alpha({"n_control": 18, "alpha": 0.05})


def test_the_aggregate_slice_leaves_out_a_graybox_family_the_config_does_not_run():
    """score.methods.srdetection_graybox is optional (a family left out is not run): the
    aggregate's slice then leaves it out, and the stage reads it as None."""
    import json

    from leaktrace.stage_entry import stage_settings

    config = {
        "aggregate": {"bootstrap_resamples": 10, "filtered_min_per_class": 5, "blind_permutations": 3},
        "calibration": {"alpha": 0.05},
        "score": {"methods": {"loss": {}}},
    }
    assert json.loads(stage_settings("aggregate", config)) == {
        "bootstrap_resamples": 10,
        "filtered_min_per_class": 5,
        "calibration_alpha": 0.05,
    }
    assert (
        read_slice(AggregateSettings, json.loads(stage_settings("aggregate", config)), "aggregate").srdetection_graybox
        is None
    )
    config["score"]["methods"]["srdetection_graybox"] = {"n_variants": 3, "sensitivity": [1], "generators": []}
    assert json.loads(stage_settings("aggregate", config))["srdetection_graybox"] == {
        "n_variants": 3,
        "sensitivity": [1],
        "generators": [],
    }
