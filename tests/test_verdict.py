"""The verdict page (report/verdict.py, rule verdict): its two-tier rule on
tiny hand-made tables (evidence by design / observational / no evidence /
inconclusive), its closed form for power, the audit without and with a
blind baseline, the page of the micro run and of the shipped audit
(structure, headline, answers that never cite a row their table does not
count); and the words no result or document may use."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from leaktrace.report.verdict import (
    BY_DESIGN,
    FAILS,
    FORBIDDEN,
    NOT_MEASURED,
    NOT_REFUTED,
    Context,
    TableFiles,
    answer,
    auc_power,
    check_wording,
    fmt_p,
    load_tables,
    render_verdict,
    training_copies,
)
from leaktrace.report.verdict import Test as Row
from leaktrace.settings.verdict import PageSettings

REPO = Path(__file__).resolve().parents[1]
ANSWER = re.compile(r"\*\*Answer\*\*: (.*)")


def row(name="t", p=None, state=BY_DESIGN, detectable=0.70, tier="design", counted=None):
    detects = None if detectable is None else f"AUC ≥ {detectable:.2f}"
    return Row(name, "r", "null", "condition", "power", p, state, detects, tier, counted, detectable)


def settings(run="audit", **kw):
    base = dict(
        run=run,
        calibration_alpha=0.05,
        contamination_alpha=0.05,
        max_detectable_auc=0.75,
        training_data=(),
        random_order=(),
    )
    return PageSettings(**(base | kw))


def test_a_design_rejection_below_alpha_over_m_is_evidence_naming_its_test():
    text = answer([row("complement twin", 0.001), row("watermark", 0.5)], alpha=0.05)
    assert text.startswith("**Evidence of exposure** (complement twin, p = 0.001 ≤ α/m = 0.025, m = 2 tests")
    assert "proof by design" in text


def test_an_observational_rejection_never_reads_evidence_of_exposure():
    """Against the user's controls a rejection says what it found and what it
    assumes, with the blind baseline's and the negative controls' findings."""
    context = Context(blind="found no text difference it could detect (...)", negative_controls="no negative control")
    text = answer([row("dataset inference", 1e-6, NOT_REFUTED, tier="observational")], 0.05, context=context)
    assert "Evidence of exposure" not in text
    assert text.startswith("**Suspects score higher than controls** (dataset inference, p = 1.0e-06")
    assert "exposure only if the controls were drawn like the suspects" in text
    assert "the blind baseline found no text difference" in text and "no negative control" in text
    # a design test beside it carries the answer when it rejects too
    both = answer([row("dataset inference", 1e-6, NOT_REFUTED, tier="observational"), row("twin", 1e-4)], 0.05)
    assert both.startswith("**Evidence of exposure** (twin")


def test_a_rejection_above_alpha_over_m_is_not_read():
    # 0.03 <= alpha but > alpha / 2: Bonferroni over the two tests keeps it out
    assert answer([row("a", 0.03), row("b", 0.9)], alpha=0.05).startswith("**No evidence of exposure**")


def test_a_rejection_whose_condition_fails_was_not_measured_or_is_not_counted_is_inconclusive():
    failing = answer([row("dataset inference", 1e-6, FAILS)], alpha=0.05)
    assert failing.startswith("**Inconclusive**: dataset inference rejects (p = 1.0e-06") and "fails" in failing
    unknown = answer([row("dataset inference", 1e-6, NOT_MEASURED)], alpha=0.05)
    assert unknown.startswith("**Inconclusive**") and "was not measured" in unknown
    # its table does not count it (a gate closed): never cited as valid, whatever its state
    gated = answer([row("reference_contrast (loss)", 1e-4, NOT_REFUTED, tier="observational", counted=False)], 0.05)
    assert gated.startswith("**Inconclusive**: reference_contrast (loss) rejects") and "fails" in gated


def test_no_evidence_only_where_the_most_sensitive_valid_test_detects_at_most_max_detectable_auc():
    text = answer([row("dataset inference", 0.4, detectable=0.71)], alpha=0.05)
    assert text == (
        "**No evidence of exposure** (no test rejects at α/m = 0.05; dataset inference could have detected AUC ≥ 0.71)."
    )
    # 10 suspects: AUC 0.96 detectable, above 0.75: too few samples, whatever the p-value
    weak = answer([row("dataset inference", 0.4, detectable=0.96)], alpha=0.05)
    assert weak.startswith("**Inconclusive**: too few samples to detect less than AUC 0.96")
    assert answer([row("d", 0.4, detectable=0.96)], 0.05, max_auc=0.97).startswith("**No evidence of exposure**")
    observational = answer([row("dataset inference", 0.4, NOT_REFUTED, detectable=0.7, tier="observational")], 0.05)
    assert (
        observational.startswith("**No evidence of exposure**") and "(observational: exposure only if" in observational
    )


def test_no_rejection_without_a_valid_powered_test_is_inconclusive():
    assert answer([row("a", 0.4, NOT_MEASURED)], alpha=0.05).startswith("**Inconclusive**: no test rejects")
    assert answer([row("a", 0.4, detectable=None)], alpha=0.05).startswith("**Inconclusive**: no test rejects")
    assert answer([Row("scan", "2 copies", "n", "c", "p", state=BY_DESIGN)], alpha=0.05).startswith(
        "**Inconclusive**: no test with a p-value"
    )
    failing = answer([row("dataset inference", 0.4, FAILS)], alpha=0.05)
    assert "no test's validity condition survived this run (dataset inference: condition)" in failing


def test_no_p_value_prints_as_zero():
    assert fmt_p(0.0) == "< 1e-300" and fmt_p(5.9e-27) == "5.9e-27" and fmt_p(0.036) == "0.036"


def test_copies_in_declared_training_data_are_named_with_every_kind():
    scans = [
        {"name": "mine", "Type-1": 1, "Type-2": 1, "Type-3": 0, "input leaks": 1},
        {"name": "other", "Type-1": 5, "Type-2": 0, "Type-3": 0, "input leaks": 0},
    ]
    text = training_copies(scans, ["mine"])
    assert "3 in `mine` (Type-1 1, Type-2 1, Type-3 0, input leaks 1)" in text and "other" not in text
    assert training_copies(scans, []) is None
    full = answer([row("t", 0.5)], 0.05, context=Context(training_copies=text))
    assert full.startswith("**No evidence of exposure**") and full.endswith(text)


def test_the_power_column_reads_the_one_detectable_auc():
    # 10 vs 10 at alpha 0.05, 80% power: 0.5 + (1.6449 + 0.8416) * sqrt(21 / 1200) = 0.8289 (calibration.power)
    text, phrase, auc = auc_power(10, 10, 0.05, "10 vs 10", "one-sided")
    assert auc == pytest.approx(0.8289, abs=1e-4) and phrase == "AUC ≥ 0.83"
    assert text == "AUC ≥ 0.83 (10 vs 10, one-sided, 80% power)"
    text, phrase, auc = auc_power(2, 2, 0.025, "2 vs 2", "one-sided")
    assert (phrase, auc) == (None, None) and text.startswith("nothing: 2 vs 2 are too few for 80% power")
    assert auc_power(0, 5, 0.05, "0 vs 5", "one-sided") == ("–", None, None)


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


def write_audit(root: Path, rows: list[dict], blind: list[dict] | None = None) -> TableFiles:
    (root / "audit").mkdir(parents=True)
    files = TableFiles(audit_inference=root / "audit" / "dataset_inference.parquet")
    pq.write_table(pa.Table.from_pylist(rows, AUDIT_INFERENCE), files.audit_inference)
    if blind is not None:
        files = dataclasses.replace(files, blind=root / "audit" / "blind_baseline.parquet")
        pq.write_table(pa.Table.from_pylist(blind), files.blind)
    return files


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
    page = render_verdict(load_tables(paths, tmp_path / "verdict.md"), settings())
    sections = re.split(r"\n## ", page)[1:]
    assert [s.splitlines()[0] for s in sections] == ["m × b", "n × b"]
    assert "**Answer**: **Inconclusive**: dataset inference rejects (p = 3.9e-10" in sections[0]
    assert "| not measured: controls drawn like the suspects; the blind baseline not run" in sections[0]
    assert "**Answer**: **Inconclusive**: no test rejects" in sections[1]
    assert all("**What this run cannot tell you**" in s for s in sections)


def test_audit_whose_blind_baseline_did_not_reject_reads_observational_or_no_evidence(tmp_path):
    blind = [
        {
            "benchmark": "b",
            "auc": 0.52,
            "ci_low": 0.41,
            "ci_high": 0.63,
            "p_value": 0.6,
            "blind_rejected": False,
            "detectable_auc": 0.66,
        }
    ]
    paths = write_audit(tmp_path, [inference_row("m", 2.9e-4), inference_row("n", 0.7)], blind)
    page = render_verdict(load_tables(paths, tmp_path / "verdict.md"), settings())
    m, n = re.split(r"\n## ", page)[1:]
    assert "**Answer**: **Evidence of exposure" not in page
    assert "**Answer**: **Suspects score higher than controls** (dataset inference, p = 2.9e-04" in m
    assert (
        "found no text difference it could detect (blind AUC 0.52 [0.41, 0.63], p = 0.6; 80% power at AUC ≥ 0.66)" in m
    )
    assert "| not refuted: controls drawn like the suspects" in m and "holds" not in page
    # 30 vs 30 held-out halves at 0.025: 0.5 + (1.96 + 0.8416) * sqrt(61 / 10800) = 0.7106
    assert (
        "**Answer**: **No evidence of exposure** (no test rejects at α/m = 0.05; dataset inference could have "
        "detected AUC ≥ 0.71 (observational" in n
    )


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
    assert f"Blind baseline (text only, no model, the same samples): AUC {blind['auc']:.2f} [" in headline
    for section in sections:
        assert "| test | kind of evidence | result | null | validity in this run | could have detected |" in section
        assert "**What this run cannot tell you**" in section
        assert "[pairs.parquet](leakage/training-mix/pairs.parquet)" in section  # the scan's copies, linked
    target = next(s for s in sections if s.startswith("target-r1-s0-e1 × "))
    assert "| dataset inference |" in target and "| complement twin (twin-r1-s0-e1) |" in target
    twin = next(s for s in sections if s.startswith("twin-r1-s0-e1 × "))
    assert "| complement twin (target-r1-s0-e1) | design |" in twin  # the twin's own section shows the test
    assert "the evaluation fold's whole split" in headline and "the same samples" in headline  # like with like
    # the audit part of the micro run: one section per audited model, the blind baseline not measured
    for model in ("base", "lora", "tiny"):
        assert any(s.startswith(f"{model} × humaneval") for s in sections), model
    summary = (out / "aggregate/humaneval/report.md").read_text()
    assert len(summary.splitlines()) <= 300
    for family in ("detection", "calibration", "functional", "scans", "mutations", "contamination", "watermark"):
        assert f"]({family}.md)" in summary and (out / "aggregate/humaneval" / f"{family}.md").is_file()
    for path in [out / "verdict.md", *(out / "aggregate").rglob("*.md")]:
        check_wording(path.read_text(), str(path.relative_to(out)))
    assert_answers_follow_their_tables(page)


def section_rows(section: str) -> dict[str, list[str]]:
    """test name -> its table cells (kind, result, null, validity, power)."""
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 6 and cells[0] not in ("test", "---"):
            rows[cells[0]] = cells[1:]
    return rows


def cited(answer_text: str) -> str | None:
    """The test an answer rests on: ``**Finding** (test name, p = ...``; None for no evidence / inconclusive."""
    if answer_text.startswith(("**No evidence", "**Inconclusive")):
        return None
    found = re.match(r"\*\*[^*]+\*\* \((.+?), p = ", answer_text)
    assert found, answer_text
    return found.group(1)


def assert_answers_follow_their_tables(page: str, uncounted: set[tuple[str, str]] = frozenset()) -> int:
    """Every answer that rests on a test cites a row of its own section's
    table whose validity was not refuted (by design or not refuted), an
    "Evidence of exposure" only a design row, and never a row of
    ``uncounted`` ((section title, test name) the run's tables do not count).
    Returns the number of answers checked."""
    sections = re.split(r"\n## (?=\S+ × )", page)[1:]
    assert sections
    for section in sections:
        title = section.splitlines()[0]
        (answer_text,) = ANSWER.findall(section)
        name = cited(answer_text)
        if name is None:
            continue
        rows = section_rows(section)
        assert name in rows, (title, name, list(rows))
        kind, _, _, validity, _ = rows[name]
        assert validity.startswith(("by design", "not refuted")), (title, name, validity)
        assert (title, name) not in uncounted, (title, name)
        if answer_text.startswith("**Evidence of exposure**"):
            assert kind == "design", (title, name, kind)
        else:
            assert kind == "observational" and "exposure only if" in answer_text, (title, answer_text)
    return len(sections)


AUDIT_NAMES = {"dataset_inference": "dataset inference", "negative_control_bootstrap": "negative-control bootstrap"}


def test_the_shipped_audit_page_never_cites_a_row_its_table_does_not_count(audit_run):
    results = audit_run
    page = (results / "verdict.md").read_text()
    rows = pq.read_table(results / "audit" / "verdicts.parquet").to_pylist()
    uncounted = {
        (
            f"{r['model']} × {r['benchmark']}",
            AUDIT_NAMES.get(r["test"], r["test"])
            if r["test"] == "dataset_inference"
            else f"{AUDIT_NAMES.get(r['test'], r['test'])} ({r['detector']})",
        )
        for r in rows
        if not r["counted_as_evidence"]
    }
    assert assert_answers_follow_their_tables(page, uncounted) == len({(r["model"], r["benchmark"]) for r in rows})
    assert (
        "**Answer**: **Evidence of exposure" not in page
    )  # no design test in the shipped audit: observational at most
    assert "controls_exchangeable" not in pq.read_schema(results / "audit" / "blind_baseline.parquet").names
    check_wording(page, "audit verdict.md")


def test_the_page_check_catches_an_answer_citing_a_refuted_or_uncounted_row():
    """The checker above is itself tested: an answer resting on a row whose
    validity fails, on an uncounted row, or an "Evidence" on an observational row, is caught."""
    table = "| test | kind of evidence | result | null | validity in this run | could have detected |\n| --- | --- | --- | --- | --- | --- |\n"
    good = (
        "\n## m × b\n\n**Answer**: **Evidence of exposure** (twin, p = 0.001 ≤ α/m = 0.05, m = 1 tests; proof).\n\n"
        + table
        + "| twin | design | r | n | by design: x | p |\n"
    )
    assert assert_answers_follow_their_tables(good) == 1
    with pytest.raises(AssertionError):
        assert_answers_follow_their_tables(good.replace("by design: x", "**fails**: x"))
    with pytest.raises(AssertionError):
        assert_answers_follow_their_tables(good, {("m × b", "twin")})
    with pytest.raises(AssertionError):
        assert_answers_follow_their_tables(good.replace("| twin | design |", "| twin | observational |"))


def test_the_per_sample_row_says_when_no_flag_can_be_raised():
    """13 controls (the default's filtered subset): a conformal p-value is at least 1/14 > 0.05."""
    from leaktrace.report.verdict import _unreachable_flags

    assert _unreachable_flags({"n_control": 13, "alpha": 0.05}) == " (none can be raised: 13 controls give p ≥ 1/14)"
    assert _unreachable_flags({"n_control": 19, "alpha": 0.05}) == ""
    check_wording(_unreachable_flags({"n_control": 13, "alpha": 0.05}), "the row")


# -- the smaller errors ------------------------------------------------------------------------------------------


def test_the_chance_null_tail_is_exact_where_scipy_underflows():
    """164 samples at chance 1/11 (10 variants each), 60 flagged: the exact
    binomial tail is 7.5e-22; scipy's poisson_binom(...).sf cancels to a wrong
    4.8e-15, and at 40 of 40 to 0."""
    import numpy as np
    from scipy.stats import binom

    from leaktrace.calibration.power import poisson_binomial_sf

    assert poisson_binomial_sf(np.full(164, 1 / 11), 60) == pytest.approx(binom.sf(59, 164, 1 / 11), rel=1e-9)
    assert poisson_binomial_sf(np.full(40, 0.1), 40) == pytest.approx(1e-40, rel=1e-9)
    assert poisson_binomial_sf(np.array([0.2, 0.5]), 0) == 1.0
    assert poisson_binomial_sf(np.array([0.2, 0.5]), 1) == pytest.approx(1 - 0.8 * 0.5)


def test_the_twins_resolution_follows_its_enumeration_and_its_section_shows_the_test():
    from leaktrace.report.verdict import twin_test

    base = {"model": "target", "twin": "twin", "method": "loss", "alpha": 0.05, "rejected": True}
    exact = twin_test([base | {"p_value": 1e-4, "n": 15, "exact": True, "n_sign_vectors": 2**15}], "target")
    assert "resolution 2^-15 = 3.1e-05 (every sign vector of 15 samples)" in exact.power
    sampled = twin_test([base | {"p_value": 1e-4, "n": 128, "exact": False, "n_sign_vectors": 10_000}], "target")
    assert "smallest p 1/10001 = 1.0e-04 (10,000 random sign vectors over 128 samples)" in sampled.power
    assert "2^-128" not in sampled.power
    mine = twin_test([base | {"p_value": 1e-4, "n": 15, "exact": True, "n_sign_vectors": 2**15}], "twin")
    assert mine is not None and mine.name == "complement twin (target)" and mine.tier == "design"


def test_pac_flags_are_counted_per_detector_not_summed():
    from leaktrace.report.verdict import audit_verdict_tests

    common = {"model": "m", "benchmark": "b", "test": "conformal_flags", "n_suspect": 60, "blind_rejected": False}
    rows = [common | {"detector": d, "n_flagged_pac": k, "note": "n"} for d, k in (("loss", 40), ("zlib", 67 - 40))]
    (flags,) = audit_verdict_tests(rows)
    assert flags.result == "PAC flags per detector (of 60 suspects): loss 40, zlib 27" and "107" not in flags.result


def test_a_chance_null_the_null_check_rejects_reads_fails():
    from leaktrace.report.verdict import chance_null_state

    rejected = {
        "model": "reference",
        "method": "srdetection_graybox",
        "rate": 0.383,
        "rate_low": 0.3,
        "rate_high": 0.47,
        "expected_rate": 0.156,
        "verdict": "outside CI of 1/(n+1)",
    }
    state, why = chance_null_state("gray-box", [rejected])
    assert state == FAILS and "0.383" in why and "0.156" in why
    state, _ = chance_null_state("gray-box", [rejected | {"verdict": "within CI of 1/(n+1)"}])
    assert state == NOT_REFUTED
    assert chance_null_state("black-box", [rejected])[0] == NOT_MEASURED


def test_an_audit_reads_evidence_only_from_its_design_tests(tmp_path):
    """The order test is design only where audit.random_order declares the
    benchmark's order random; the maintainer's watermark test always is."""
    paths = write_audit(tmp_path, [inference_row("m", 0.5)])
    order = {
        "model": "m",
        "benchmark": "b",
        "p_value": 1e-4,
        "n_examples": 60,
        "n_shards": 6,
        "n_permutations": 25,
        "p_method": "exact rank sum",
    }
    pq.write_table(pa.Table.from_pylist([order]), tmp_path / "audit" / "exchangeability.parquet")
    tables = load_tables(
        dataclasses.replace(paths, audit_exchangeability=tmp_path / "audit" / "exchangeability.parquet"),
        tmp_path / "verdict.md",
    )
    observational = render_verdict(tables, settings())
    assert "**Answer**: **Inconclusive**: exchangeability (Oren et al., published order) rejects (p = 1.0e-04" in (
        observational
    )
    assert "which the config does not declare (audit.random_order)" in observational
    declared = render_verdict(tables, settings(random_order=("b",)))
    assert (
        "**Answer**: **Evidence of exposure** (exchangeability (Oren et al., published order), p = 1.0e-04" in declared
    )
    mark = {"model": "m", "benchmark": "b", "p_value": 2e-5, "rank_sum": 30, "expected": 50.0, "testable": 20}
    pq.write_table(pa.Table.from_pylist([mark]), tmp_path / "audit" / "watermark.parquet")
    tables = load_tables(
        dataclasses.replace(paths, audit_watermark=tmp_path / "audit" / "watermark.parquet"), tmp_path / "verdict.md"
    )
    page = render_verdict(tables, settings())
    assert "**Answer**: **Evidence of exposure** (randomized publication (watermark rank sum), p = 2.0e-05" in page
    assert assert_answers_follow_their_tables(page) == 1


def test_an_audit_row_that_does_not_reject_stays_valid_whatever_its_counted_flag():
    """counted_as_evidence is false for every row that does not reject; only a
    rejection its table does not count (a gate closed) loses its validity."""
    from leaktrace.report.verdict import audit_verdict_tests

    common = {"model": "m", "benchmark": "b", "n_suspect": 60, "n_controls_used": 60, "n_controls_dropped": 0}
    common |= {"alpha": 0.05, "blind_rejected": False, "assumes_exchangeable": True, "verdict": "v", "effect": "AUC"}
    quiet = common | {"test": "dataset_inference", "detector": "", "p_value": 0.4, "detectable_effect": 0.71}
    quiet |= {"counted_as_evidence": False}
    (test,) = audit_verdict_tests([quiet])
    assert test.valid and answer([test], 0.05).startswith("**No evidence of exposure**")
    gated = quiet | {"p_value": 0.001, "counted_as_evidence": False}
    (test,) = audit_verdict_tests([gated])
    assert not test.valid and answer([test], 0.05).startswith("**Inconclusive**")
    counted = quiet | {"p_value": 0.001, "counted_as_evidence": True}
    (test,) = audit_verdict_tests([counted])
    assert answer([test], 0.05).startswith("**Suspects score higher than controls**")
