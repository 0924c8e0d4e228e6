"""Randomized publication (leaktrace/watermark, stages/watermark.py): the
exact rank-sum distribution against enumeration and hand values, the keyed
choice's uniformity and reproducibility, the secret file, the commitment
refusing a release that differs from it, the forms proven equivalent, the
release in the input's own layout, and the calibration by random
publications. The end-to-end path runs in the micro pipeline
(tests/test_pipeline.py)."""

from __future__ import annotations

import itertools
import json
import random
import shutil
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chisquare

from leaktrace.artifacts import read_records
from leaktrace.data.benchmarks import assign_field, benchmark_records
from leaktrace.errors import InputError
from leaktrace.sandbox import SandboxLimits, SandboxUnavailable, isolation_level, run_tests
from leaktrace.settings.ingest import BenchmarkEntry
from leaktrace.stages.watermark import publish
from leaktrace.variants.validate import validate_variants
from leaktrace.watermark import ranks
from leaktrace.watermark.calibration import calibration_rows, expected_p_histogram, redrawn_ranks
from leaktrace.watermark.choice import choose, read_secret, secret_for, write_secret
from leaktrace.watermark.committed import checked_release
from leaktrace.watermark.forms import FormSettings, Problem, docstring_end, split_form
from leaktrace.watermark.ranks import EXACT, NORMAL, RankSumNull, published_rank, rank_sum_pmf, rank_sum_test
from leaktrace.watermark.release import layout

REPO = Path(__file__).resolve().parents[1]
MINI = REPO / "resources" / "benchmarks" / "humaneval-mini.jsonl"  # five HumanEval problems, verbatim


# --- the rank test ---------------------------------------------------------------------------------


def test_rank_sum_distribution_of_three_problems_matches_enumeration_and_hand_values():
    """K + 1 = 2, 3, 4: S = R1 + R2 + R3 over the 24 equally likely rank triples; by hand the
    generating function x^3 (1 + x)(1 + x + x^2)(1 + x + x^2 + x^3) has coefficients 1 3 5 6 5 3 1."""
    pmf = rank_sum_pmf([2, 3, 4])
    enumerated = Counter(sum(ranks) for ranks in itertools.product(range(1, 3), range(1, 4), range(1, 5)))
    assert np.allclose(pmf * 24, [enumerated[s] for s in range(3, 10)])
    assert np.allclose(pmf * 24, [1, 3, 5, 6, 5, 3, 1])
    null = RankSumNull([2, 3, 4])
    assert np.allclose(null.p_values(np.arange(2, 11)), np.array([0, 1, 4, 9, 15, 20, 23, 24, 24]) / 24)
    test = rank_sum_test([1, 1, 2], [2, 3, 4])  # S = 4: P(S <= 4) = 4/24
    assert test.rank_sum == 4 and test.p_value == pytest.approx(1 / 6) and test.method == EXACT
    assert test.expected == pytest.approx(1.5 + 2 + 2.5)
    # a discrete test: its attainable sizes are the CDF's values
    assert (
        null.size(0.05) == pytest.approx(1 / 24) and null.size(0.01) == 0.0 and null.size(0.2) == pytest.approx(4 / 24)
    )


def test_a_problem_with_one_form_is_left_out_of_the_test():
    with_single = rank_sum_test([1, 1, 1, 2], [2, 3, 1, 4])
    assert with_single.problems == 3 and with_single.p_value == pytest.approx(1 / 6)
    with pytest.raises(ValueError, match="no problem has two forms"):
        rank_sum_test([1], [1])
    with pytest.raises(ValueError, match="outside"):
        rank_sum_test([5], [4])


def test_normal_approximation_only_where_the_convolution_is_infeasible(monkeypatch):
    sizes = [4] * 300
    exact = RankSumNull(sizes)
    assert exact.method == EXACT
    monkeypatch.setattr(ranks, "EXACT_MAX_OPERATIONS", 0)
    approximate = RankSumNull(sizes)
    assert approximate.method == NORMAL
    sums = np.array([700, 730, 750, 780])
    assert np.allclose(exact.p_values(sums), approximate.p_values(sums), atol=0.005)
    assert rank_sum_test([2] * 300, sizes).method == NORMAL


def test_published_rank_counts_lower_losses_and_breaks_ties_uniformly():
    assert published_rank([0.5, 0.2, 0.9], 0, random.Random(0)) == 2
    assert published_rank([0.5, 0.2, 0.9], 1, random.Random(0)) == 1
    assert published_rank([0.5, 0.2, 0.9], 2, random.Random(0)) == 3
    drawn = Counter(published_rank([1.0, 1.0, 1.0, 0.1], 0, random.Random(seed)) for seed in range(3000))
    assert set(drawn) == {2, 3, 4} and min(drawn.values()) > 900  # 1000 each in expectation
    with pytest.raises(ValueError, match="finite"):
        published_rank([1.0, float("nan")], 0, random.Random(0))


# --- the keyed choice and the secret -----------------------------------------------------------------


def test_the_keyed_choice_is_uniform_over_problems_and_reproducible_from_the_secret():
    secret = bytes(range(32))
    for forms in (2, 3, 4, 7):
        counts = Counter(choose(secret, f"HumanEval/{i}", forms) for i in range(20_000))
        assert set(counts) == set(range(forms))
        assert chisquare([counts[k] for k in range(forms)]).pvalue > 0.001
    assert [choose(secret, f"p{i}", 4) for i in range(50)] == [choose(secret, f"p{i}", 4) for i in range(50)]
    other = bytes(32)
    assert [choose(secret, f"p{i}", 4) for i in range(50)] != [choose(other, f"p{i}", 4) for i in range(50)]
    # the pair of choices of two problems is uniform too (independent across problems)
    pairs = Counter((choose(secret, f"a{i}", 3), choose(secret, f"b{i}", 3)) for i in range(9000))
    assert chisquare([pairs[k] for k in itertools.product(range(3), repeat=2)]).pvalue > 0.001
    assert choose(secret, "only", 1) == 0


def test_the_secret_file_is_created_private_and_never_overwritten(tmp_path):
    path = tmp_path / "private" / "secret.key"
    secret = secret_for(path)
    assert len(secret) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_secret(path) == secret == secret_for(path)
    with pytest.raises(InputError, match="never overwritten"):
        write_secret(path, bytes(32))
    with pytest.raises(InputError, match="another secret"):
        secret_for(path, derived=bytes(32))
    (tmp_path / "bad.key").write_text("not hex\n")
    with pytest.raises(InputError, match="bad.key.*64 hex digits"):
        read_secret(tmp_path / "bad.key")


# --- the release's layout ------------------------------------------------------------------------------


def test_assign_field_writes_back_through_nested_json_as_the_reader_reads():
    record = {"problem_id": 3, "solutions": json.dumps(["print(1)", "print(2)"]), "meta": {"code": "x = 1\n"}}
    written = assign_field(record, "solutions.0", "print(3)")
    assert json.loads(written["solutions"]) == ["print(3)", "print(2)"] and record["solutions"] != written["solutions"]
    assert assign_field(record, "meta.code", "y = 2\n")["meta"] == {"code": "y = 2\n"}
    with pytest.raises(ValueError, match="no 'answer'"):
        assign_field(record, "meta.answer", "z")
    with pytest.raises(ValueError, match="joins several fields"):
        assign_field(record, ["meta.code", "solutions.0"], "z")


def test_a_form_splits_back_into_prompt_and_solution_at_the_entry_points_docstring():
    """HumanEval/115 keeps `import math` above its docstring; the prompt still ends at the string statement."""
    prompt = 'def max_fill(grid, capacity):\n    import math\n    """\n    Fill.\n    """\n'
    code = prompt + "    return sum(math.ceil(sum(a) / capacity) for a in grid)\n"
    problem = Problem("HumanEval/115", code, prompt, {"entry_point": "max_fill"})
    assert docstring_end(code, "max_fill") == len(prompt)
    renamed = code.replace("grid", "rows")
    assert split_form(problem, renamed) == (
        prompt.replace("grid", "rows"),
        "    return sum(math.ceil(sum(a) / capacity) for a in rows)\n",
    )
    assert "no docstring" in split_form(problem, "def max_fill(rows, capacity):\n    return 0\n")
    no_prompt = Problem("mbpp/1", code, "", {"entry_point": None})
    assert split_form(no_prompt, renamed) == ("", renamed)


def test_form_settings_refuse_what_cannot_give_k_plus_one_forms():
    with pytest.raises(ValueError, match="choose one or more"):
        FormSettings(forms=3, candidates=8, transforms=("rename", "T9"))
    with pytest.raises(ValueError, match="cannot give K"):
        FormSettings(forms=3, candidates=3)
    assert FormSettings(forms=3, candidates=3, include_original=True).size == 4


# --- publish and the commitment ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """The five-problem fixture published with K = 3 (T1 among the transforms, so every problem has forms)."""
    try:
        isolation_level(SandboxLimits())
    except SandboxUnavailable as error:
        pytest.skip(str(error))
    out = tmp_path_factory.mktemp("release")
    settings = FormSettings(forms=3, candidates=6, transforms=("rename", "test_cases", "T1"))
    publish(MINI, out, layout(MINI, None, {"preset": "humaneval"}), settings, seed=0, limits=SandboxLimits(), workers=2)
    return out


def test_publish_writes_the_release_in_the_inputs_layout_with_the_chosen_forms(release):
    originals = [json.loads(line) for line in MINI.read_text().splitlines()]
    published = [json.loads(line) for line in (release / "published.jsonl").read_text().splitlines()]
    assert [list(r) for r in published] == [list(r) for r in originals]  # same fields, same order
    for before, after in zip(originals, published, strict=True):
        assert after["task_id"] == before["task_id"] and after["test"] == before["test"]
        assert after["entry_point"] == before["entry_point"]
        assert after["prompt"] + after["canonical_solution"] != before["prompt"] + before["canonical_solution"]
    forms, chosen = checked_release(release)
    assert {pid: len(own) for pid, own in forms.items()} == {r["task_id"]: 4 for r in originals}
    for record in published:  # the chosen form, recomputed from the secret alone
        form = forms[record["task_id"]][chosen[record["task_id"]]]
        assert record["prompt"] == form["prompt"] and record["canonical_solution"] == form["solution"]
    commitment = json.loads((release / "commitment.json").read_text())
    assert commitment["problems_by_forms"] == {"4": 5} and commitment["layout"] == {
        "format": "jsonl",
        "preset": "humaneval",
    }
    assert stat.S_IMODE((release / "private" / "secret.key").stat().st_mode) == 0o600


def test_every_form_passes_the_originals_tests_with_the_originals_record(release):
    rows = read_records(release / "private" / "forms.parquet")
    problems = {
        s.task_id: s
        for _, s in benchmark_records(BenchmarkEntry(format="jsonl", preset="humaneval", path=str(MINI)), "m")
    }
    forms = [r for r in rows if r["form"] is not None]
    assert forms and all(r["generator"] != "original" and r["valid"] for r in forms)
    assert all(r["prompt"] + r["solution"] == r["text"] for r in forms)
    items = [
        (problems[r["problem_id"]].code, problems[r["problem_id"]].test, problems[r["problem_id"]].entry_point)
        for r in forms
    ] + [(r["text"], problems[r["problem_id"]].test, problems[r["problem_id"]].entry_point) for r in forms]
    limits = SandboxLimits()
    assert all(result.status == "ok" for result in run_tests(items[len(forms) :], limits, workers=2))
    verdicts = validate_variants(items, list(range(len(forms))) * 2, limits, workers=2)
    assert all(valid for valid, _ in verdicts[len(forms) :])
    assert len({r["text"] for r in forms}) == len(forms)  # distinct, and none is the original
    assert not {r["text"] for r in forms} & {s.code for s in problems.values()}


def _copy(release: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "release"
    shutil.copytree(release, copy)
    return copy


def test_a_published_file_that_differs_from_the_commitment_is_refused(release, tmp_path):
    copy = _copy(release, tmp_path)
    published = copy / "published.jsonl"
    published.write_text(published.read_text().replace("numbers", "values", 1))
    with pytest.raises(InputError, match=r"published.jsonl: differs from the commitment .*the published file hashes"):
        checked_release(copy)
    result = subprocess.run(
        [sys.executable, "-m", "leaktrace", "watermark-test", str(copy), "--model", "resources/models/leaktrace-tiny"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "differs from the commitment" in result.stderr


def test_another_secret_or_forms_table_is_refused(release, tmp_path):
    copy = _copy(release, tmp_path)
    (copy / "private" / "secret.key").write_text(bytes(32).hex() + "\n")
    with pytest.raises(InputError, match=r"secret.key: differs from the commitment .*the secret hashes"):
        checked_release(copy)
    copy = _copy(release, tmp_path / "second")
    with pytest.raises(InputError, match="forms table hashes"):
        checked_release(
            copy,
            seed_file=copy / "private" / "secret.key",
            published=copy / "published.jsonl",
            commitment=_rewritten(copy, forms_sha256="0" * 64),
        )


def _rewritten(copy: Path, **changes) -> Path:
    path = copy / "commitment.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))
    return path


def test_a_release_holding_another_form_than_the_secret_chose_is_refused_even_with_a_matching_hash(release, tmp_path):
    from leaktrace.watermark.commitment import sha256_of

    copy = _copy(release, tmp_path)
    forms, chosen = checked_release(copy)
    published = [json.loads(line) for line in (copy / "published.jsonl").read_text().splitlines()]
    first = published[0]["task_id"]
    other = forms[first][(chosen[first] + 1) % len(forms[first])]
    published[0] = {**published[0], "prompt": other["prompt"], "canonical_solution": other["solution"]}
    (copy / "published.jsonl").write_text("".join(json.dumps(r) + "\n" for r in published))
    _rewritten(copy, published_sha256=sha256_of(copy / "published.jsonl"))
    with pytest.raises(InputError, match=f"record {first}: is not the form the secret chooses"):
        checked_release(copy)


def test_a_directory_holding_a_release_is_never_published_again(release):
    with pytest.raises(InputError, match="released once"):
        publish(
            MINI,
            release,
            layout(MINI, None, {"preset": "humaneval"}),
            FormSettings(forms=3, candidates=6),
            seed=0,
            limits=SandboxLimits(),
            workers=1,
        )


def test_the_same_secret_and_seed_publish_the_same_bytes(release, tmp_path):
    out = tmp_path / "again"
    settings = FormSettings(forms=3, candidates=6, transforms=("rename", "test_cases", "T1"))
    publish(
        MINI,
        out,
        layout(MINI, None, {"preset": "humaneval"}),
        settings,
        seed=0,
        limits=SandboxLimits(),
        workers=1,
        seed_file=release / "private" / "secret.key",
    )
    for name in ("published.jsonl", "commitment.json", "private/forms.parquet"):
        assert (out / name).read_bytes() == (release / name).read_bytes(), name


# --- calibration: random publications -------------------------------------------------------------


def test_redrawn_ranks_are_uniform_whatever_the_losses():
    rng = np.random.default_rng(0)
    drawn = redrawn_ranks(np.array([3.0, 0.1, 0.1, 9.0]), 40_000, rng)
    counts = Counter(drawn.tolist())
    assert set(counts) == {1, 2, 3, 4} and chisquare([counts[k] for k in (1, 2, 3, 4)]).pvalue > 0.001


def test_random_publications_hold_at_every_alpha_and_reject_at_about_the_attainable_size():
    rng = np.random.default_rng(1)
    losses = [rng.normal(size=4) for _ in range(60)] + [rng.normal(size=3) for _ in range(5)] + [np.array([1.0])]
    rows, counts = calibration_rows("reference", losses, [0.01, 0.05, 0.1], 4000, np.random.default_rng(2))
    null = RankSumNull([x.size for x in losses])
    for row in rows:
        assert row["holds"] and row["null"] == "random publication" and row["n"] == 4000
        assert abs(row["rate"] - null.size(row["alpha"])) < 4 * np.sqrt(null.size(row["alpha"]) / 4000) + 1e-9
        assert row["ks_p"] > 0.001  # randomised p-values are exactly uniform
    assert sum(counts.values()) == 65 * 4000 and {m for m, _ in counts} == {3, 4}


def test_expected_histogram_of_per_problem_p_values_is_the_mixture_of_discrete_uniforms():
    assert np.allclose(expected_p_histogram({4: 10}, 4), [0.25] * 4)
    assert np.allclose(expected_p_histogram({2: 1, 4: 1}, 4), [0.125, 0.375, 0.125, 0.375])


def test_the_audits_watermark_table_names_each_model_and_benchmark_and_its_assumption(tmp_path):
    from leaktrace.artifacts import write_table
    from leaktrace.stages.watermark import AUDIT_RESULT_SCHEMA, RESULT_SCHEMA, audit_watermark_table

    results = {}
    for model, p in (("audit-a", 0.012), ("audit-b", 0.5)):
        row = {"model": model, "problems": 20, "testable": 19, "rank_sum": 40, "expected": 47.5, "p_value": p}
        path = tmp_path / model / "result.parquet"
        write_table([row | {"method": EXACT, "rank_one": 8, "truncated": 0}], RESULT_SCHEMA, path)
        results[(model.removeprefix("audit-"), "bench")] = path
    audit_watermark_table(results, tmp_path / "watermark.parquet", tmp_path / "watermark.md")
    rows = read_records(tmp_path / "watermark.parquet")
    assert [(r["model"], r["benchmark"], r["p_value"]) for r in rows] == [("a", "bench", 0.012), ("b", "bench", 0.5)]
    assert all(r["assumption"].startswith("none the audit must trust") for r in rows)
    assert [f.name for f in AUDIT_RESULT_SCHEMA][:2] == ["benchmark", "model"]
    report = (tmp_path / "watermark.md").read_text()
    assert "| a | bench | 20 | 19 | 40 (47.5) | 8 | 0.012 | exact convolution |" in report


def test_the_watermark_report_names_a_mistyped_key_by_its_config_key(tmp_path, capsys):
    from leaktrace.cli import main

    argv = ["watermark-report", "--results", "m=r.parquet", "--ranks", "m=k.parquet", "--calibration", "c.parquet"]
    argv += ["--counts", "n.parquet", "--commitment", "c.json", "--output-dir", str(tmp_path)]
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--settings", '{"forms": "3", "transforms": ["rename"]}'])
    assert stopped.value.code == 2
    assert "config watermark.forms: expected an integer, got '3'" in capsys.readouterr().err


def test_the_maintainer_commands_read_a_model_path_or_json_and_refuse_unknown_sandbox_limits(capsys):
    from leaktrace.cli import main
    from leaktrace.settings.models import ModelSettings
    from leaktrace.settings.sandbox import SandboxOverrides

    assert ModelSettings.from_flag("resources/models/leaktrace-tiny") == ModelSettings(
        "resources/models/leaktrace-tiny", "float32", "cpu", None, None
    )
    assert ModelSettings.from_flag('{"path": "m", "dtype": "float32", "device": "cuda", "max_length": 256}') == (
        ModelSettings("m", "float32", "cuda", max_length=256)
    )
    assert SandboxOverrides.from_flag('{"timeout_s": 20}').given() == {"timeout_s": 20}
    with pytest.raises(SystemExit) as stopped:
        main(["publish", "in.jsonl", "out", "--forms", "3", "--sandbox", '{"timeout": 20}'])
    assert stopped.value.code == 2
    assert "unknown sandbox limits ['timeout']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["watermark-test", "release", "--model", '{"dtype": "float32"}'])
    assert "config model.path: missing" in capsys.readouterr().err
