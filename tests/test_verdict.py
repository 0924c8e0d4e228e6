"""The verdict page (report/verdict.py, rule verdict): its wording rule on
tiny hand-made tables (evidence / no evidence / inconclusive), its closed
form for power, the audit without a blind baseline, and the page of the
micro run (structure, headline, the summary report's length); and the words
no result or document may use."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from leaktrace.report.verdict import FORBIDDEN, answer, check_wording, detectable_auc, load_tables, render_verdict
from leaktrace.report.verdict import Test as Row

REPO = Path(__file__).resolve().parents[1]


def row(name="t", p=None, valid=True, detects="AUC ≥ 0.80"):
    return Row(name, "r", "null", "condition", "power", p, valid, detects)


def test_a_valid_rejection_below_alpha_over_m_is_evidence_naming_its_test():
    text = answer([row("dataset inference", 0.001), row("twin", 0.5)], alpha=0.05)
    assert text.startswith("**Evidence of exposure** (dataset inference, p = 0.001 ≤ α/m = 0.025, m = 2 tests")


def test_a_rejection_above_alpha_over_m_is_not_evidence():
    # 0.03 <= alpha but > alpha / 2: Bonferroni over the two tests keeps it out
    assert answer([row("a", 0.03), row("b", 0.9)], alpha=0.05).startswith("**No evidence of exposure**")


def test_a_rejection_whose_condition_fails_or_was_not_measured_is_inconclusive():
    failing = answer([row("dataset inference", 1e-6, valid=False)], alpha=0.05)
    assert failing.startswith("**Inconclusive**: dataset inference rejects (p = 1.0e-06") and "fails" in failing
    unknown = answer([row("dataset inference", 1e-6, valid=None)], alpha=0.05)
    assert unknown.startswith("**Inconclusive**") and "was not measured" in unknown


def test_no_rejection_reads_no_evidence_with_what_the_valid_test_could_have_detected():
    text = answer([row("dataset inference", 0.4, detects="AUC ≥ 0.83")], alpha=0.05)
    assert text == (
        "**No evidence of exposure** (no test rejects at α/m = 0.05; dataset inference could have detected AUC ≥ 0.83)."
    )


def test_no_rejection_without_a_valid_powered_test_is_inconclusive():
    assert answer([row("a", 0.4, valid=None)], alpha=0.05).startswith("**Inconclusive**: no test rejects")
    assert answer([row("a", 0.4, detects=None)], alpha=0.05).startswith("**Inconclusive**: no test rejects")
    assert answer([Row("scan", "2 copies", "n", "c", "p", valid=True)], alpha=0.05).startswith(
        "Inconclusive: no test with a p-value"
    )


def test_detectable_auc_is_the_mann_whitney_normal_approximation():
    # 10 vs 10 at alpha 0.05, 80% power: 0.5 + (1.6449 + 0.8416) * sqrt(21 / 1200) = 0.8289
    assert detectable_auc(10, 10, 0.05) == pytest.approx(0.5 + 2.486475 * (21 / 1200) ** 0.5, abs=1e-5)
    assert detectable_auc(10, 10, 0.05) == pytest.approx(0.8289, abs=1e-4)
    assert detectable_auc(2, 2, 0.025) == 1.0  # capped: nothing below AUC 1 is detectable
    assert detectable_auc(0, 5, 0.05) is None


def test_check_wording_refuses_every_forbidden_phrase():
    for phrase in FORBIDDEN:
        with pytest.raises(ValueError, match="no evidence"):
            check_wording(f"The model was {phrase.upper()} on it.", "page")
    check_wording("No evidence of exposure (could have detected AUC ≥ 0.8).")


AUDIT_INFERENCE = pa.schema(
    [
        ("model", pa.string()),
        ("benchmark", pa.string()),
        ("n_suspect", pa.int32()),
        ("n_control", pa.int32()),
        ("p_value", pa.float64()),
        ("null", pa.string()),
        ("null_seeds", pa.int32()),
        ("null_rejected", pa.int32()),
        ("null_verdict", pa.string()),
    ]
)


def write_audit(root: Path, rows: list[dict], blind: list[dict] | None = None) -> list[Path]:
    (root / "audit").mkdir(parents=True)
    paths = [root / "audit" / "dataset_inference.parquet"]
    pq.write_table(pa.Table.from_pylist(rows, AUDIT_INFERENCE), paths[0])
    if blind is not None:
        paths.append(root / "audit" / "blind_baseline.parquet")
        pq.write_table(pa.Table.from_pylist(blind), paths[1])
    return paths


def inference_row(model, p, n_suspect=60, n_control=60):
    return {
        "model": model,
        "benchmark": "b",
        "n_suspect": n_suspect,
        "n_control": n_control,
        "p_value": p,
        "null": "random halves of the control set",
        "null_seeds": 20,
        "null_rejected": 1,
        "null_verdict": "within binomial margin",
    }


def test_audit_without_a_blind_baseline_says_not_measured_and_stays_inconclusive(tmp_path):
    """Main's audit tables (no blind baseline): a tiny p reads inconclusive,
    never evidence, and the row says the controls' exchangeability is not measured."""
    paths = write_audit(tmp_path, [inference_row("m", 3.9e-10), inference_row("n", 0.7)])
    page = render_verdict(load_tables(paths, tmp_path), "audit", 0.05, 0.05)
    sections = re.split(r"\n## ", page)[1:]
    assert [s.splitlines()[0] for s in sections] == ["m × b", "n × b"]
    assert "**Answer**: **Inconclusive**: dataset inference rejects (p = 3.9e-10" in sections[0]
    assert "| not measured: no blind baseline in this run" in sections[0]
    assert "**Answer**: **Inconclusive**: no test rejects" in sections[1]
    assert all("**What this run cannot tell you**" in s for s in sections)


def test_audit_with_exchangeable_controls_gives_evidence_or_no_evidence(tmp_path):
    blind = [
        {"benchmark": "b", "auc": 0.52, "ci_low": 0.41, "ci_high": 0.63, "p_value": 0.6, "controls_exchangeable": True}
    ]
    paths = write_audit(tmp_path, [inference_row("m", 2.9e-4), inference_row("n", 0.7)], blind)
    page = render_verdict(load_tables(paths, tmp_path), "audit", 0.05, 0.05)
    m, n = re.split(r"\n## ", page)[1:]
    assert "**Answer**: **Evidence of exposure** (dataset inference, p = 2.9e-04" in m
    assert "cannot tell them apart (blind AUC 0.52 [0.41, 0.63]" in m
    # 30 vs 30 held-out halves at 0.025: 0.5 + (1.96 + 0.8416) * sqrt(61 / 10800) = 0.7106
    assert (
        "**Answer**: **No evidence of exposure** (no test rejects at α/m = 0.05; dataset inference could have "
        "detected AUC ≥ 0.71)" in n
    )


def test_a_table_outside_the_results_directory_is_refused(tmp_path):
    paths = write_audit(tmp_path / "run", [inference_row("m", 0.5)])
    with pytest.raises(ValueError, match="not under the run's results directory"):
        load_tables(paths, tmp_path / "other")


# -- the words of results and docs -------------------------------------------------------------------------------


def wording_sources() -> list[Path]:
    """The documentation, the report captions and the config files (whose
    comments document the keys)."""
    return sorted(
        [
            *(REPO / "docs").rglob("*.md"),
            REPO / "README.md",
            *(REPO / "report").glob("*.rst"),
            *(REPO / "config").rglob("*.yaml"),
        ]
    )


def test_no_document_caption_or_config_comment_concludes_a_model_was_not_trained():
    for path in wording_sources():
        check_wording(path.read_text(), str(path.relative_to(REPO)))


# -- the micro run -----------------------------------------------------------------------------------------------


def test_micro_verdict_has_a_section_per_model_and_a_short_headline(micro_run):
    workdir, _ = micro_run
    out = workdir / "results" / "micro"
    page = (out / "verdict.md").read_text()
    detection = pq.read_table(out / "aggregate/humaneval/detection.parquet").to_pylist()
    head, *sections = re.split(r"\n## (?=\S+ × )", page)
    models = {r["model"] for r in detection}
    assert {s.splitlines()[0] for s in sections} >= {f"{m} × humaneval" for m in models}
    headline = head[head.index("## Testbed headline: humaneval") :]
    assert len(headline.strip().splitlines()) <= 30 and "Calibration table" in headline
    assert "| detector | base model AUC | 1:1, epoch 1 | 1:2, epoch 1 |" in headline
    blind = pq.read_table(out / "calibration/humaneval/blind_baseline.parquet").to_pylist()[0]
    assert f"Blind baseline (text only, no model): AUC {blind['auc']:.2f} [" in headline  # the testbed's own
    for section in sections:
        assert re.search(
            r"\*\*Answer\*\*: \*\*(Evidence of exposure|No evidence of exposure|Inconclusive)\*\*", section
        )
        assert "| test | result | null | validity in this run | could have detected |" in section
        assert "**What this run cannot tell you**" in section
        assert "[pairs.parquet](leakage/training-mix/pairs.parquet)" in section  # the scan's copies, linked
    target = next(s for s in sections if s.startswith("target-r1-s0-e1 × "))
    assert "| dataset inference |" in target and "| complement twin (twin-r1-s0-e1) |" in target
    # the audit part of the micro run: one section per audited model, the blind baseline not measured
    for model in ("base", "lora", "tiny"):
        assert any(s.startswith(f"{model} × humaneval") for s in sections), model
    summary = (out / "aggregate/humaneval/report.md").read_text()
    assert len(summary.splitlines()) <= 300
    for family in ("detection", "calibration", "functional", "scans", "mutations", "contamination", "watermark"):
        assert f"]({family}.md)" in summary and (out / "aggregate/humaneval" / f"{family}.md").is_file()
    for path in [out / "verdict.md", *(out / "aggregate").rglob("*.md")]:
        check_wording(path.read_text(), str(path.relative_to(out)))


def test_the_per_sample_row_says_when_no_flag_can_be_raised():
    """13 controls (the default's filtered subset): a conformal p-value is at least 1/14 > 0.05."""
    from leaktrace.report.verdict import _unreachable_flags

    assert _unreachable_flags({"n_control": 13, "alpha": 0.05}) == " (none can be raised: 13 controls give p ≥ 1/14)"
    assert _unreachable_flags({"n_control": 19, "alpha": 0.05}) == ""
    check_wording(_unreachable_flags({"n_control": 13, "alpha": 0.05}), "the row")
