"""The aggregate and audit stages on hand-made score tables: model
coordinates, the papers' sensitivity layouts, leakage rates with their
intervals, and the heatmap."""

import pyarrow.parquet as pq
import pytest
from leaktrace.artifacts import write_table
from leaktrace.stages.aggregate import model_coordinates, pivot, sensitivity_sections
from leaktrace.stages.audit import audit, leakage_rates
from leaktrace.stages.score import SCORES_SCHEMA


def test_model_coordinates():
    assert model_coordinates("reference") == {"ratio": None, "epoch": 0}
    assert model_coordinates("target-r0.5-e3") == {"ratio": 0.5, "epoch": 3}
    with pytest.raises(ValueError, match="neither"):
        model_coordinates("target-e3")


def _row(method, family, ratio, epoch, f1):
    return {"method": method, "family": family, "ratio": ratio, "epoch": epoch, "macro_f1": f1, "auc": 0.5}


def test_sensitivity_tables_pivot_epochs_ratios_and_variant_counts():
    detection = [_row("loss", "loss", None, 0, 0.5)]
    for ratio in (1.0, 5.0):
        for epoch in (1, 3):
            detection += [_row("loss", "loss", ratio, epoch, 0.1 * epoch + ratio / 100),
                          _row("srdetection_graybox_n1", "srdetection_graybox", ratio, epoch, 0.6),
                          _row("srdetection_graybox_n3", "srdetection_graybox", ratio, epoch, 0.7)]
    text = "\n".join(sensitivity_sections(detection))
    assert "## Macro F1 by epoch (mixing ratio 1:1)" in text and "## Macro F1 by epoch (mixing ratio 1:5)" in text
    assert "## SrDetection gray-box macro F1 by variant count n (mixing ratio 1:5)" in text
    assert "## Macro F1 by mixing ratio (epoch 3)" in text
    rows, columns = pivot([r for r in detection if r["ratio"] == 5.0], "method", "epoch", "macro_f1", lambda e: f"epoch {e}")
    assert columns == ["method", "epoch 1", "epoch 3"]
    assert rows[0] == {"method": "loss", "epoch 1": pytest.approx(0.15), "epoch 3": pytest.approx(0.35)}


def _scores(decisions: dict[str, list[bool]]) -> list[dict]:
    return [{"sample_id": f"b/{i}", "method": method, "family": method, "score": 1.0 if d else -1.0, "decision": d}
            for method, ds in decisions.items() for i, d in enumerate(ds)]


def test_leakage_rate_is_the_flagged_share_with_a_wilson_interval():
    (gray,) = leakage_rates("m", "b", _scores({"srdetection_graybox": [True, False, False, False], "loss": [True] * 4}))
    assert (gray["detector"], gray["n_samples"], gray["n_flagged"], gray["leakage_rate"]) == ("gray-box", 4, 1, 0.25)
    # Wilson interval for 1 of 4 at 95%
    assert gray["rate_low"] == pytest.approx(0.0456, abs=1e-3) and gray["rate_high"] == pytest.approx(0.6994, abs=1e-3)


def test_audit_writes_table_and_heatmap_and_refuses_scores_without_srdetection(tmp_path):
    paths = {}
    for model, flags in (("base", [False, False, True]), ("lora", [True, True, True])):
        path = tmp_path / f"{model}.parquet"
        write_table(_scores({"srdetection_graybox": flags, "srdetection_blackbox": flags[::-1]}), SCORES_SCHEMA, path)
        paths[(model, "humaneval")] = path
    audit(paths, tmp_path / "audit")
    rates = {(r["model"], r["detector"]): r["leakage_rate"] for r in pq.read_table(tmp_path / "audit" / "leakage_rates.parquet").to_pylist()}
    assert rates == {("base", "gray-box"): pytest.approx(1 / 3), ("base", "black-box"): pytest.approx(1 / 3),
                     ("lora", "gray-box"): 1.0, ("lora", "black-box"): 1.0}
    assert (tmp_path / "audit" / "heatmap.png").stat().st_size > 1000
    assert "| lora | humaneval | gray-box | 3 | 3 |" in (tmp_path / "audit" / "leakage_rates.md").read_text()
    write_table(_scores({"loss": [True]}), SCORES_SCHEMA, tmp_path / "loss.parquet")
    with pytest.raises(ValueError, match="no SrDetection scores"):
        audit({("x", "humaneval"): tmp_path / "loss.parquet"}, tmp_path / "bad")
