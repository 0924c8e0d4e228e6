"""The testbed split on hand-chosen losses: who is eligible, and who
SrDetection's pre-exposure filter flags, judged before the split on the
detectors' own variants under the base model (Sec. 3.2)."""

import numpy as np
import pyarrow as pa
import pytest

from leaktrace.artifacts import read_records, write_table
from leaktrace.models.backend import TokenStats
from leaktrace.models.token_table import write_token_stats
from leaktrace.settings.split import SplitSettings
from leaktrace.stages.split import split_samples

SETTINGS = {"pre_exposure": "mark", "min_valid_variants": 1, "member_fraction": 0.5, "calibration_fraction": 0.0}

# sample -> (original loss, detector-variant losses); None = invalid
LOSSES = {
    "b/0": (1.0, [2.0, 3.0]),  # original easiest among its variants: flagged
    "b/1": (1.0, [0.9, 3.0]),  # a variant is easier: cleared
    "b/2": (1.0, [1.5, None]),  # one variant invalid; the valid one is harder: flagged
    "b/3": (1.0, [None, None]),  # no valid variant: not eligible, spare for ReCaLL
    "b/4": (1.0, [1.0]),  # a tie: not the lowest, cleared
    "b/5": (1.0, [0.4]),  # cleared
    "b/6": (1.0, [0.5, 0.6]),  # cleared
    "b/7": (0.5, [0.6]),  # flagged
}
FUNCTION_FILTER_DROPPED = "b/9"
FLAGGED, CLEARED = {"b/0", "b/2", "b/7"}, {"b/1", "b/4", "b/5", "b/6"}


def _write_inputs(tmp_path):
    functions = [{"sample_id": sid, "kept": True, "reason": None} for sid in LOSSES]
    functions.append({"sample_id": FUNCTION_FILTER_DROPPED, "kept": False, "reason": "body lines: 0 < 1"})
    variants, keys, stats = [], [], []
    for sid, (original, detector) in LOSSES.items():
        texts = [("original", original)] + [("rename", x) for x in detector]
        for vid, (kind, loss) in enumerate(texts):
            variants.append({"sample_id": sid, "variant_id": vid, "kind": kind, "valid": loss is not None})
            if loss is not None:
                keys.append((sid, vid, "text"))
                stats.append(
                    TokenStats(np.array([5, 6]), np.array([-loss, -loss], dtype=np.float32), None, None, False)
                )
    schema = pa.schema(
        [("sample_id", pa.string()), ("variant_id", pa.int32()), ("kind", pa.string()), ("valid", pa.bool_())]
    )
    write_table(variants, schema, tmp_path / "variants.parquet")
    write_table(
        functions,
        pa.schema([("sample_id", pa.string()), ("kept", pa.bool_()), ("reason", pa.string())]),
        tmp_path / "functions.parquet",
    )
    write_token_stats(keys, stats, tmp_path / "tokens.parquet")
    return tmp_path / "functions.parquet", tmp_path / "variants.parquet", tmp_path / "tokens.parquet"


def _split(tmp_path, recall_prefix=0, seed=3, **overrides):
    inputs = _write_inputs(tmp_path)
    split_samples(
        *inputs,
        SplitSettings(**{**SETTINGS, **overrides}),
        seed,
        tmp_path / "samples.parquet",
        recall_prefix=recall_prefix,
    )
    return {r["sample_id"]: r for r in read_records(tmp_path / "samples.parquet")}


def test_mark_flags_from_the_detector_variants_and_splits_each_group_one_to_one(tmp_path):
    for seed in range(4):
        rows = _split(tmp_path, seed=seed)
        assert {sid for sid, r in rows.items() if r["kept"]} == FLAGGED | CLEARED
        assert {sid for sid, r in rows.items() if r["pre_exposed"]} == FLAGGED
        assert all(rows[sid]["pre_exposed"] is False for sid in CLEARED)
        assert rows["b/0"]["pre_exposure"].startswith("pre-exposure: original has the lowest PPL among 2 variants")
        # before the split: the cleared 4 split 2 + 2 (the paper's 1:1 of the remaining), the flagged 3 split 2 + 1
        assert sorted(rows[sid]["split"] for sid in CLEARED) == ["member", "member", "non-member", "non-member"]
        assert sum(rows[sid]["split"] == "member" for sid in FLAGGED) == 2  # round(1.5) = 2
    assert rows["b/2"]["min_variant_loss"] == pytest.approx(1.5) and rows["b/2"]["n_valid_variants"] == 1
    assert rows["b/3"]["reason"] == "variants: 0 valid < 1" and rows["b/3"]["split"] is None
    assert rows["b/3"]["pre_exposed"] is None  # not eligible: not judged
    assert rows[FUNCTION_FILTER_DROPPED]["reason"] == "body lines: 0 < 1"


def test_remove_drops_flagged_samples_before_the_split(tmp_path):
    """The paper's: flagged samples leave the split with the filter's reason; the rest is split 1:1."""
    rows = _split(tmp_path, pre_exposure="remove")
    assert {sid for sid, r in rows.items() if r["kept"]} == CLEARED
    for sid in FLAGGED:
        assert rows[sid]["split"] is None and rows[sid]["pre_exposed"] is True
        assert rows[sid]["reason"].startswith("pre-exposure: original has the lowest PPL")
    assert sorted(rows[sid]["split"] for sid in CLEARED) == ["member", "member", "non-member", "non-member"]


def test_off_judges_nothing_and_splits_every_eligible_sample(tmp_path):
    rows = _split(tmp_path, pre_exposure=False)
    assert {sid for sid, r in rows.items() if r["kept"]} == FLAGGED | CLEARED
    assert all(r["pre_exposed"] is False and r["pre_exposure"] is None for r in rows.values() if r["kept"])
    assert sum(r["split"] == "member" for r in rows.values() if r["kept"]) == 4  # round(3.5): 7 split as one group


def test_an_unknown_mode_is_refused(tmp_path):
    with pytest.raises(ValueError, match="filter.split.pre_exposure must be one of"):
        _split(tmp_path, pre_exposure=True)


def test_the_split_command_names_a_missing_or_mistyped_key(tmp_path, capsys):
    import json

    from leaktrace.cli import main

    inputs = _write_inputs(tmp_path)
    argv = ["split", "--functions", str(inputs[0]), "--variants", str(inputs[1]), "--tokens", str(inputs[2])]
    argv += ["--seed", "3", "--output", str(tmp_path / "samples.parquet"), "--settings"]
    for bad, message in (
        (
            {**SETTINGS, "min_valid_variants": "1"},
            "config filter.split.min_valid_variants: expected an integer, got '1'",
        ),
        ({"pre_exposure": "mark", "min_valid_variants": 1}, "config filter.split.member_fraction: missing"),
    ):
        with pytest.raises(SystemExit) as stopped:
            main([*argv, json.dumps(bad)])
        assert stopped.value.code == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "samples.parquet").exists()


def test_recall_prefix_comes_from_spare_originals(tmp_path):
    rows = _split(tmp_path, recall_prefix=1)
    assert rows["b/3"]["fold"] == "recall-prefix" and rows["b/3"]["split"] == "non-member" and not rows["b/3"]["kept"]
    assert sum(r["kept"] for r in rows.values()) == 7
    rows = _split(tmp_path, recall_prefix=2)  # one more has to come out of the eligible samples
    assert sum(r["fold"] == "recall-prefix" for r in rows.values()) == 2
    assert sum(r["kept"] for r in rows.values()) == 6
    # with remove, the samples the filter removed are spare too: 4 prefix texts take no cleared sample
    rows = _split(tmp_path, recall_prefix=4, pre_exposure="remove")
    assert {sid for sid, r in rows.items() if r["fold"] == "recall-prefix"} == FLAGGED | {"b/3"}
    assert {sid for sid, r in rows.items() if r["kept"]} == CLEARED
