"""verdict.json (report/verdict_json.py): the verdict page's answers for a
program, valid against docs/verdict.schema.json, one tier per answer as the
page words it, the test the answer rests on, and every scan's copies by
kind, a scan-only run included."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from leaktrace.report.verdict import BY_DESIGN, NOT_REFUTED, Section, TableFiles, load_tables
from leaktrace.report.verdict import Test as Row
from leaktrace.report.verdict_json import carrying_test, section_record, verdict_record
from leaktrace.settings.verdict import PageSettings

REPO = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((REPO / "docs" / "verdict.schema.json").read_text())
BLIND_NOT_REJECTED = {
    "benchmark": "b",
    "auc": 0.52,
    "ci_low": 0.41,
    "ci_high": 0.63,
    "p_value": 0.6,
    "blind_rejected": False,
    "detectable_auc": 0.66,
}


def settings(run: str = "audit") -> PageSettings:
    return PageSettings(
        run=run,
        calibration_alpha=0.05,
        contamination_alpha=0.05,
        max_detectable_auc=0.75,
        training_data=(),
        random_order=(),
    )


def row(name: str, p: float | None, state: str = BY_DESIGN, detectable: float = 0.70, tier: str | None = "design"):
    return Row(name, "r", "null", "condition", "power", p, state, f"AUC ≥ {detectable:.2f}", tier, None, detectable)


def inference_row(model: str, p: float) -> dict:
    """A row of audit/dataset_inference.parquet: 60 suspects against 60 controls."""
    return {
        "model": model,
        "benchmark": "b",
        "n_suspect": 60,
        "n_control": 60,
        "p_value": p,
        "null": "random halves of the control set",
        "null_seeds": 20,
        "null_rejected": 1,
        "null_verdict": "within binomial margin",
    }


def write_audit(root: Path, rows: list[dict], blind: list[dict]) -> TableFiles:
    (root / "audit").mkdir(parents=True)
    files = TableFiles(
        audit_inference=root / "audit" / "dataset_inference.parquet", blind=root / "audit" / "blind_baseline.parquet"
    )
    pq.write_table(pa.Table.from_pylist(rows), files.audit_inference)
    pq.write_table(pa.Table.from_pylist(blind), files.blind)
    return files


def write_scan(root: Path, copies: dict[str, int]) -> Path:
    folder = root / "leakage" / "corpus"
    folder.mkdir(parents=True)
    summary = {"benchmark": "b", "corpus": "resources/audit/corpus", "size": 20, "type3": 0, **copies}
    pq.write_table(pa.Table.from_pylist([summary]), folder / "summary.parquet")
    return folder / "summary.parquet"


def test_an_audit_with_a_scan_is_written_valid_with_each_answer_its_tier_and_test(tmp_path):
    paths = write_audit(tmp_path, [inference_row("m", 2.9e-4), inference_row("n", 0.7)], [BLIND_NOT_REJECTED])
    paths = dataclasses.replace(
        paths, scans={"corpus": write_scan(tmp_path, {"type1": 1, "type2": 1, "input_leaks": 0})}
    )
    record = verdict_record(load_tables(paths, tmp_path / "verdict.md"), settings())
    jsonschema.validate(record, SCHEMA)
    m, n = record["answers"]
    assert (m["model"], m["benchmark"], m["tier"], m["carried_by"]) == (
        "m",
        "b",
        "observational finding",
        "dataset inference",
    )
    assert m["answer"].startswith("Suspects score higher than controls (dataset inference, p = 2.9e-04")
    inference = next(t for t in m["tests"] if t["name"] == "dataset inference")
    assert inference["p_value"] == pytest.approx(2.9e-4) and inference["tier"] == "observational"
    assert inference["validity"]["state"] == "not refuted" and inference["valid"] and inference["in_answer"]
    assert n["tier"] == "no evidence" and n["carried_by"] == "dataset inference"
    scan = {"scan": "corpus", "corpus": "resources/audit/corpus", "samples": 20, "total": 2}
    assert m["scans"] == [scan | {"copies": {"type1": 1, "type2": 1, "type3": 0, "input_leaks": 0}}]
    assert record["scans"] == [m["scans"][0] | {"benchmark": "b", "report": "leakage/corpus/report.md"}]


def test_a_scan_only_run_has_scans_and_no_answers(tmp_path):
    record = verdict_record(
        load_tables(
            TableFiles(scans={"corpus": write_scan(tmp_path, {"type1": 0, "type2": 3})}), tmp_path / "verdict.md"
        ),
        settings("scan"),
    )
    jsonschema.validate(record, SCHEMA)
    assert record["answers"] == [] and record["scans"][0]["copies"]["type2"] == 3 and record["run"] == "scan"


@pytest.mark.parametrize(
    ("tests", "tier", "carried_by"),
    [
        ([row("complement twin", 0.001), row("watermark", 0.5)], "design evidence", "complement twin"),
        ([row("dataset inference", 0.001, NOT_REFUTED, tier="observational")], "observational finding", "dataset inference"),
        ([row("dataset inference", 0.3, NOT_REFUTED, detectable=0.7)], "no evidence", "dataset inference"),
        ([row("dataset inference", 0.3, NOT_REFUTED, detectable=0.9)], "inconclusive", "dataset inference"),
        ([row("count", None, tier=None)], "inconclusive", None),
    ],
)  # fmt: skip
def test_each_of_the_four_answers_has_its_tier(tests, tier, carried_by):
    record = section_record(Section("m", "b", tests, ["c"]), settings())
    assert (record["tier"], record["carried_by"]) == (tier, carried_by)
    assert "**" not in record["answer"]


def test_the_schema_refuses_a_tier_the_page_has_not(tmp_path):
    paths = write_audit(tmp_path, [inference_row("m", 0.7)], [BLIND_NOT_REJECTED])
    record = verdict_record(load_tables(paths, tmp_path / "verdict.md"), settings())
    record["answers"][0]["tier"] = "not trained"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(record, SCHEMA)


def test_the_carrying_test_is_the_first_one_the_answer_names():
    tests = [row("leakage_rate", None), row("dataset inference", None)]
    assert carrying_test("Inconclusive: dataset inference rejects ... leakage_rate", tests) == "dataset inference"
    assert carrying_test("no test", tests) is None
