"""Dataset-level contamination tests on synthetic score tables: calibrated
under the null (fresh null data per seed, so the binomial margin is exact),
powerful under a shift, and the pieces that feed them."""

import json
from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import ttest_ind
from sklearn.linear_model import LogisticRegression

from leaktrace.calibration.rates import ABOVE, WITHIN, false_positive_rate
from leaktrace.config_slice import read_slice
from leaktrace.contamination.combine import twice_median
from leaktrace.contamination.dataset_inference import dataset_inference, p_value_curve, smallest_n
from leaktrace.contamination.features import feature_matrix, score_lookup, shared_methods
from leaktrace.contamination.variant_preference import preference_test
from leaktrace.settings.contamination import ContaminationSettings

ALPHA = 0.05


def _sets(rng, n=40, features=6, shift=0.0):
    suspect = rng.normal(size=(n, features))
    suspect[:, :2] += shift  # two informative detectors
    return suspect, rng.normal(size=(n, features))


def _in_sample_p(suspect, validation):
    """The shortcut dataset inference avoids: fit and test on the same samples."""
    x = np.vstack([suspect, validation])
    model = LogisticRegression().fit(x, np.r_[np.ones(len(suspect)), np.zeros(len(validation))])
    return ttest_ind(
        model.decision_function(suspect), model.decision_function(validation), equal_var=False, alternative="greater"
    ).pvalue


def test_dataset_inference_is_calibrated_under_the_null_and_the_shortcut_is_not():
    null, one_split, shortcut = [], [], []
    for seed in range(60):
        suspect, validation = _sets(np.random.default_rng(seed))
        result = dataset_inference(suspect, validation, n_splits=3, seed=seed)
        null.append(result.p_value)
        one_split.append(result.split_p_values[0])
        shortcut.append(_in_sample_p(suspect, validation))
    assert false_positive_rate(null, ALPHA)["verdict"] == WITHIN
    # one split alone is exact: uniform p-values, not merely conservative ones
    assert false_positive_rate(one_split, ALPHA)["verdict"] == WITHIN
    assert 0.3 < np.mean(np.array(one_split) < 0.5) < 0.7
    # the check has teeth: fitting on the tested samples rejects far too often
    assert false_positive_rate(shortcut, ALPHA)["verdict"] == ABOVE


def test_dataset_inference_detects_a_shift_and_the_curve_finds_its_sample_size():
    suspect, validation = _sets(np.random.default_rng(1), n=80, shift=0.8)
    assert dataset_inference(suspect, validation, n_splits=5, seed=0).p_value < 1e-3
    curve = p_value_curve(suspect, validation, [8, 16, 32, 64], n_draws=3, n_splits=3, seed=0)
    assert [n for n, _ in curve] == [8, 16, 32, 64, 80]
    n = smallest_n(curve, ALPHA)
    assert n is not None and n <= 64
    assert dict(curve)[80] < ALPHA


def test_dataset_inference_is_deterministic_and_checks_its_inputs():
    suspect, validation = _sets(np.random.default_rng(2))
    assert dataset_inference(suspect, validation, n_splits=3, seed=5) == dataset_inference(
        suspect, validation, n_splits=3, seed=5
    )
    with pytest.raises(ValueError, match="at least 4"):
        dataset_inference(suspect[:3], validation, n_splits=3, seed=0)
    with pytest.raises(ValueError, match="features"):
        dataset_inference(suspect[:, :2], validation, n_splits=3, seed=0)


def test_smallest_n_needs_the_curve_to_stay_below_alpha():
    assert smallest_n([(10, 0.01), (20, 0.2), (40, 0.01), (80, 0.001)], ALPHA) == 40
    assert smallest_n([(10, 0.5), (20, 0.2)], ALPHA) is None


def test_twice_median_bounds_and_order():
    assert twice_median([0.01, 0.02, 0.9]) == pytest.approx(0.04)
    assert twice_median([0.6, 0.7]) == 1.0
    with pytest.raises(ValueError):
        twice_median([])


def test_features_keep_only_methods_every_sample_has():
    rows = [
        {"sample_id": s, "method": m, "score": v}
        for s, m, v in [
            ("a", "loss", 1.0),
            ("b", "loss", 2.0),
            ("a", "recall", 0.5),
            ("a", "ref_oracle", 3.0),
            ("b", "zlib", float("nan")),
        ]
    ]
    lookup = score_lookup(rows, exclude={"ref_oracle"})
    assert set(lookup) == {"loss", "recall"}  # the oracle excluded, the NaN dropped
    methods = shared_methods([lookup], [["a", "b"]])
    assert methods == ["loss"]
    assert feature_matrix(lookup, ["b", "a"], methods).tolist() == [[2.0], [1.0]]


def test_variant_preference_is_calibrated_and_fires_on_a_preference():
    null = []
    for seed in range(60):
        rng = np.random.default_rng(seed)
        ids = [str(i) for i in range(30)]
        shared = rng.normal(size=30)  # renaming bias both models share
        target = dict(zip(ids, shared + rng.normal(size=30), strict=True))
        reference = dict(zip(ids, shared + rng.normal(size=30), strict=True))
        null.append(preference_test(target, reference, ids, n_resamples=199, seed=seed).p_value)
    assert false_positive_rate(null, ALPHA)["verdict"] == WITHIN
    ids = [str(i) for i in range(30)]
    reference = {sid: 0.0 for sid in ids}
    target = {sid: 0.5 + 0.1 * (i % 3) for i, sid in enumerate(ids)}
    assert preference_test(target, reference, ids, n_resamples=199, seed=0).p_value <= 0.01
    with pytest.raises(ValueError, match="lack a preference"):
        preference_test(target, {}, ids, n_resamples=99, seed=0)


def test_false_positive_rate_margin():
    assert false_positive_rate([0.5] * 19 + [0.01], ALPHA)["verdict"] == WITHIN
    row = false_positive_rate([0.01] * 5 + [0.5] * 15, ALPHA)
    assert row["verdict"] == ABOVE and row["rate"] == 0.25 and row["rate_low"] < 0.25 < row["rate_high"]


METHODS = ("loss", "zlib", "min_k_20", "neighbor", "srdetection_graybox", "ref_oracle")


def _testbed(tmp_path, n=60, signal=1.5, models=None):
    """A samples table and score tables: by default the base model (no
    signal) and a target whose members score higher on loss and neighbor;
    ``models``: name -> shift(split, method) of each model's scores."""
    from leaktrace.artifacts import write_table
    from leaktrace.data.split import SAMPLES_SCHEMA
    from leaktrace.detect.scores import SCORES_SCHEMA

    rng = np.random.default_rng(0)
    ids = [f"s{i:03d}" for i in range(n)]
    split = {sid: "member" if i % 2 else "non-member" for i, sid in enumerate(ids)}
    samples = [
        {"sample_id": sid, "kept": True, "split": split[sid], "fold": "evaluation", "pre_exposed": False} for sid in ids
    ]
    write_table(samples, SAMPLES_SCHEMA, tmp_path / "samples.parquet")
    if models is None:
        models = {
            "reference": lambda split, m: 0.0,
            "target-r5-s0-e3": lambda split, m: signal if split == "member" and m in ("loss", "neighbor") else 0.0,
        }
    paths = {}
    for model, shift in models.items():
        rows = [
            {
                "sample_id": sid,
                "method": m,
                "family": m,
                "score": float(rng.normal() + shift(split[sid], m)),
                "decision": None,
            }
            for sid in ids
            for m in METHODS
            if not (model == "reference" and m == "ref_oracle")
        ]
        paths[model] = tmp_path / f"{model}.parquet"
        write_table(rows, SCORES_SCHEMA, paths[model])
    return tmp_path / "samples.parquet", paths


SLICE = {
    "validation": ["testbed", "variants"],
    "contamination_alpha": ALPHA,
    "alphas": [0.05, 0.1],
    "dataset_inference": {"n_splits": 3, "exclude_methods": ["ref_oracle"], "curve_sizes": [8, 16], "curve_draws": 2},
    "variant_preference": {"method": "neighbor", "reference": "reference", "n_resamples": 199},
    "calibration": {"seeds": 10},
}
SETTINGS = read_slice(ContaminationSettings, SLICE, "contamination")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"dataset_inference": {k: v for k, v in SLICE["dataset_inference"].items() if k != "n_splits"}},
            "config contamination.dataset_inference.n_splits: missing",
        ),
        ({"contamination_alpha": "0.05"}, "config contamination.alpha: expected a number, got '0.05'"),
    ],
)
def test_the_contamination_command_names_a_missing_or_mistyped_key(change, message, tmp_path, capsys):
    from leaktrace.cli import main

    argv = ["contamination", "--samples", "s.parquet", "--scores", "reference=r.parquet"]
    argv += ["--settings", json.dumps({**SLICE, **change}), "--seed", "7", "--output-dir", str(tmp_path)]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_contamination_stage_writes_p_values_curves_and_calibration(tmp_path):
    import pyarrow.parquet as pq

    from leaktrace.stages.contamination import contamination

    samples, scores = _testbed(tmp_path)
    out = tmp_path / "out"
    contamination(samples, scores, SETTINGS, 7, out)
    rows = {(r["model"], r["validation"]): r for r in pq.read_table(out / "p_values.parquet").to_pylist()}
    assert set(rows) == {("reference", "testbed"), ("target-r5-s0-e3", "testbed"), ("target-r5-s0-e3", "variants")}
    assert rows[("target-r5-s0-e3", "testbed")]["p_value"] < 1e-3 and rows[("reference", "testbed")]["p_value"] > 0.01
    assert rows[("target-r5-s0-e3", "variants")]["p_value"] < 0.01
    assert "ref_oracle" not in rows[("target-r5-s0-e3", "testbed")]["features"]
    assert rows[("target-r5-s0-e3", "testbed")]["epoch"] == 3 and rows[("reference", "testbed")]["epoch"] == 0
    curve = pq.read_table(out / "p_value_curve.parquet").to_pylist()
    assert {c["n"] for c in curve if c["model"] == "reference"} == {8, 16, 30}
    calibration = pq.read_table(out / "calibration.parquet").to_pylist()
    # dataset inference under the base model is calibration.membership's null (re-randomised memberships)
    assert {(c["kind"], c["model"], c["test"], c["reference"]) for c in calibration} == {
        ("null", "target-r5-s0-e3", "dataset_inference", None),
        ("power", "target-r5-s0-e3", "dataset_inference", None),
        ("null", "target-r5-s0-e3", "variant_preference", "reference"),
        ("power", "target-r5-s0-e3", "variant_preference", "reference"),
    }
    assert all(c["n_seeds"] == 10 for c in calibration)
    # a null row is a false-positive rate with its verdict, a power row the rate under exposure, which the signal makes high
    assert all((c["verdict"] is not None) == (c["kind"] == "null") for c in calibration)
    assert all(c["rate"] >= 0.5 for c in calibration if c["kind"] == "power")
    report = (out / "report.md").read_text()
    assert "Calibration under the null" in report and "Power under exposure" in report
    assert (out / "p_value_curve.png").stat().st_size > 1000
    first = (out / "p_values.parquet").read_bytes()
    contamination(samples, scores, SETTINGS, 7, out)
    assert (out / "p_values.parquet").read_bytes() == first


def test_dataset_inference_command_on_user_tables(tmp_path, capsys):
    import json

    import pyarrow as pa
    import pyarrow.csv as pacsv

    from leaktrace.cli import main

    samples, scores = _testbed(tmp_path)
    held_out = tmp_path / "held_out.txt"
    held_out.write_text("# released after the cutoff\n" + "\n".join(f"s{i:03d}" for i in range(0, 60, 2)) + "\n")
    out = tmp_path / "di.parquet"
    assert (
        main(
            [
                "dataset-inference",
                "--scores",
                str(scores["target-r5-s0-e3"]),
                "--validation-ids",
                str(held_out),
                "--n-splits",
                "3",
                "--output",
                str(out),
                "--curve",
                str(tmp_path / "curve.parquet"),
            ]
        )
        == 0
    )
    row = json.loads(capsys.readouterr().out)
    assert (
        row["validation"] == "held_out"
        and row["n_suspect"] == 30
        and row["n_validation"] == 30
        and row["p_value"] < 0.01
    )
    # a wide CSV (one column per detector) works too, and a reference table gives the variant-preference test
    rng = np.random.default_rng(3)
    wide = tmp_path / "wide.csv"
    pacsv.write_csv(pa.table({"sample_id": [f"x{i}" for i in range(20)], "neighbor": rng.normal(size=20) + 1.0}), wide)
    reference = tmp_path / "ref.csv"
    pacsv.write_csv(pa.table({"sample_id": [f"x{i}" for i in range(20)], "neighbor": rng.normal(size=20)}), reference)
    assert (
        main(["dataset-inference", "--scores", str(wide), "--reference-scores", str(reference), "--output", str(out)])
        == 0
    )
    row = json.loads(capsys.readouterr().out)
    assert row["test"] == "variant_preference" and row["p_value"] < 0.05
    # exactly one validation source
    assert main(["dataset-inference", "--scores", str(wide), "--output", str(out)]) == 2


def test_shards_are_consecutive_and_fit_the_budget():
    from leaktrace.contamination.exchangeability import pack_shards

    lengths = [30, 40, 50, 200, 20, 20, 90, 10]
    assert pack_shards(lengths, 100) == [[0, 1], [4, 5], [6, 7]]  # [2] alone has no other order; 3 never fits
    assert pack_shards(lengths, 100, n_shards=2) == [[0, 1], [4, 5]]


def test_sharded_test_fires_on_a_canonical_preference_and_is_calibrated_without_one():
    from leaktrace.contamination.exchangeability import permutations, sharded_test

    orders = permutations(4, 5, np.random.default_rng(0))
    assert len(orders) == 5 and [0, 1, 2, 3] not in orders and all(sorted(o) == [0, 1, 2, 3] for o in orders)
    null = []
    for seed in range(60):  # exchangeable orders: the canonical one is just another draw
        lls = np.random.default_rng(seed).normal(size=(8, 6))
        null.append(sharded_test(lls[:, 0], lls[:, 1:]).p_value)
    assert false_positive_rate(null, ALPHA)["verdict"] == WITHIN
    lls = np.random.default_rng(1).normal(size=(8, 6))
    lls[:, 0] += 2.0  # the model prefers the order it was trained in
    result = sharded_test(lls[:, 0], lls[:, 1:])
    assert result.p_value < 0.01 and result.mean_difference > 1.0


def test_the_exchangeability_commands_name_a_missing_or_mistyped_key(tmp_path, capsys):
    import json

    from leaktrace.cli import main

    def run(command, settings):
        model = json.dumps({"path": "m", "dtype": "float32", "device": "cpu"})
        argv = [command, "--benchmark", "b.parquet", "--samples", "s.parquet", "--model", model]
        argv += ["--settings", json.dumps(settings), "--batch", '{"batch_size": 8, "token_budget": null}']
        with pytest.raises(SystemExit) as stopped:
            main([*argv, "--seed", "3", "--output", str(tmp_path / "x.parquet")])
        assert stopped.value.code == 2
        return capsys.readouterr().err

    settings = {"samples": "members", "n_shards": 2.5, "n_permutations": 2}
    assert "config contamination.exchangeability.n_shards: expected an integer" in run("exchangeability", settings)
    settings = {"samples": "members", "n_shards": 3, "n_permutations": 2}
    err = run("exchangeability-calibration", settings)
    assert "config contamination.exchangeability.calibration_seeds: missing" in err


def test_exchangeability_stage_scores_shards_under_a_model(tmp_path, tiny_model_dir):
    import pyarrow.parquet as pq
    from helpers import TRAINING_TEXT

    from leaktrace.artifacts import write_table
    from leaktrace.data.benchmarks import BENCHMARK_SCHEMA
    from leaktrace.data.split import SAMPLES_SCHEMA
    from leaktrace.settings.exchangeability import ExchangeabilitySettings
    from leaktrace.settings.models import ModelSettings
    from leaktrace.settings.score import TokenBatch
    from leaktrace.stages.exchangeability import exchangeability

    ids = [f"b/{i}" for i in range(12)]
    write_table(
        [{"sample_id": sid, "code": code[:150]} for sid, code in zip(ids, TRAINING_TEXT, strict=False)],
        BENCHMARK_SCHEMA,
        tmp_path / "bench.parquet",
    )
    write_table(
        [{"sample_id": sid, "kept": True, "split": "member" if i % 3 else "non-member"} for i, sid in enumerate(ids)],
        SAMPLES_SCHEMA,
        tmp_path / "samples.parquet",
    )
    model = ModelSettings(path=str(tiny_model_dir), dtype="float32", device="cpu", max_length=256)
    settings = ExchangeabilitySettings(samples="members", n_shards=3, n_permutations=2)
    batch, out = TokenBatch(batch_size=8, token_budget=None), tmp_path / "x.parquet"
    exchangeability(tmp_path / "bench.parquet", tmp_path / "samples.parquet", model, settings, batch, 3, out)
    (row,) = pq.read_table(out).to_pylist()
    assert (
        row["samples"] == "members"
        and 2 <= row["n_shards"] <= 3
        and row["n_examples"] <= 8
        and 0 <= row["p_value"] <= 1
    )
    first = out.read_bytes()
    exchangeability(tmp_path / "bench.parquet", tmp_path / "samples.parquet", model, settings, batch, 3, out)
    assert out.read_bytes() == first


def test_a_test_that_fails_its_calibration_is_marked_beside_its_p_values():
    from leaktrace.calibration.rates import ABOVE, WITHIN
    from leaktrace.stages.contamination import render_section

    rows = [
        {
            "model": "m",
            "epoch": 1,
            "ratio": 1.0,
            "seed": 0,
            "test": t,
            "validation": v,
            "reference": r,
            "n_suspect": 10,
            "n_validation": None,
            "p_value": 0.001,
            "smallest_n": None,
            "mean_difference": 0.1,
        }
        for t, v, r in (
            ("variant_preference", "variants", "reference"),
            ("variant_preference", "variants", "sham-r5-s0-e5"),
            ("dataset_inference", "testbed", None),
            ("exchangeability", "permutations", None),
        )
    ]
    calibration = [
        {
            "kind": "null",
            "scenario": "s",
            "model": "m",
            "test": t,
            "reference": r,
            "n_seeds": 20,
            "n_rejected": n,
            "rate": n / 20,
            "rate_low": 0.0,
            "rate_high": 1.0,
            "binomial_p": 0.5,
            "verdict": verdict,
            "rate_one_split": 0.0,
        }
        for t, r, n, verdict in (
            ("variant_preference", "reference", 20, ABOVE),
            ("variant_preference", "sham-r5-s0-e5", 1, WITHIN),
            ("dataset_inference", None, 1, WITHIN),
        )
    ]
    power = {
        **calibration[0],
        "kind": "power",
        "test": "exchangeability",
        "reference": None,
        "verdict": None,
        "binomial_p": None,
    }
    section = render_section(rows, calibration + [power], 0.05)
    lines = {
        (line.split("|")[5].strip(), line.split("|")[7].strip()): line
        for line in section.splitlines()
        if line.startswith("| m |")
    }
    assert "NO: rejects too often" in lines[("variant_preference", "reference")]
    assert (
        lines[("variant_preference", "sham-r5-s0-e5")].rstrip(" |").endswith("yes")
    )  # its own reference's calibration
    assert lines[("dataset_inference", "–")].rstrip(" |").endswith("yes")
    # a power row is no calibration: the exchangeability test stays unchecked, and power has a table of its own
    assert lines[("exchangeability", "–")].rstrip(" |").endswith("not checked")
    null_table, power_table = section.split("### Calibration under the null")[1].split("### Power under exposure")
    assert "exchangeability" not in null_table and "exchangeability" in power_table


def _fine_tuned(exposure):
    """A fine-tuned model's score shift: every sample's neighbor preference
    moves by 1 (fine-tuning itself), and members' loss by ``exposure``."""
    return lambda split, m: 1.0 * (m == "neighbor") + exposure * (split == "member" and m == "loss")


def test_the_sham_reference_cancels_the_shift_of_fine_tuning(tmp_path):
    """Fine-tuning alone raises the preference for originals on every
    sample: the base-referenced variant test rejects on a target whose
    preference moved by fine-tuning only (and on the sham, which its
    calibration flags), the sham-referenced one does not."""
    import pyarrow.parquet as pq

    from leaktrace.calibration.rates import ABOVE, WITHIN
    from leaktrace.stages.contamination import contamination

    target, sham = "target-r5-s0-e5", "sham-r5-s0-e5"
    samples, scores = _testbed(
        tmp_path, models={"reference": lambda split, m: 0.0, target: _fine_tuned(1.5), sham: _fine_tuned(0.0)}
    )
    results = {}
    for reference in ("reference", "sham"):
        out = tmp_path / reference
        settings = replace(SETTINGS, variant_preference=replace(SETTINGS.variant_preference, reference=reference))
        contamination(samples, scores, settings, 7, out)
        results[reference] = (
            {(r["model"], r["validation"]): r for r in pq.read_table(out / "p_values.parquet").to_pylist()},
            pq.read_table(out / "calibration.parquet").to_pylist(),
            (out / "report.md").read_text(),
        )
    by_base, calibration, report = results["reference"]
    by_sham, _, sham_report = results["sham"]
    assert by_base[(target, "variants")]["p_value"] < 0.01 and by_base[(target, "variants")]["reference"] == "reference"
    assert by_sham[(target, "variants")]["p_value"] > 0.05 and by_sham[(target, "variants")]["reference"] == sham
    assert by_base[(sham, "variants")]["p_value"] < 0.01  # fine-tuning alone rejects against the base model
    assert (sham, "variants") not in by_sham and ("reference", "variants") not in by_sham
    assert (
        by_base[(sham, "testbed")]["p_value"] > 0.05 and by_base[(target, "testbed")]["p_value"] < 0.01
    )  # DI sees exposure only
    rows = {(c["kind"], c["model"], c["test"], c["reference"]): c for c in calibration}
    assert rows[("null", sham, "variant_preference", "reference")]["verdict"] == ABOVE
    assert rows[("null", target, "variant_preference", sham)]["verdict"] == WITHIN
    assert rows[("power", target, "variant_preference", "reference")]["rate"] == 1.0
    nulls = (
        "sham vs base, random halves of all samples",
        "target, random halves of non-members",
        "target vs base, random halves of non-members",
        "target vs sham, random halves of non-members",
    )
    exposures = (
        "target, half the members vs half the non-members",
        "target vs base, random halves of members",
        "target vs sham, random halves of members",
    )
    assert {c["scenario"]: c["kind"] for c in calibration} == {
        **dict.fromkeys(nulls, "null"),
        **dict.fromkeys(exposures, "power"),
    }
    marks = {
        line.split("|")[7].strip(): line.rstrip(" |").split("|")[-1].strip()
        for line in sham_report.splitlines()
        if line.startswith(f"| {target} |") and "variant_preference" in line
    }
    assert marks == {sham: "yes"}
    assert "NO: rejects too often" in report


def test_sham_stand_ins_are_humaneval_like_functions_only():
    from leaktrace.data.functions import all_function_anatomies
    from leaktrace.train.sham import MAX_LINES, candidate_functions

    long_body = "".join(f"    x{k} = {k}\n" for k in range(MAX_LINES))
    code = (
        'def kept(a):\n    """Doc."""\n    return a\n\n\n'
        'def _private(a):\n    """Doc."""\n    return a\n\n\n'
        "def undocumented(a):\n    return a\n\n\n"
        f'def too_long(a):\n    """Doc."""\n{long_body}    return a\n\n\n'
        'def outer(a):\n    """Doc."""\n    def nested(b):\n        """Doc."""\n        return b\n    return nested(a)\n\n\n'
        'class C:\n    def method(self):\n        """Doc."""\n        return 1\n'
    )
    assert len(all_function_anatomies(code)) == 7
    assert [sid for sid, _ in candidate_functions([("m.py", code)])] == [
        "m.py::kept@1",
        "m.py::outer@80",
    ]  # too_long: lines 15-77


def test_the_sham_mix_swaps_members_for_length_matched_code_and_keeps_the_rest():
    import random

    from leaktrace.train.mix import MixItem
    from leaktrace.train.sham import CODE, sham_mix

    def function(name, lines):
        body = "".join(f"    x{k} = {k}\n" for k in range(lines))
        return f'def {name}(a):\n    """Doc of {name}."""\n{body}    return a\n'

    docs = [
        (
            f"lib/m{d}.py",
            "import os\n\n\n"
            + "\n\n".join(function(f"f{d}_{k}", k) for k in range(1, 30))
            + '\n\nclass C:\n    def method(self):\n        """A method."""\n        return 1\n',
        )
        for d in range(3)
    ]
    docs.append(("lib/broken.py", "def (:\n"))
    count = len  # characters stand in for tokens
    mix = [
        MixItem("member", "humaneval/1", "m" * 90, 90),
        MixItem("text", "doc#0", "t" * 400, 400),
        MixItem("member", "humaneval/7", "m" * 200, 200),
        MixItem("text", "doc#1", "u" * 300, 300),
    ]
    sham = sham_mix(mix, docs, count, random.Random(3))
    assert [i.kind for i in sham] == [CODE, "text", CODE, "text"]
    assert sham[1] == mix[1] and sham[3] == mix[3]  # the general text, in its places
    ids = {i.source_id for i in sham}
    assert not ids & {"humaneval/1", "humaneval/7"} and all(
        i.source_id.startswith("lib/m") for i in sham if i.kind == CODE
    )
    assert all(
        '"""Doc of' in i.text and "def method" not in i.text for i in sham if i.kind == CODE
    )  # functions, no methods
    assert [abs(s.n_tokens - m.n_tokens) <= 15 for s, m in zip(sham[::2], mix[::2], strict=True)] == [True, True]
    assert sham == sham_mix(mix, docs, count, random.Random(3))


def test_real_order_rows_under_the_unexposed_models_only():
    from leaktrace.stages.contamination import real_order_rows

    def result(p):
        return {
            "samples": "members",
            "n_examples": 36,
            "n_shards": 4,
            "n_permutations": 5,
            "mean_difference": 1.0,
            "p_value": p,
        }

    rows = real_order_rows(
        {
            "reference": result(0.009),
            "ref-model": result(0.4),
            "target-r5-s0-e5": result(0.001),
            "sham-r5-s0-e5": result(None),
        },
        [0.05, 0.01],
    )
    by = {(r["model"], r["alpha"]): r for r in rows}
    assert set(by) == {(m, a) for m in ("reference", "ref-model", "pooled unexposed models") for a in (0.05, 0.01)}
    assert (by[("reference", 0.05)]["rejections"], by[("reference", 0.01)]["rejections"]) == (1, 1)
    assert by[("ref-model", 0.05)]["rejections"] == 0
    assert all(by[(m, a)]["holds"] is None for m in ("reference", "ref-model") for a in (0.05, 0.01))  # one draw each
    pooled = by[("pooled unexposed models", 0.05)]
    assert (pooled["n"], pooled["rejections"], pooled["null"]) == (2, 1, "real order")
    # the models score one order, so their p-values are dependent: Bonferroni, 2 x 0.009 = 0.018 < 0.025, at every alpha
    assert pooled["rule"] == "Bonferroni over models" and pooled["holds_p"] == pytest.approx(0.018)
    assert not pooled["holds"] and not by[("pooled unexposed models", 0.01)]["holds"]
    (alone,) = real_order_rows({"reference": result(0.3)}, [0.05])[
        1:
    ]  # one model: its pooled row is judged by its own p
    assert alone["model"] == "pooled unexposed models" and alone["holds"] and alone["holds_p"] == pytest.approx(0.3)


def test_distinct_permutations_never_repeat_and_take_every_order_of_a_small_shard():
    from leaktrace.contamination.exchangeability import distinct_permutations

    rng = np.random.default_rng(0)
    assert distinct_permutations(2, 5, rng) == [[1, 0]]  # with repeats, five copies of the one other order
    small = distinct_permutations(3, 25, rng)
    assert len(small) == 5 and sorted(map(tuple, small)) == sorted(
        {(0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)}
    )
    large = distinct_permutations(6, 40, rng)
    assert len({tuple(o) for o in large}) == 40 and [0, 1, 2, 3, 4, 5] not in large


def test_shard_ranks_give_an_exact_p_value_under_exchangeable_orders_and_detect_a_preference():
    import random

    from leaktrace.contamination.exchangeability import shard_ranks
    from leaktrace.watermark.ranks import rank_sum_test

    def p_value(lls, seed):
        ranks, sizes = shard_ranks(lls[:, 0], lls[:, 1:], random.Random(seed))
        return rank_sum_test(ranks, sizes).p_value

    null = [p_value(np.random.default_rng(seed).normal(size=(3, 6)), seed) for seed in range(400)]
    assert false_positive_rate(null, ALPHA)["verdict"] == WITHIN
    assert np.mean(np.array(null) <= 0.2) == pytest.approx(0.2, abs=0.06)
    tied = [shard_ranks([1.0], [[1.0, 1.0, 1.0]], random.Random(s))[0][0] for s in range(400)]
    assert set(tied) == {1, 2, 3, 4} and max(np.bincount(tied)[1:]) < 140  # a tie broken at random, not for the order
    lls = np.random.default_rng(1).normal(size=(3, 6))
    lls[:, 0] += 5.0  # the model prefers the order it was trained in: rank 1 in every shard
    ranks, sizes = shard_ranks(lls[:, 0], lls[:, 1:], random.Random(0))
    assert ranks == [1, 1, 1] and sizes == [6, 6, 6] and rank_sum_test(ranks, sizes).p_value == pytest.approx(6**-3)


class _OrderScorer:
    """A stand-in model whose log-likelihood of a shard is minus its examples'
    inversions against the published order, when ``prefers``; else constant."""

    max_length = 200

    def __init__(self, prefers: bool):
        self.prefers = prefers

    def encode(self, text):
        return text.split()

    def score(self, texts, moments):
        from types import SimpleNamespace

        def logprobs(text):
            ids = [int(t.split()[1]) for t in text.split("\n\n")]
            inversions = sum(a > b for i, a in enumerate(ids) for b in ids[i + 1 :])
            return [-float(inversions) if self.prefers else 0.0]

        return [SimpleNamespace(truncated=False, logprobs=logprobs(t)) for t in texts]


def _audit_benchmark(path, n):
    from leaktrace.artifacts import write_table
    from leaktrace.data.benchmarks import GENERIC_BENCHMARK_SCHEMA

    rows = [
        {"sample_id": f"b/{i}", "code": f"example {i:02d} " + "x " * 20, "text": "", "kind": "code"} for i in range(n)
    ]
    write_table(rows, GENERIC_BENCHMARK_SCHEMA, path)


@pytest.mark.parametrize("prefers", [True, False])
def test_the_audit_order_test_detects_a_model_that_prefers_the_published_order(tmp_path, monkeypatch, prefers):
    import pyarrow.parquet as pq

    import leaktrace.stages.exchangeability as stage
    from leaktrace.settings.exchangeability import AuditExchangeabilitySettings
    from leaktrace.settings.models import ModelSettings
    from leaktrace.settings.score import TokenBatch

    _audit_benchmark(tmp_path / "bench.parquet", 24)  # 22 tokens an example: 8 a shard under a context of 200
    monkeypatch.setattr(stage, "language_model", lambda model, adapter, batch: _OrderScorer(prefers))
    settings = AuditExchangeabilitySettings(n_shards=3, n_permutations=9)
    model, batch = ModelSettings(path="m", dtype="float32", device="cpu"), TokenBatch(batch_size=8, token_budget=None)
    stage.audit_exchangeability(tmp_path / "bench.parquet", "b", "m", model, settings, batch, 0, tmp_path / "x.parquet")
    (row,) = pq.read_table(tmp_path / "x.parquet").to_pylist()
    assert (row["model"], row["benchmark"], row["test"]) == ("m", "b", "exchangeability")
    assert (row["n_benchmark_examples"], row["n_examples"], row["n_shards"]) == (24, 24, 3)
    assert row["p_method"] == stage.EXACT_METHOD and row["rank_sum_null_mean"] == 3 * 5.5
    if prefers:
        assert row["rank_sum"] == 3 and row["p_value"] == pytest.approx(10**-3) and row["t_test_p_value"] < 0.01
    else:  # every order ties: ranks drawn at random, nothing preferred
        assert 3 <= row["rank_sum"] <= 30 and row["p_value"] > 10**-3 and row["mean_difference"] == 0.0


def test_the_audit_order_test_on_a_tiny_model_and_where_no_shard_fits(tmp_path, tiny_model_dir):
    import pyarrow.parquet as pq

    from leaktrace.contamination.exchangeability import AUDIT_SCHEMA
    from leaktrace.settings.exchangeability import AuditExchangeabilitySettings
    from leaktrace.settings.models import ModelSettings
    from leaktrace.settings.score import TokenBatch
    from leaktrace.stages.audit_exchangeability_table import audit_exchangeability_table
    from leaktrace.stages.exchangeability import audit_exchangeability

    _audit_benchmark(tmp_path / "bench.parquet", 12)
    settings = AuditExchangeabilitySettings(n_shards=2, n_permutations=3)
    batch, rows = TokenBatch(batch_size=8, token_budget=None), []
    for name, context in (("fits", 256), ("short", 32)):
        model = ModelSettings(path=str(tiny_model_dir), dtype="float32", device="cpu", max_length=context)
        rows.append(tmp_path / f"{name}.parquet")
        audit_exchangeability(tmp_path / "bench.parquet", "b", name, model, settings, batch, 3, rows[-1])
    audit_exchangeability_table(tuple(rows), tmp_path / "table.parquet", tmp_path / "table.md")
    table = pq.read_table(tmp_path / "table.parquet")
    assert table.schema.equals(AUDIT_SCHEMA)
    fits, short = table.to_pylist()
    assert fits["n_shards"] == 2 and 4 <= fits["n_examples"] <= 12 and 2 <= fits["rank_sum"] <= 8
    assert 1 / 16 <= fits["p_value"] <= 1 and fits["t_test_p_value"] is not None
    # 32 tokens hold no two examples: the row says so, with no p-value
    assert short["n_shards"] == 0 and short["p_value"] is None and short["t_test_p_value"] is None
    assert short["p_method"].startswith("not testable: no shard of two or more examples fits a context of 32")
    report = (tmp_path / "table.md").read_text()
    assert "| fits | b | 2 (" in report and "**Assumption.** the benchmark's published order was random" in report
