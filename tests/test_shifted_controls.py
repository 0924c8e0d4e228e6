"""The shifted-control experiment (config/experiments/shifted-controls.yaml)
at tiny scale: the docstring shift by hand, the draws, and a never-exposed
model's audit against shifted and unshifted controls on synthetic scores."""

import re
from dataclasses import replace

import numpy as np
import pytest

from leaktrace.calibration.shifted_controls import (
    CONDITIONS,
    draw,
    experiment_rows,
    id_split,
    page_rows,
    problems,
    select_controls,
    summary_rows,
)
from leaktrace.config_slice import read_slice
from leaktrace.data.docstrings import strip_docstrings
from leaktrace.settings.shifted_controls import ShiftedControlsSettings

BENCH = "pool"
SETTINGS_SLICE = {
    "contamination_alpha": 0.05,
    "pac_delta": 0.1,
    "inconclusive_auc": 0.9,
    "inconclusive_rate": 0.5,
    "dataset_inference": {"n_splits": 3, "exclude_methods": [], "curve_sizes": [8], "curve_draws": 1},
    "exclude_methods": [],
    "blind_permutations": 19,
    "blind_repeats": 1,
    "reference_method": "loss",
    "draws": 2,
    "n_suspect": 12,
    "n_control": 20,
    "max_detectable_auc": 0.75,
}  # 20: the fewest controls a conformal flag at 0.05 needs (k = floor(0.05 x 21) = 1)
SETTINGS = read_slice(ShiftedControlsSettings, SETTINGS_SLICE, "")


def test_docstrings_are_removed_as_whole_lines_and_nothing_else_changes():
    prompt = (
        "\"\"\"Module doc.\"\"\"\nimport math\n\n\ndef helper(y):\n    '''One line.'''\n    return y  # kept\n\n\n"
        'def f(x):\n    """Return x.\n\n    >>> f(1)\n    1\n    """\n'
    )
    solution = "    return helper(x)\n"
    assert (
        strip_docstrings(prompt, solution) == "import math\n\n\ndef helper(y):\n    return y  # kept\n\n\ndef f(x):\n"
    )
    assert strip_docstrings("def g(x):\n    # a comment\n", "    return x\n") == "def g(x):\n    # a comment\n"
    # a docstring that is a whole body (nothing follows in the solution) leaves a pass behind
    assert strip_docstrings('def h():\n    """Only this."""\n', "") == "def h():\n    pass\n"


def test_draws_are_disjoint_seeded_and_refuse_a_pool_too_small():
    ids = [f"{BENCH}/HumanEval/{k}" for k in range(30)] + [f"{BENCH}/HumanEvalNoDoc/{k}" for k in range(1, 31)]
    pool = problems(ids, BENCH)
    assert pool == [str(k) for k in range(1, 30)]  # both forms needed: 0 and 30 have one each
    suspects, controls = draw(pool, 10, 12, seed=4)
    assert len(suspects) == 10 and len(controls) == 12 and not set(suspects) & set(controls)
    assert draw(pool, 10, 12, seed=4) == (suspects, controls) and draw(pool, 10, 12, seed=5) != (suspects, controls)
    with pytest.raises(ValueError, match="20 suspects and 10 controls need 30 problems; the pool has 29"):
        draw(pool, 20, 10, seed=0)


def _pool(n=40, shift=3.0):
    """Problem k as released: a docstring and a body; shifted: no docstring.
    A never-exposed target's loss: noise per problem, plus ``shift`` without
    the docstring; the reference reacts to the shift alike (d = 0.5 always)."""
    rng = np.random.default_rng(0)
    texts, target, reference = {}, {}, {}
    for k in range(n):
        body = f"def f{k}(x):\n    return x * {k} + {rng.integers(100)}\n"
        released, shifted = f"{BENCH}/HumanEval/{k}", f"{BENCH}/HumanEvalNoDoc/{k}"
        texts[released] = body.replace("\n", f'\n    """Multiply x by {k} and add a constant."""\n', 1)
        texts[shifted] = body
        noise = float(rng.normal())
        for sid, value in ((released, noise), (shifted, noise + shift)):
            target[sid], reference[sid] = value, value - 0.5
    lookup = {"loss": target, "zlib": {s: -v for s, v in target.items()}}
    decisions = {"srdetection_graybox": {s: v > 1.5 for s, v in target.items()}}
    return texts, lookup, {"loss": reference}, decisions


def _page(rows):
    from leaktrace.report.verdict import answer, answer_kind, audit_verdict_tests

    return answer_kind(answer(audit_verdict_tests(rows), 0.05, 0.75))


@pytest.fixture(scope="module")
def experiment():
    """The pool's draws in every arm, with the verdict page's answers: made once for the module's tests."""
    texts, lookup, reference, decisions = _pool()
    return experiment_rows(BENCH, texts, lookup, reference, decisions, SETTINGS, seed=1, page_answer=_page)


def test_a_never_exposed_model_against_shifted_controls_is_gated_and_the_contrast_holds(experiment):
    """Shifted controls (higher loss, no docstrings): the naive tests of a
    model that saw nothing reject (dataset inference, flags on -loss...) but
    the blind baseline rejects too (p = 1/20), so none counts as evidence;
    the contrast (d constant) does not reject. Reversed (the suspects
    shifted): the same, with the one-sided flags firing on the other
    detector. Unshifted: the same problems as released, nothing is gated."""
    texts, lookup, reference, decisions = _pool()
    rows = experiment
    assert {(r["condition"], r["draw"]) for r in rows} == {(c, d) for c in CONDITIONS for d in (0, 1)}
    shifted = [r for r in rows if r["condition"] in ("shifted", "reversed")]
    unshifted = [r for r in rows if r["condition"] == "unshifted"]
    for r in shifted:
        assert r["blind_p"] == pytest.approx(1 / 20) and r["blind_auc"] == 1.0 and not r["counted_as_evidence"]
        assert r["gated"] == (r["test"] in ("dataset_inference", "conformal_flags", "leakage_rate"))
        assert (r["n_suspect"], r["n_control"]) == (12, 20)
    assert all(r["rejected"] for r in shifted if r["test"] == "dataset_inference")  # it learns the direction
    # the reversed shift: the suspects have the higher loss, so flags on -loss cannot fire, flags on loss... zlib = -loss
    reversed_flags = {
        r["detector"]: r["rejected"] for r in rows if r["condition"] == "reversed" and r["test"] == "conformal_flags"
    }
    shifted_flags = {
        r["detector"]: r["rejected"] for r in rows if r["condition"] == "shifted" and r["test"] == "conformal_flags"
    }
    assert reversed_flags == {"loss": True, "zlib": False} and shifted_flags == {"loss": False, "zlib": True}
    assert not any(r["rejected"] for r in shifted if r["test"] == "reference_contrast")
    # unshifted: the blind gate stays open; a chance rejection counts only where the negative control (the
    # reference, whose scores here move with the target's) does not reject too
    assert not any(r["gated"] for r in unshifted) and not any(
        r["rejected"] for r in unshifted if r["test"] == "blind_baseline"
    )
    assert all(r["rejected"] for r in unshifted if r["counted_as_evidence"])
    summary = {(r["condition"], r["test"]): r for r in summary_rows(rows, 0.05)}
    assert (
        summary[("shifted", "blind_baseline")]["n_rejected"] == 2
        and summary[("shifted", "dataset_inference")]["rate"] == 1.0
    )
    assert (
        summary[("shifted", "dataset_inference")]["n_counted"] == 0
        and summary[("shifted", "conformal_flags")]["n_draws"] == 4
    )
    assert summary[("unshifted", "reference_contrast")]["rate"] == 0.0
    assert rows == experiment_rows(BENCH, texts, lookup, reference, decisions, SETTINGS, seed=1, page_answer=_page)
    with pytest.raises(ValueError, match="need 42 problems; the pool has 40"):
        experiment_rows(BENCH, texts, lookup, reference, decisions, replace(SETTINGS, n_suspect=22), seed=1)


def test_controls_chosen_by_loss_or_id_change_no_text_and_differ_as_asked():
    pool = [str(k) for k in range(40)]
    loss = {"target": {k: -float(k) for k in pool}, "reference": {k: float(k) for k in pool}}  # score = -loss
    suspects = [str(k) for k in range(0, 40, 4)]
    rest = [k for k in pool if k not in suspects]
    hardest = select_controls("hardest-target", pool, suspects, 10, loss, seed=0)
    assert hardest == sorted(sorted(rest, key=int)[-10:]) and not set(hardest) & set(suspects)
    drawn = [int(k) for k in select_controls("loss-target", pool, suspects, 10, loss, seed=0)]
    assert np.mean(drawn) > np.mean([int(k) for k in rest])  # weighted towards the hard (high-k) problems
    easy = [int(k) for k in select_controls("loss-reference", pool, suspects, 10, loss, seed=0)]
    assert np.mean(easy) < np.mean([int(k) for k in rest])  # the reference's loss runs the other way here
    low, high = id_split(pool, 10, 10, seed=0)
    assert max(map(int, low)) < 20 <= min(map(int, high))
    with pytest.raises(ValueError, match="draws its controls at random"):
        select_controls("unshifted", pool, suspects, 10, loss, seed=0)


def test_the_page_never_answers_evidence_of_exposure_for_a_never_exposed_model(experiment):
    """Every arm, every draw: the verdict page's own rule on the target's rows
    reads "observational finding" at most; the tally carries its interval."""
    tally = page_rows(experiment)
    assert {r["condition"] for r in tally} == set(CONDITIONS)
    evidence = [r for r in tally if r["answer"] == "Evidence of exposure"]
    assert all(r["n_answered"] == 0 and r["n_draws"] == 2 and r["rate_high"] < 0.85 for r in evidence)
    assert sum(r["n_answered"] for r in tally) == 2 * len(CONDITIONS)


def test_regression_the_report_names_each_rate_and_what_the_gate_left(experiment):
    from leaktrace.report.shifted_controls import render

    rows = experiment
    summary = summary_rows(rows, 0.05)
    text = render(summary, page_rows(rows), 0.05, 2, 12, 20)
    assert text.startswith("## Shifted controls: 2 draws of 12 suspects and 20 controls, α = 0.05")
    assert "| shifted | blind_baseline | detection rate of the shift | 2/2 = 1.00 [0.16, 1.00] | – |" in text
    assert (
        "| shifted | dataset_inference | false-positive rate (naive) | 2/2 = 1.00 [0.16, 1.00] | 0/2 = 0.00 |" in text
    )


def test_the_experiment_config_plans_an_audit_that_trains_nothing():
    """`snakemake -n` of config/experiments/shifted-controls.yaml: the pool is
    scored by both never-exposed models and the experiment runs once; no
    training job, no testbed job; a target that is not an audit model is refused."""
    import subprocess
    import sys

    from repo_copy import REPO

    def plan(*extra):
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "snakemake",
                "-n",
                "--cores",
                "1",
                "--configfile",
                "config/experiments/shifted-controls.yaml",
                "--config",
                "run=shifted-plan-test",
                *extra,
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )

    result = plan()
    assert result.returncode == 0, result.stderr[-2000:]
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", result.stdout, re.MULTILINE))
    assert jobs["shifted_controls"] == "1" and jobs["token_stats"] == "3"  # two models and Ref's reference
    assert not {"train_lora", "split_samples", "aggregate", "testbed_blind"} & set(jobs)
    refused = plan("audit={'shifted_controls': {'benchmark': 'humaneval-shift', 'target': 'nobody'}}")
    assert (
        refused.returncode != 0
        and "audit.shifted_controls.target and audit.reference.model must name two audit.models "
        "(configured: base, tiny-ref; target 'nobody', reference 'tiny-ref')"
        in refused.stdout + refused.stderr
    )


def test_the_shifted_controls_command_names_a_missing_or_mistyped_key(tmp_path, capsys):
    import json

    from leaktrace.cli import main

    def run(settings):
        absent = str(tmp_path / "absent.parquet")
        argv = ["shifted-controls", "--benchmark", BENCH, "--benchmark-table", absent, "--target", absent]
        argv += ["--reference", absent, "--settings", json.dumps(settings), "--seed", "1", "--output", absent]
        argv += ["--summary", absent, "--report", str(tmp_path / "report.md"), "--page", absent]
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 2
        return capsys.readouterr().err

    assert "config audit.shifted_controls.draws: missing" in run(
        {k: v for k, v in SETTINGS_SLICE.items() if k != "draws"}
    )
    assert "config audit.reference.method: expected a string, got None" in run(
        SETTINGS_SLICE | {"reference_method": None}
    )
