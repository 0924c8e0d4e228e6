"""The exposure-dose experiment: its statistics by hand-computed values, the
dose model names, the randomised published order, the stage on hand-made
score tables, and (slow) a tiny end-to-end run of the micro testbed."""

import json
import math
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from helpers import REPO, snakemake, write_config

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.published_order import published_order
from leaktrace.evaluate.dose import (
    DATASET_INFERENCE,
    PER_SAMPLE,
    WATERMARK,
    per_sample_result,
    smallest_copies,
    summarise,
)
from leaktrace.evaluate.proportions import wilson_interval
from leaktrace.models.naming import dose_labels, dose_model
from leaktrace.seeding import derive_seed
from leaktrace.settings.contamination import DatasetInferenceSettings
from leaktrace.settings.dose import DoseSettings
from leaktrace.stages.dose import dose_order, dose_table


def test_per_sample_result_by_hand():
    # members 3, 4, 5 all above non-members 0, 1, 2: AUC 1; the exact one-sided Mann-Whitney p is 1 / C(6, 3) = 1/20
    result = per_sample_result([3, 4, 5], [0, 1, 2], fpr=0.34)
    assert result["auc"] == 1.0 and result["p_value"] == pytest.approx(1 / 20)
    assert result["tpr"] == 1.0 and result["n_flagged"] == 3 and result["n_members"] == 3
    # 3 non-members cannot show a 5% FPR: the TPR is not estimable there (None), the p-value still is
    assert per_sample_result([3, 4, 5], [0, 1, 2], fpr=0.05)["tpr"] is None
    # member 3 above both non-members, member 1 above one: AUC (2 + 1) / 4; at FPR 1/2 the threshold 1 flags both members
    mixed = per_sample_result([1.0, 3.0], [2.0, 0.0], fpr=0.5)
    assert mixed["auc"] == pytest.approx(0.75) and mixed["tpr"] == 1.0 and mixed["n_flagged"] == 2
    with pytest.raises(ValueError, match="members and non-members"):
        per_sample_result([], [1.0], fpr=0.05)


def _result(test, copies, epochs, seed, p, **extra):
    return {
        "test": test,
        "method": "loss" if test == PER_SAMPLE else "",
        "copies": copies,
        "epochs": epochs,
        "seed": seed,
        "p_value": p,
        **extra,
    }


def test_summary_rates_medians_and_smallest_dose_by_hand():
    results = (
        [_result(DATASET_INFERENCE, 1, 1, s, p) for s, p in enumerate([0.01, 0.2, 0.3])]
        + [_result(DATASET_INFERENCE, 2, 1, s, p) for s, p in enumerate([0.01, 0.2, 0.03])]
        + [_result(DATASET_INFERENCE, 4, 1, s, p) for s, p in enumerate([0.01, 0.04, 0.05])]
        + [_result(DATASET_INFERENCE, 1, 5, s, p) for s, p in enumerate([1e-6, 1e-6, 1e-6])]
        + [_result(WATERMARK, 1, 1, 0, None), _result(WATERMARK, 1, 1, 1, 0.5)]
        + [
            _result(PER_SAMPLE, 1, 1, s, p, auc=a, tpr=t, n_flagged=f, n_members=10)
            for s, p, a, t, f in [(0, 0.001, 0.9, 0.5, 5), (1, 0.01, 0.8, 0.2, 2)]
        ]
    )
    rows = {(r["test"], r["copies"], r["epochs"]): r for r in summarise(results, alpha=0.05, power=0.8)}
    k2 = rows[(DATASET_INFERENCE, 2, 1)]
    assert (k2["n_detected"], k2["n_tested"], k2["detection_rate"]) == (2, 3, pytest.approx(2 / 3))
    assert k2["median_p"] == 0.03 and (k2["rate_ci_low"], k2["rate_ci_high"]) == pytest.approx(wilson_interval(2, 3))
    # 1/3, 2/3, then 3/3 at k = 4 (0.05 <= alpha counts); the 5-epoch row detects everywhere but is not a one-pass dose
    assert {r["smallest_copies"] for (t, _, _), r in rows.items() if t == DATASET_INFERENCE} == {4}
    wm = rows[(WATERMARK, 1, 1)]
    assert (wm["n_seeds"], wm["n_tested"], wm["n_detected"], wm["median_p"]) == (2, 1, 0, 0.5)
    assert wm["smallest_copies"] is None
    loss = rows[(PER_SAMPLE, 1, 1)]
    assert loss["tpr_mean"] == pytest.approx(0.35) and loss["auc_mean"] == pytest.approx(0.85)
    assert (loss["auc_min"], loss["auc_max"]) == (0.8, 0.9)
    assert (loss["tpr_ci_low"], loss["tpr_ci_high"]) == pytest.approx(
        wilson_interval(7, 20)
    )  # 5 + 2 of 10 + 10 members
    assert loss["smallest_copies"] == 1
    with pytest.raises(ValueError, match="unknown test"):
        summarise([_result("a guess", 1, 1, 0, 0.1)], alpha=0.05, power=0.8)


def test_smallest_copies_needs_the_power_and_one_pass():
    rows = [
        {"test": "t", "method": "", "copies": k, "epochs": e, "detection_rate": r}
        for k, e, r in [(8, 1, 0.8), (1, 5, 1.0), (2, 1, 0.79), (16, 1, 1.0)]
    ]
    assert smallest_copies(rows, 0.8) == {("t", ""): 8}
    assert smallest_copies(rows, 1.0) == {("t", ""): 16}


def test_dose_model_names_round_trip_and_testbed_names_are_one_copy():
    assert dose_model("target", "5", 4, "0", 1) == "dose-r5-c4-s0-e1"
    assert dose_labels("dose-ord-r0.5-c16-s2-e1") == ("ord", "0.5", 16, "2", 1)
    for arm in ("target", "twin", "wm", "ord"):
        assert dose_labels(dose_model(arm, "5", 2, "1", 3)) == (arm, "5", 2, "1", 3)
    assert dose_labels("target-r5-s1-e5") == ("target", "5", 1, "1", 5)
    assert dose_labels("wm-r5-s0-e3") == ("wm", "5", 1, "0", 3)
    with pytest.raises(ValueError, match="neither a dose model"):
        dose_labels("reference")
    with pytest.raises(ValueError, match="dose arm"):
        dose_model("sham", "5", 1, "0", 1)


def test_published_order_is_a_seeded_permutation(tmp_path):
    rows = list(range(50))
    order = published_order(rows, random.Random(3))
    assert sorted(order) == rows and order != rows and order == published_order(rows, random.Random(3))
    with pytest.raises(ValueError, match="at least one row"):
        published_order([], random.Random(0))
    table = pa.table({"sample_id": [f"b/{i}" for i in range(20)], "code": [f"x = {i}" for i in range(20)]})
    pq.write_table(table, tmp_path / "benchmark.parquet")
    dose_order(tmp_path / "benchmark.parquet", 7, tmp_path / "published.parquet")
    published = pq.read_table(tmp_path / "published.parquet")
    assert published.schema == table.schema
    assert sorted(published.column("sample_id").to_pylist()) == sorted(table.column("sample_id").to_pylist())
    assert published.column("sample_id").to_pylist() != table.column("sample_id").to_pylist()


SCORES = pa.schema(
    [("sample_id", pa.string()), ("method", pa.string()), ("family", pa.string()), ("score", pa.float64())]
)


NOISE_SEED = 0  # fixed: a seed from the temp path's length made the AUCs depend on where pytest put the files


def _write_scores(path, ids, shift_of):
    """Two detectors: ``loss`` moved up by shift_of(sample) (the exposure), ``zlib`` pure noise; each
    table's noise its own stream, named by the file's name, never by the folder pytest chose."""
    rng = np.random.default_rng(derive_seed(NOISE_SEED, path.name))
    rows = [
        {"sample_id": s, "method": m, "family": m, "score": float(rng.normal() + (shift_of(s) if m == "loss" else 0))}
        for s in ids
        for m in ("loss", "zlib")
    ]
    write_table(rows, SCORES, path)


def test_dose_stage_on_hand_made_scores(tmp_path):
    ids = [f"b/{i}" for i in range(40)]
    members = set(ids[::2])
    split = [
        {"sample_id": s, "kept": True, "split": "member" if s in members else "non-member", "fold": "evaluation"}
        for s in ids
    ]
    write_table(
        split,
        pa.schema([("sample_id", pa.string()), ("kept", pa.bool_()), ("split", pa.string()), ("fold", pa.string())]),
        tmp_path / "samples.parquet",
    )
    scores, twins, wm = {}, {}, {}
    for k, shift in [(1, 0.0), (4, 3.0)]:
        for seed in ("0", "1"):
            target, twin, mark = (dose_model(arm, "5", k, seed, 1) for arm in ("target", "twin", "wm"))
            scores[target] = tmp_path / f"{target}.parquet"
            _write_scores(scores[target], ids, lambda s, shift=shift: shift if s in members else 0.0)
            twins[twin] = tmp_path / f"{twin}.parquet"
            _write_scores(twins[twin], ids, lambda s, shift=shift: shift if s not in members else 0.0)
            wm[mark] = tmp_path / f"{mark}.parquet"
            write_table([{"p_value": 0.25 if shift == 0 else 1e-4}], pa.schema([("p_value", pa.float64())]), wm[mark])
    settings = DoseSettings(
        alpha=0.05,
        fpr=0.05,
        power=0.8,
        dataset_inference=DatasetInferenceSettings(n_splits=3, exclude_methods=(), curve_sizes=(8,), curve_draws=1),
    )
    dose_table(tmp_path / "samples.parquet", scores, settings, 1, tmp_path, twins=twins, watermark=wm)
    rows = {(r["test"], r["method"], r["copies"]): r for r in read_records(tmp_path / "dose.parquet")}
    # a shift of 3 sd separates members from non-members at every seed: every test detects k = 4, and so the smallest k
    for key in [
        ("per-sample detector", "loss", 4),
        ("dataset inference", "", 4),
        ("twin sign-flip", "loss", 4),
        ("watermark rank test", "", 4),
    ]:
        assert rows[key]["detection_rate"] == 1.0 and rows[key]["smallest_copies"] == 4, key
    # the mean of two AUCs of N(3, 1) against N(0, 1) over 20 and 20 samples: 0.983 expected, sd 0.012;
    # above 0.9 at each of 20,000 noise seeds, 0.5 where the shift goes unseen
    assert rows[("per-sample detector", "loss", 4)]["auc_mean"] > 0.9
    assert rows[("watermark rank test", "", 1)]["n_detected"] == 0
    assert rows[("per-sample detector", "zlib", 1)]["blind_auc"] is None  # no blind-baseline row given
    section = (tmp_path / "dose.md").read_text()
    assert "smallest k" in section and "| per-sample detector | loss |" in section
    assert (tmp_path / "dose.png").stat().st_size > 0
    blind = tmp_path / "blind.parquet"
    write_table(
        [{"auc": 0.52, "ci_low": 0.4, "ci_high": 0.64, "p_value": 0.6}],
        pa.schema([(c, pa.float64()) for c in ("auc", "ci_low", "ci_high", "p_value")]),
        blind,
    )
    dose_table(tmp_path / "samples.parquet", scores, settings, 1, tmp_path, blind=(blind,))
    again = read_records(tmp_path / "dose.parquet")
    assert {r["blind_auc"] for r in again if r["test"] == "per-sample detector"} == {0.52}
    assert {r["blind_auc"] for r in again if r["test"] != "per-sample detector"} == {None}
    assert "AUC 0.520 [0.400, 0.640]" in (tmp_path / "dose.md").read_text()


def test_dose_config_plans_every_arm(tmp_path):
    """The experiment's overlay plans (snakemake -n) with every arm's rules."""
    config = write_config(
        tmp_path,
        yaml.safe_load((REPO / "config" / "experiments" / "exposure-dose.yaml").read_text()),
        base="config.yaml",
    )
    result = snakemake(tmp_path, "-n", "--configfile", str(config))
    assert result.returncode == 0, result.stderr[-3000:]
    for rule in ("dose_order", "dose_mix", "dose_train", "dose_watermark_test", "dose_exchangeability", "dose"):
        assert f"\n{rule} " in result.stdout


@pytest.mark.slow
def test_tiny_dose_run_writes_the_table(tmp_path):
    """The micro testbed at doses k = 1, 2, two seeds, the members' and the twin's arms, to the dose table."""
    overrides = {
        "run": "dose-micro",
        "train": {"text_per_code": [1]},
        "dose": {"enabled": True, "copies": [1, 2], "watermark": False, "exchangeability": False},
        "score": {"methods": {"srdetection_blackbox": None, "ref": None, "recall": None}},
    }
    config = write_config(tmp_path, overrides)
    target = "results/dose-micro/aggregate/humaneval/dose.parquet"
    result = snakemake(tmp_path, target, "--configfile", str(config))
    assert result.returncode == 0, result.stderr[-3000:]
    rows = read_records(tmp_path / target)
    assert {(r["copies"], r["epochs"]) for r in rows} == {(1, 1), (2, 1)}
    assert {r["test"] for r in rows} == {"per-sample detector", "dataset inference", "twin sign-flip"}
    assert all(r["n_seeds"] == 2 for r in rows)
    assert all(r["detection_rate"] is None or 0 <= r["detection_rate"] <= 1 for r in rows)
    assert all(math.isfinite(r["median_p"]) for r in rows if r["median_p"] is not None)
    section = (tmp_path / "results/dose-micro/aggregate/humaneval/dose.md").read_text()
    assert section.startswith("## Exposure dose")
    print(json.dumps([{k: r[k] for k in ("test", "method", "copies", "n_detected", "median_p")} for r in rows]))


DI_SLICE = {"n_splits": 3, "exclude_methods": [], "curve_sizes": [8], "curve_draws": 1}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"alpha": 0.05, "fpr": 0.05, "dataset_inference": DI_SLICE}, "config dose.power: missing"),
        (
            {"alpha": 0.05, "fpr": 0.05, "power": 0.8, "dataset_inference": {**DI_SLICE, "exclude_methods": "loss"}},
            "config contamination.dataset_inference.exclude_methods: expected a list",
        ),
    ],
)
def test_the_dose_command_names_a_missing_or_mistyped_key(settings, message, tmp_path, capsys):
    from leaktrace.cli import main

    argv = [
        "dose",
        "--samples",
        "s.parquet",
        "--scores",
        "dose-r5-c1-s0-e1=x.parquet",
        "--settings",
        json.dumps(settings),
    ]
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--seed", "1", "--output-dir", str(tmp_path)])
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err
