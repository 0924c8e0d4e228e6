"""The functional-memorization aggregate (rule counterfactual_aggregate) on
synthetic similarity tables whose answers are known: Table 1 on complete
cases and the paper's missing = 0 for execution, Table 2's counts at the
thresholds and its unique rows, the verbatim counts, failures counted and
never counted as memorized, the members-minus-non-members interval for a
planted effect and for none, severity and length buckets, App. B's filter
(only YES analysed), a missing family, and the stage's bytes across reruns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from leaktrace.cli import main
from leaktrace.evaluate import functional as fm
from leaktrace.seeding import derive_seed

SETTINGS = '{"tau_text": 0.75, "tau_func": 0.75, "bootstrap_resamples": 200}'


def frame(values: dict[tuple[str, str], tuple], split: dict[str, str] | None = None) -> pd.DataFrame:
    """The stage's long table from {(sample, metric): (target, reference[, target_outcome, reference_outcome])}."""
    rows = []
    for (sample, metric), value in values.items():
        t, r, *outcomes = value
        t_out, r_out = outcomes or ("ok" if t is not None else "failed", "ok" if r is not None else "failed")
        rows.append(
            {
                "sample_id": sample,
                "metric": metric,
                "target": t,
                "reference": r,
                "delta": None if t is None or r is None else t - r,
                "target_outcome": t_out,
                "reference_outcome": r_out,
                "split": (split or {}).get(sample),
            }
        )
    sim = pd.DataFrame(rows)
    for side in fm.SIDES:
        sim[side] = sim[side].astype(float)
    return sim


# s1: low BLEU, CodeBLEU 0.8 vs 0.5 -> memorized (CodeBLEU); Nikiema equivalent for both -> not
# s2: BLEU 0.8 (near-verbatim)        -> never functional memorization
# s3: BLEU exactly 0.75               -> not below tau_text; Nikiema at exactly 0.75 vs 0.74 would count otherwise
# s4: Nikiema at exactly 0.75 vs 0.74 -> memorized (Nikiema only)
# s5: CodeBLEU 0.9 but the reference did not parse -> not evaluated, not counted
# s6: CodeBLEU and our judge 0.8 vs 0.2 -> memorized under both
TABLE2 = {
    ("s1", "bleu"): (0.5, 0.1),
    ("s1", "codebleu"): (0.8, 0.5),
    ("s1", "judge_nikiema"): (0.9, 0.9),
    ("s2", "bleu"): (0.8, 0.1),
    ("s2", "codebleu"): (0.9, 0.1),
    ("s2", "judge_nikiema"): (0.9, 0.1),
    ("s3", "bleu"): (0.75, 0.1),
    ("s3", "judge_nikiema"): (0.75, 0.74),
    ("s4", "bleu"): (0.2, 0.1),
    ("s4", "judge_nikiema"): (0.75, 0.74),
    ("s4", "codebleu"): (0.74, 0.1),
    ("s5", "bleu"): (0.2, 0.1),
    ("s5", "codebleu"): (0.9, None, "ok", "parse_error:generation"),
    ("s6", "bleu"): (0.3, 0.3),
    ("s6", "codebleu"): (0.8, 0.2),
    ("s6", "judge_paper"): (0.8, 0.2),
}


def by_metric(rows: list[dict], group: str = "all") -> dict[str, dict]:
    return {r["metric"]: r for r in rows if r["group"] == group}


def test_table2_counts_at_the_thresholds_with_unique_rows():
    rows = by_metric(fm.memorization_rows(frame(TABLE2), 0.75, 0.75))
    assert {m: (r["count"], r["n_evaluated"], r["n_samples"]) for m, r in rows.items()} == {
        "codebleu": (2, 4, 6),  # s1, s6 of s1, s2, s4, s6 (s5's reference unknown)
        "judge_nikiema": (1, 4, 6),  # s4
        "judge_paper": (1, 1, 6),  # s6
        fm.UNIQUE_ANY: (3, 5, 6),  # s1, s4, s6
        fm.UNIQUE_EXCLUDING_LENIENT: (2, 4, 6),  # s1, s6
    }
    assert rows["codebleu"]["share"] == pytest.approx(2 / 6)
    assert [r["metric"] for r in fm.memorization_rows(frame(TABLE2), 0.75, 0.75)][:3] == [
        "codebleu",
        "judge_nikiema",
        "judge_paper",
    ]


def test_table2_needs_the_targets_bleu():
    sim = frame({("s1", "codebleu"): (0.9, 0.1), ("s2", "codebleu"): (0.9, 0.1), ("s2", "bleu"): (0.1, 0.1)})
    (row, *_) = fm.memorization_rows(sim, 0.75, 0.75)
    assert (row["count"], row["n_evaluated"]) == (1, 1)


def test_exact_and_near_verbatim_counterfactual_counts():
    sim = frame(
        {
            ("a", "exact_match"): (1.0, 0.0),
            ("a", "bleu"): (1.0, 0.2),  # exact and near-verbatim, counterfactually
            ("b", "exact_match"): (1.0, 1.0),
            ("b", "bleu"): (1.0, 1.0),  # both models: generalisation, not memorization
            ("c", "exact_match"): (0.0, 0.0),
            ("c", "bleu"): (0.75, 0.74),  # near-verbatim at exactly tau_text
            ("d", "exact_match"): (0.0, 0.0),
            ("d", "bleu"): (0.74, 0.0),
        }
    )
    rows = {r["kind"]: r for r in fm.verbatim_rows(sim, 0.75)}
    assert (rows["exact"]["target"], rows["exact"]["reference"], rows["exact"]["counterfactual"]) == (2, 1, 1)
    assert (
        rows["near_verbatim"]["target"],
        rows["near_verbatim"]["reference"],
        rows["near_verbatim"]["counterfactual"],
    ) == (3, 1, 2)
    assert rows["near_verbatim"]["share"] == 0.5


def test_failures_are_counted_by_cause_and_means_use_known_values():
    sim = frame(
        {
            ("a", "tsed"): (0.5, None, "ok", "parse_error:generation"),
            ("b", "tsed"): (None, None, "parse_error:ground_truth", "parse_error:ground_truth"),
            ("c", "tsed"): (0.7, 0.2),
            ("d", "tsed"): (0.9, 0.4),
        }
    )
    outcomes = {(r["model"], r["outcome"]): r["count"] for r in fm.outcome_rows(sim)}
    assert outcomes == {
        ("target", "ok"): 3,
        ("target", "parse_error:ground_truth"): 1,
        ("reference", "ok"): 2,
        ("reference", "parse_error:generation"): 1,
        ("reference", "parse_error:ground_truth"): 1,
    }
    (row,) = fm.summary_rows(sim, 100, 0)
    # complete cases: c and d only, for target, reference and Δ alike
    assert (row["convention"], row["n"], row["n_samples"]) == (fm.COMPLETE_CASES, 2, 4)
    assert (row["target_mean"], row["reference_mean"], row["delta_mean"]) == pytest.approx((0.8, 0.3, 0.5))
    assert row["delta_mean"] == pytest.approx(row["target_mean"] - row["reference_mean"])
    assert row["target_low"] <= row["target_mean"] <= row["target_high"]


# e1: the reference did not run; e2: both ran; e3: the screen passed neither; e4: both ran, the reference better
EXECUTION = {
    ("e1", "execution"): (1.0, None, "ok", "timeout"),
    ("e2", "execution"): (0.5, 0.25),
    ("e3", "execution"): (None, None, "screen:no_clone", "screen:no_clone"),
    ("e4", "execution"): (0.0, 1.0),
    **{(f"e{k}", "bleu"): (0.1, 0.1) for k in range(1, 5)},
}


def test_execution_rows_count_a_missing_value_as_zero_as_the_paper_and_on_complete_cases():
    rows = [r for r in fm.summary_rows(frame(EXECUTION), 100, 0) if r["metric"] == "execution"]
    paper, complete = rows
    assert (paper["convention"], paper["n"]) == (fm.MISSING_AS_ZERO, 4)
    assert (paper["target_mean"], paper["reference_mean"], paper["delta_mean"]) == pytest.approx(
        (1.5 / 4, 1.25 / 4, 0.25 / 4)
    )
    assert (complete["convention"], complete["n"]) == (fm.COMPLETE_CASES, 2)  # e2, e4
    assert (complete["target_mean"], complete["reference_mean"], complete["delta_mean"]) == pytest.approx(
        (0.25, 0.625, -0.375)
    )
    (bleu,) = [r for r in fm.summary_rows(frame(EXECUTION), 100, 0) if r["metric"] == "bleu"]
    assert bleu["convention"] == fm.COMPLETE_CASES  # missing = 0 is the execution metrics' alone
    table2 = {
        (r["metric"], r["convention"]): (r["count"], r["n_evaluated"])
        for r in fm.memorization_rows(frame(EXECUTION), 0.75, 0.75)
    }
    # e1: the target's clone against a reference that did not run counts under missing = 0 only
    assert table2 == {
        ("execution", fm.MISSING_AS_ZERO): (1, 4),
        ("execution", fm.COMPLETE_CASES): (0, 2),
        (fm.UNIQUE_ANY, fm.MISSING_AS_ZERO): (1, 4),
        (fm.UNIQUE_EXCLUDING_LENIENT, fm.MISSING_AS_ZERO): (1, 4),
    }


def planted(effect: float, n: int = 40) -> pd.DataFrame:
    """BLEU with Δ of ``effect`` + noise for members and noise for non-members;
    TSED with the very same Δ for both splits."""
    rng = np.random.default_rng(derive_seed(0, "planted"))
    noise = rng.normal(0, 0.1, n)
    values, split = {}, {}
    for i in range(2 * n):
        sid, member = f"x{i}", i < n
        split[sid] = "member" if member else "non-member"
        values[(sid, "bleu")] = (0.3 + (effect if member else 0.0) + noise[i % n], 0.3)
        values[(sid, "tsed")] = (0.3 + noise[i % n], 0.3)
    return frame(values, split)


def test_member_difference_interval_lies_above_zero_for_a_planted_effect_only():
    rows = {r["metric"]: r for r in fm.member_difference_rows(planted(0.2), 500, 7)}
    bleu, tsed = rows["bleu"], rows["tsed"]
    assert bleu["difference"] == pytest.approx(0.2) and bleu["members_above"] and bleu["low"] > 0
    assert (
        tsed["difference"] == pytest.approx(0.0, abs=1e-12)
        and not tsed["members_above"]
        and tsed["low"] < 0 < tsed["high"]
    )
    (reverse, _) = fm.member_difference_rows(planted(-0.2), 500, 7)  # non-members above members: no signal either
    assert reverse["high"] < 0 and not reverse["members_above"]
    assert (bleu["n_member"], bleu["n_non_member"]) == (40, 40)
    assert fm.member_difference_rows(planted(0.2), 500, 7) == fm.member_difference_rows(planted(0.2), 500, 7)  # seeded
    without_split = planted(0.2).assign(split=None)
    assert fm.member_difference_rows(without_split, 500, 7) == []
    assert {r["group"] for r in fm.summary_rows(planted(0.2), 50, 7)} == {"all", "member", "non-member"}


def test_severity_buckets_and_correlation():
    sim = frame({(f"s{k}", "bleu"): (0.1 * k, 0.0) for k in range(1, 11)})
    rows = fm.severity_rows(sim, {f"s{k}": k for k in range(1, 10)})  # s10 has no severity: left out
    buckets = {r["bucket"]: r for r in rows if r["group"] == "all"}
    assert {b: r["n"] for b, r in buckets.items()} == {"low": 3, "medium": 4, "high": 2, "all": 9}
    assert buckets["low"]["delta_mean"] == pytest.approx(0.2) and buckets["high"]["delta_mean"] == pytest.approx(0.85)
    assert buckets["all"]["severity_delta_r"] == pytest.approx(1.0) and buckets["low"]["severity_delta_r"] is None


def test_severity_rows_are_complete_cases():
    sim = frame({("a", "bleu"): (0.4, 0.1), ("b", "bleu"): (0.9, None, "ok", "failed"), ("c", "bleu"): (0.2, 0.2)})
    (low, everything) = fm.severity_rows(sim, {"a": 1, "b": 2, "c": 3})
    assert (low["n"], low["target_mean"], low["delta_mean"]) == (2, pytest.approx(0.3), pytest.approx(0.15))
    assert everything["bucket"] == "all" and everything["n"] == 2


def test_length_buckets_and_correlations_by_hand():
    # signature characters 40, 60, 120, 30; context 50, 150, 6000, 2500; body lines 5, 12, 30, 12
    lengths = pd.DataFrame(
        {
            "sample_id": ["s1", "s2", "s3", "s4"],
            "signature_chars": [40, 60, 120, 30],
            "context_chars": [50, 150, 6000, 2500],
            "body_lines": [5, 12, 30, 12],
        }
    )
    sim = frame(
        {
            ("s1", "bleu"): (0.5, 0.1),
            ("s2", "bleu"): (0.4, 0.2),
            ("s3", "bleu"): (0.3, 0.3),
            ("s4", "bleu"): (0.7, 0.3),
            ("s5", "bleu"): (0.9, 0.0),
        }
    )  # s5 has no lengths: left out
    rows = {(r["length"], r["bucket"]): r for r in fm.length_rows(sim, lengths)}
    assert {key: r["n"] for key, r in rows.items() if key[0] == "signature_chars"} == {
        ("signature_chars", "short"): 2,
        ("signature_chars", "medium"): 1,
        ("signature_chars", "long"): 1,
        ("signature_chars", "all"): 4,
    }
    short = rows[("signature_chars", "short")]  # s1 and s4
    assert (short["target_mean"], short["reference_mean"], short["delta_mean"]) == pytest.approx((0.6, 0.2, 0.4))
    assert {key[1] for key in rows if key[0] == "context_chars"} == {"minimal", "short", "medium", "long", "all"}
    assert {key[1]: r["n"] for key, r in rows.items() if key[0] == "body_lines"} == {
        "under 10": 1,
        "short": 2,
        "long": 1,
        "all": 4,
    }
    # Pearson r of signature length (40, 60, 120, 30) with Δ (0.4, 0.2, 0.0, 0.4): hand-computed
    # means 62.5 and 0.25; products -3.375, 0.125, -14.375, -4.875 (sum -22.5); sums of squares 4875 and 0.11
    # -> r = -22.5 / sqrt(536.25) = -0.97163
    assert rows[("signature_chars", "all")]["r_delta"] == pytest.approx(-0.97163, abs=1e-5)
    assert short["r_delta"] is None and fm.length_bucket("context_chars", 99) == "minimal"
    assert fm.length_bucket("context_chars", 100) == "short" and fm.length_bucket("body_lines", 51) == "over 50"


def test_correlation_matrix_is_pairwise_and_in_the_papers_order():
    sim = frame(
        {(f"s{k}", m): (v, 0.0) for k in range(5) for m, v in (("tsed", k / 5), ("bleu", k / 10), ("lcs", 1 - k / 5))}
    )
    matrix = fm.correlation_matrix(sim)
    assert list(matrix.columns) == ["bleu", "lcs", "tsed"]
    assert matrix.loc["bleu", "tsed"] == pytest.approx(1.0) and matrix.loc["bleu", "lcs"] == pytest.approx(-1.0)
    rows = {(r["metric_a"], r["metric_b"]): r for r in fm.correlation_rows(sim)}
    assert len(rows) == 9 and rows[("bleu", "lcs")]["r"] == pytest.approx(-1.0) and rows[("bleu", "lcs")]["n"] == 5


def write(rows: list[dict], path, with_outcomes: bool = True):
    columns = [
        ("sample_id", pa.string()),
        ("metric", pa.string()),
        ("target", pa.float64()),
        ("reference", pa.float64()),
        ("delta", pa.float64()),
    ] + ([("target_outcome", pa.string()), ("reference_outcome", pa.string())] if with_outcomes else [])
    schema = pa.schema(columns)
    pq.write_table(pa.Table.from_pylist([{k: r[k] for k in schema.names} for r in rows], schema=schema), path)
    return path


@pytest.fixture
def testbed_tables(tmp_path):
    """A text family (no outcome columns), a structural family, the testbed
    split, an App. B filter table (x0 labelled NO, x1's answer unparseable)
    and the functions table, as files."""
    sim = planted(0.3, n=12)
    text = write(sim[sim["metric"] == "bleu"].to_dict("records"), tmp_path / "similarity.parquet", with_outcomes=False)
    structural = sim[sim["metric"] == "tsed"].assign(metric="codebleu").to_dict("records")
    structural[0] |= {"reference": None, "delta": None, "reference_outcome": "parse_error:generation"}
    family = write(structural, tmp_path / "similarity_structural.parquet")
    ids = sorted(sim["sample_id"].unique())
    unparseable = {
        "target": None,
        "reference": None,
        "delta": None,
        "target_outcome": "unparseable_answer",
        "reference_outcome": "unparseable_answer",
    }  # the tiny model as a judge
    judges = write(
        [{"sample_id": s, "metric": "judge_paper", **unparseable} for s in ids], tmp_path / "similarity_judges.parquet"
    )
    samples = tmp_path / "samples.parquet"
    pq.write_table(
        pa.Table.from_pylist(
            [{"sample_id": s, "kept": True, "split": "member" if int(s[1:]) < 12 else "non-member"} for s in ids]
        ),
        samples,
    )
    llm_filter = tmp_path / "llm_filter.parquet"
    answers = {
        "x0": {"label": "NO", "severity": None, "outcome": "ok"},
        "x1": {"label": None, "severity": None, "outcome": "unparseable_answer"},
    }
    pq.write_table(
        pa.Table.from_pylist(
            [
                {
                    "sample_id": s,
                    "reasoning": "",
                    **answers.get(s, {"label": "YES", "severity": 1 + i % 10, "outcome": "ok"}),
                }
                for i, s in enumerate(ids)
            ]
            + [
                {
                    "sample_id": "unjudged",
                    "label": None,
                    "severity": None,
                    "reasoning": None,
                    "outcome": "unparseable_answer",
                }
            ]
        ),
        llm_filter,
    )
    functions = tmp_path / "functions.parquet"
    pq.write_table(
        pa.Table.from_pylist(
            [
                {
                    "sample_id": s,
                    "signature": "def f(" + "a, " * i + "):\n",
                    "context": "x = 1\n" * (30 * i),
                    "body_lines": 10 + i,
                }
                for i, s in enumerate(ids)
            ]
        ),
        functions,
    )
    return text, family, samples, llm_filter, judges, functions


def run_stage(out, similarity, *extra) -> int:
    return main(
        [
            "counterfactual-aggregate",
            "--similarity",
            *map(str, similarity),
            *map(str, extra),
            "--settings",
            SETTINGS,
            "--seed",
            "3",
            "--output-dir",
            str(out),
        ]
    )


def test_stage_writes_every_table_figure_and_fragment_and_reruns_to_the_same_bytes(tmp_path, testbed_tables):
    text, family, samples, llm_filter, judges, functions = testbed_tables
    first, second = tmp_path / "first", tmp_path / "second"
    for out in (first, second):
        assert (
            run_stage(
                out, [text, family, judges], "--samples", samples, "--llm-filter", llm_filter, "--functions", functions
            )
            == 0
        )
    files = sorted(p.name for p in first.iterdir())
    assert files == sorted(
        [
            "table1.parquet",
            "member_difference.parquet",
            "table2.parquet",
            "verbatim.parquet",
            "severity.parquet",
            "length.parquet",
            "outcomes.parquet",
            "correlation.parquet",
            "report.md",
            "delta_vs_bleu.png",
            "target_vs_reference.png",
            "correlation.png",
            "length.png",
        ]
    )
    assert {name: (first / name).read_bytes() for name in files} == {
        name: (second / name).read_bytes() for name in files
    }
    # App. B: x0 (NO) and x1 (unparseable) are out of every table; 22 of the 24 samples remain
    table1 = {r["metric"]: r for r in pq.read_table(first / "table1.parquet").to_pylist() if r["group"] == "all"}
    assert (table1["bleu"]["n"], table1["bleu"]["n_samples"]) == (22, 22)
    assert (table1["codebleu"]["n"], table1["judge_paper"]["n"]) == (22, 0)  # x0's reference parse failure went with x0
    outcomes = pq.read_table(first / "outcomes.parquet").to_pylist()
    assert {
        (r["metric"], r["model"], r["outcome"]): r["count"]
        for r in outcomes
        if r["group"] == "all" and r["outcome"] != "ok"
    } == {("judge_paper", "target", "unparseable_answer"): 22, ("judge_paper", "reference", "unparseable_answer"): 22}
    lengths = {
        (r["length"], r["bucket"]): r["n"]
        for r in pq.read_table(first / "length.parquet").to_pylist()
        if r["group"] == "all" and r["metric"] == "bleu"
    }
    assert lengths[("body_lines", "all")] == 22 and lengths[("body_lines", "short")] == 4  # 12-15 lines: x2 to x5
    table2 = {r["metric"]: r for r in pq.read_table(first / "table2.parquet").to_pylist() if r["group"] == "all"}
    assert (table2["judge_paper"]["count"], table2["judge_paper"]["n_evaluated"]) == (
        0,
        0,
    )  # unparseable: never counted
    difference = {r["metric"]: r for r in pq.read_table(first / "member_difference.parquet").to_pylist()}
    assert difference["bleu"]["members_above"] and not difference["codebleu"]["members_above"]
    assert {r["bucket"] for r in pq.read_table(first / "severity.parquet").to_pylist()} == {
        "low",
        "medium",
        "high",
        "all",
    }
    report = (first / "report.md").read_text()
    for heading in (
        "## Functional memorization",
        "### Table 1",
        "### Members' Δ minus non-members' Δ",
        "### Table 2",
        "### Exact and near-verbatim",
        "### Δ by severity",
        "### Similarity and Δ by length",
        "### Outcomes",
    ):
        assert heading in report
    assert "similarity, similarity_structural, similarity_judges" in report
    assert (
        "the 22 of 24 samples it labelled YES are analysed" in report
        and "removed: 1 NO, 1 unparseable_answer" in report
    )
    assert (first / "length.png").stat().st_size > 1000
    assert (first / "delta_vs_bleu.png").stat().st_size > 1000


def test_stage_with_the_text_family_alone_and_no_split(tmp_path, testbed_tables):
    text, *_ = testbed_tables
    assert run_stage(tmp_path, [text]) == 0
    assert (
        "did not run" in (tmp_path / "report.md").read_text()
        and pq.read_table(tmp_path / "length.parquet").num_rows == 0
    )
    assert pq.read_table(tmp_path / "table2.parquet").num_rows == 0  # no functional metric ran
    assert pq.read_table(tmp_path / "member_difference.parquet").num_rows == 0
    assert pq.read_table(tmp_path / "severity.parquet").num_rows == 0
    assert {r["group"] for r in pq.read_table(tmp_path / "table1.parquet").to_pylist()} == {"all"}
    assert "### Members' Δ" not in (tmp_path / "report.md").read_text()
    assert (tmp_path / "delta_vs_bleu.png").stat().st_size > 0


def test_a_metric_in_two_tables_is_bad_input(tmp_path, testbed_tables, caplog):
    text, *_ = testbed_tables
    assert run_stage(tmp_path, [text, text]) == 2
    assert "metric 'bleu' is in more than one similarity table" in caplog.text


def test_filter_keeps_yes_and_counts_the_rest_by_cause(tmp_path):
    from leaktrace.data.llm_function_filter import read_filter

    path = tmp_path / "llm_filter.parquet"
    pq.write_table(
        pa.Table.from_pylist(
            [
                {"sample_id": "yes", "label": "YES", "severity": 7, "outcome": "ok"},
                {"sample_id": "no", "label": "NO", "severity": None, "outcome": "ok"},
                {"sample_id": "late", "label": None, "severity": None, "outcome": "timeout"},
                {
                    "sample_id": "elsewhere",
                    "label": "YES",
                    "severity": 2,
                    "outcome": "ok",
                },  # not in the similarity tables
            ]
        ),
        path,
    )
    verdict = read_filter(path, {"yes", "no", "late", "unasked"})
    assert verdict.severity == {"yes": 7}
    assert verdict.removed == {"NO": 1, "no filter answer": 1, "timeout": 1}


def test_stage_when_the_filter_removes_every_sample(tmp_path, testbed_tables):
    text, family, samples, _, judges, functions = testbed_tables
    ids = sorted(pq.read_table(text).column("sample_id").to_pylist())
    llm_filter = tmp_path / "all_no.parquet"
    pq.write_table(
        pa.Table.from_pylist([{"sample_id": s, "label": "NO", "severity": None, "outcome": "ok"} for s in ids]),
        llm_filter,
    )
    assert (
        run_stage(
            tmp_path / "out",
            [text, family, judges],
            "--samples",
            samples,
            "--llm-filter",
            llm_filter,
            "--functions",
            functions,
        )
        == 0
    )
    assert pq.read_table(tmp_path / "out" / "table1.parquet").num_rows == 0
    assert "the 0 of 24 samples it labelled YES are analysed" in (tmp_path / "out" / "report.md").read_text()


def test_stage_names_the_execution_similarity_and_says_whether_the_screen_gated_it(tmp_path, testbed_tables):
    text, *_ = testbed_tables
    ids = sorted(pq.read_table(text).column("sample_id").to_pylist())
    screened_out = {
        "target": None,
        "reference": None,
        "delta": None,
        "target_outcome": "screen:no_clone",
        "reference_outcome": "screen:no_clone",
    }
    execution = write(
        [{"sample_id": s, "metric": "execution", **screened_out} for s in ids],
        tmp_path / "similarity_execution.parquet",
    )
    assert run_stage(tmp_path / "ungated", [text, execution]) == 0
    report = (tmp_path / "ungated" / "report.md").read_text()
    assert "Execution sim. (tests + hypothesis inputs)" in report and "HyClone similarity" not in report
    assert "no HyClone screen is configured" in report
    table1 = [
        r
        for r in pq.read_table(tmp_path / "ungated" / "table1.parquet").to_pylist()
        if r["metric"] == "execution" and r["group"] == "all"
    ]
    assert [(r["convention"], r["n"], r["target_mean"]) for r in table1] == [
        (fm.MISSING_AS_ZERO, 24, 0.0),
        (fm.COMPLETE_CASES, 0, None),
    ]
    screen = write(
        [
            {
                "sample_id": s,
                "metric": "hyclone_screen",
                "target": 0.0,
                "reference": 0.0,
                "delta": 0.0,
                "target_outcome": "ok",
                "reference_outcome": "ok",
            }
            for s in ids
        ],
        tmp_path / "similarity_judges.parquet",
    )
    assert run_stage(tmp_path / "gated", [text, screen, execution]) == 0
    assert (
        "Stage 2 ran only on the pairs HyClone's Stage-1 screen passed"
        in (tmp_path / "gated" / "report.md").read_text()
    )


def test_a_functions_table_without_body_lines_is_bad_input(tmp_path, testbed_tables, caplog):
    text, *_ = testbed_tables
    functions = tmp_path / "functions.parquet"
    pq.write_table(pa.Table.from_pylist([{"sample_id": "x0", "signature": "def f():\n", "context": ""}]), functions)
    assert run_stage(tmp_path / "out", [text], "--functions", functions) == 2
    assert "functions.parquet" in caplog.text and "['body_lines'] missing" in caplog.text
