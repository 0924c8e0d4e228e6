"""The testbed split on hand-chosen losses: who is eligible, and who the
pre-exposure filter flags (from the filter variants only)."""

import numpy as np
import pyarrow as pa
import pytest
from leaktrace.artifacts import read_records, write_table
from leaktrace.models.backend import TokenStats
from leaktrace.models.token_table import write_token_stats
from leaktrace.stages.split import split_samples

SETTINGS = {"pre_exposure": True, "min_valid_variants": 1, "member_fraction": 0.5, "calibration_fraction": 0.0}

# sample -> (original loss, detector-variant losses, filter-variant losses); None = invalid
LOSSES = {
    "b/0": (1.0, [0.5, 0.6], [2.0, 3.0]),  # original easiest among filter variants: flagged
    "b/1": (1.0, [2.0, 2.5], [0.9, 3.0]),  # a filter variant is easier: not flagged, though
    #                                         the original beats every detector variant
    "b/2": (1.0, [2.0], [1.5, None]),  # one filter variant invalid; the valid one is harder: flagged
    "b/3": (1.0, [None, None], [0.1]),  # no valid detector variant: not eligible, spare for ReCaLL
    "b/4": (1.0, [3.0], []),  # no filter variant: unknown (nothing to compare against), not pre-exposed
    "b/5": (1.0, [0.4], [0.2]),
}
FUNCTION_FILTER_DROPPED = "b/6"


def _write_inputs(tmp_path, pre_exposure=True):
    functions = [{"sample_id": sid, "kept": True, "reason": None} for sid in LOSSES]
    functions.append({"sample_id": FUNCTION_FILTER_DROPPED, "kept": False, "reason": "body lines: 0 < 1"})
    variants, keys, stats = [], [], []
    for sid, (original, detector, filters) in LOSSES.items():
        texts = [("original", original)] + [("rename", x) for x in detector] + [("filter", x) for x in filters]
        for vid, (kind, loss) in enumerate(texts):
            variants.append({"sample_id": sid, "variant_id": vid, "kind": kind, "valid": loss is not None})
            if loss is not None:
                keys.append((sid, vid, "text"))
                stats.append(TokenStats(np.array([5, 6]), np.array([-loss, -loss], dtype=np.float32), None, None, False))
    schema = pa.schema([("sample_id", pa.string()), ("variant_id", pa.int32()), ("kind", pa.string()), ("valid", pa.bool_())])
    write_table(variants, schema, tmp_path / "variants.parquet")
    write_table(functions, pa.schema([("sample_id", pa.string()), ("kept", pa.bool_()), ("reason", pa.string())]),
                tmp_path / "functions.parquet")
    write_token_stats(keys, stats, tmp_path / "tokens.parquet")
    return tmp_path / "functions.parquet", tmp_path / "variants.parquet", tmp_path / "tokens.parquet"


def _split(tmp_path, recall_prefix=0, **overrides):
    inputs = _write_inputs(tmp_path)
    split_samples(*inputs, {**SETTINGS, **overrides}, 3, tmp_path / "samples.parquet", recall_prefix=recall_prefix)
    return {r["sample_id"]: r for r in read_records(tmp_path / "samples.parquet")}


def test_split_flags_pre_exposure_from_filter_variants_only(tmp_path):
    rows = _split(tmp_path)
    assert {sid for sid, r in rows.items() if r["kept"]} == {"b/0", "b/1", "b/2", "b/4", "b/5"}
    assert {sid for sid, r in rows.items() if r["pre_exposed"]} == {"b/0", "b/2"}
    assert rows["b/1"]["pre_exposed"] is False and rows["b/5"]["pre_exposed"] is False
    assert rows["b/4"]["pre_exposed"] is None and rows["b/4"]["pre_exposure"].startswith("unknown")
    assert rows["b/2"]["min_filter_variant_loss"] == pytest.approx(1.5)
    assert (rows["b/2"]["n_valid_variants"], rows["b/2"]["n_valid_filter_variants"]) == (1, 1)
    assert rows["b/3"]["reason"] == "variants: 0 valid < 1" and rows["b/3"]["split"] is None
    assert rows[FUNCTION_FILTER_DROPPED]["reason"] == "body lines: 0 < 1"
    # every kept sample is in the split, flagged or not
    assert all(r["split"] in ("member", "non-member") for r in rows.values() if r["kept"])


def test_split_does_not_depend_on_losses(tmp_path):
    """The member / non-member assignment is the same with the filter off."""
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    flagged, off = _split(tmp_path / "on"), _split(tmp_path / "off", pre_exposure=False)
    assert {s: r["split"] for s, r in flagged.items()} == {s: r["split"] for s, r in off.items()}
    assert not any(r["pre_exposed"] for r in off.values() if r["kept"])


def test_recall_prefix_comes_from_spare_originals(tmp_path):
    rows = _split(tmp_path, recall_prefix=1)
    assert rows["b/3"]["fold"] == "recall-prefix" and rows["b/3"]["split"] == "non-member" and not rows["b/3"]["kept"]
    assert sum(r["kept"] for r in rows.values()) == 5
    rows = _split(tmp_path, recall_prefix=2)  # one more has to come out of the eligible samples
    assert sum(r["fold"] == "recall-prefix" for r in rows.values()) == 2
    assert sum(r["kept"] for r in rows.values()) == 4
