"""The audit's verdict table: per model × benchmark, every test against the
user's control set, each with its p-value, its power, the blind baseline
beside it and a verdict worded by :mod:`leaktrace.calibration.verdict`.

Rows (``test``):

- ``blind_baseline``: the text-only classifier of suspects against
  controls (no model): whether the control set differs from the suspects;
- ``dataset_inference``: the dataset-level test (assumes exchangeable controls);
- ``conformal_flags``, one per per-sample detector: its suspects flagged
  by conformal p-values against the controls at alpha, the count's exact
  null (negative hypergeometric, :mod:`leaktrace.calibration.power`), and
  beside it the training-conditional (PAC) flags, FPR <= alpha with
  probability >= 1 - delta (:mod:`leaktrace.calibration.conditional`)
  (assumes exchangeable controls);
- ``leakage_rate``, SrDetection's gray-box and black-box decisions: Fisher's
  exact test of the suspects' flag share against the controls' (assumes
  exchangeable controls);
- ``negative_control_bootstrap``, with two or more negative controls: the
  audited model's AUC of suspects over controls against theirs, bootstrapped
  over samples and models (:mod:`leaktrace.calibration.negative_controls`);
- ``reference_contrast``, where a reference model is configured: d =
  s_target - s_reference on one detector, suspects against controls
  (:mod:`leaktrace.calibration.reference_contrast`): its assumption is
  written in its row; where the blind baseline rejects it is gated too
  (the shifted-control experiment found that assumption false).

Every row that compares with the controls is **observational** (column
``evidence``): its rejection reads "suspects score higher than controls",
never "evidence of exposure", because no run can establish that the user's
controls were drawn like the suspects (:mod:`leaktrace.calibration.verdict`).

Two gates: where the blind baseline rejects at alpha, and where a declared
negative-control model (``audit.negative_controls`` and the contrast's
reference: models unexposed to suspects and controls alike) has an
observational row that rejects (:func:`negative_control_gate`), every
observational row of that benchmark gets the gate's verdict and
``counted_as_evidence`` false. ``counted_as_evidence``: the row's rejection
counts in its tier's answer (the verdict page reads nothing else). Each row
says how many control ids it used and why any were dropped."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from scipy.stats import fisher_exact

from leaktrace.calibration.blind_baseline import BlindBaseline
from leaktrace.calibration.conditional import flags_at_rank, fpr_exceed_probability, min_controls, pac_rank
from leaktrace.calibration.negative_controls import ASSUMPTION as BOOTSTRAP_ASSUMPTION
from leaktrace.calibration.negative_controls import bootstrap_test
from leaktrace.calibration.power import (
    conformal_rank,
    dataset_inference_detectable_auc,
    detectable_auc,
    detectable_fisher_rate,
    detectable_flag_rate,
    flag_count_p,
)
from leaktrace.calibration.reference_contrast import ASSUMPTION, contrasts, reference_contrast
from leaktrace.calibration.verdict import OBSERVATIONAL, negative_control_text, shift_text, shift_verdict, verdict

AUC, RATE = "AUC", "flag rate"
LEAKAGE_METHODS = ("srdetection_graybox", "srdetection_blackbox")

SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("benchmark", pa.string()),
        (
            "test",
            pa.string(),
        ),  # blind_baseline | dataset_inference | conformal_flags | leakage_rate | reference_contrast
        ("detector", pa.string()),  # the per-sample detector, or what the test uses
        ("n_suspect", pa.int32()),
        ("n_controls_used", pa.int32()),  # control ids the test actually used
        ("n_controls_dropped", pa.int32()),  # control ids of this benchmark it could not use
        ("controls_dropped", pa.string()),  # why
        (
            "statistic",
            pa.float64(),
        ),  # AUC (blind), flagged count (conformal), flag share (leakage), mean d gap (contrast)
        ("p_value", pa.float64()),
        ("alpha", pa.float64()),
        ("effect", pa.string()),  # the scale of detectable_effect: AUC | flag rate
        ("detectable_effect", pa.float64()),  # smallest effect detected with 80% power; null: none reachable
        ("blind_auc", pa.float64()),
        ("blind_ci_low", pa.float64()),  # DeLong 95%
        ("blind_ci_high", pa.float64()),
        ("blind_p", pa.float64()),  # permutation p-value
        ("blind_rejected", pa.bool_()),  # the blind baseline rejected at alpha (false: not refuted; null: not run)
        ("assumes_exchangeable", pa.bool_()),  # the test's null needs exchangeable controls (gated)
        ("evidence", pa.string()),  # observational (against the user's controls) | check (about the control set)
        ("negative_control", pa.bool_()),  # the model is declared unexposed to suspects and controls
        ("negative_control_gate", pa.string()),  # a negative control's observational rejection, where one rejects
        ("verdict", pa.string()),
        ("counted_as_evidence", pa.bool_()),  # the rejection counts in its tier's answer (rejects, no gate closed)
        ("conformal_rank", pa.int32()),  # k = floor(alpha (m + 1)): flagged above the k-th largest control
        ("fpr_exceed_probability", pa.float64()),  # marginal flags: P(FPR > alpha) over the control draw
        ("delta", pa.float64()),
        ("pac_rank", pa.int32()),  # the (alpha, delta) rule's rank; 0 flags nothing
        ("n_flagged_pac", pa.int32()),
        ("note", pa.string()),
    ]
)


@dataclass(frozen=True)
class Settings:
    alpha: float
    delta: float  # the PAC guarantee's 1 - confidence
    inconclusive_auc: float  # an AUC above this at 80% power is "inconclusive"
    inconclusive_rate: float  # likewise a flag rate
    seed: int


def blind_columns(blind: BlindBaseline | None, alpha: float) -> dict:
    if blind is None:
        return {"blind_rejected": None}
    return {
        "blind_auc": blind.auc,
        "blind_ci_low": blind.ci_low,
        "blind_ci_high": blind.ci_high,
        "blind_p": blind.p_value,
        "blind_rejected": blind.p_value <= alpha,
    }


def gate(blind: BlindBaseline | None, alpha: float) -> str | None:
    """The shift verdict when the blind baseline rejected, else None."""
    if blind is None or blind.p_value > alpha:
        return None
    return shift_text(blind.auc, blind.ci_low, blind.ci_high, blind.p_value)


def blind_row(blind: BlindBaseline, s: Settings) -> dict:
    detectable = blind.detectable_auc(s.alpha)
    how = "every labelling" if blind.exact else f"{blind.n_labellings} random labellings"
    return {
        "test": "blind_baseline",
        "detector": "text only (no model)",
        "n_suspect": blind.n_suspect,
        "n_controls_used": blind.n_control,
        "n_controls_dropped": 0,
        "statistic": blind.auc,
        "p_value": blind.p_value,
        "effect": AUC,
        "detectable_effect": detectable,
        "assumes_exchangeable": False,
        "evidence": "check",
        "counted_as_evidence": False,
        "verdict": shift_verdict(
            blind.auc, blind.ci_low, blind.ci_high, blind.p_value, s.alpha, detectable, s.inconclusive_auc
        ),
        "note": f"{blind.folds}-fold cross-validated AUC of a text-only classifier; permutation p over {how}; "
        f"power from that permutation null (mean {blind.null_mean:.3f}, sd {blind.null_sd:.3f})",
    }


def _dropped(control_ids: set[str], used: set[str], why: str) -> dict:
    dropped = sorted(control_ids - used)
    return {
        "n_controls_used": len(used & control_ids),
        "n_controls_dropped": len(dropped),
        "controls_dropped": f"{len(dropped)} {why}, e.g. {', '.join(dropped[:3])}" if dropped else None,
    }


def conformal_row(method: str, scores: dict[str, float], control_ids: set[str], s: Settings, shift: str | None) -> dict:
    controls = sorted(set(scores) & control_ids)
    suspects = sorted(set(scores) - control_ids)
    row = {
        "test": "conformal_flags",
        "detector": method,
        "n_suspect": len(suspects),
        "effect": RATE,
        "assumes_exchangeable": True,
        "evidence": OBSERVATIONAL,
        "delta": s.delta,
        **_dropped(control_ids, set(controls), f"control ids without a finite {method} score"),
    }
    m, n = len(controls), len(suspects)
    if not (m and n):
        return row | {
            "verdict": verdict(None, s.alpha, RATE, None, s.inconclusive_rate, shift),
            "counted_as_evidence": False,
            "note": "no suspect or no control scored",
        }
    c, t = np.array([scores[i] for i in controls]), np.array([scores[i] for i in suspects])
    k, k_pac = conformal_rank(m, s.alpha), pac_rank(m, s.alpha, s.delta)
    flagged = int(flags_at_rank(c, t, k).sum())
    p = flag_count_p(flagged, n, m, k)
    detectable = detectable_flag_rate(n, m, s.alpha, k=k)
    note = (
        f"flagged {flagged} of {n} at alpha (above the {k}-th largest of {m} controls)"
        if k
        else f"{m} controls are too few to flag anything at alpha = {s.alpha} (needs {conformal_rank_needs(s.alpha)})"
    )
    note += (
        f"; PAC (FPR <= alpha with probability >= {1 - s.delta:g}): above the {k_pac}-th largest"
        if k_pac
        else f"; PAC flags nothing below {min_controls(s.alpha, s.delta)} controls"
    )
    return row | {
        "statistic": float(flagged),
        "p_value": p,
        "detectable_effect": detectable,
        "conformal_rank": k,
        "fpr_exceed_probability": fpr_exceed_probability(k, m, s.alpha) if k else None,
        "pac_rank": k_pac,
        "n_flagged_pac": int(flags_at_rank(c, t, k_pac).sum()),
        "verdict": verdict(p, s.alpha, RATE, detectable, s.inconclusive_rate, shift),
        "counted_as_evidence": shift is None and p is not None and p <= s.alpha,
        "note": note,
    }


def conformal_rank_needs(alpha: float) -> str:
    """How many controls a conformal flag at alpha needs: floor(alpha (m + 1)) >= 1."""
    return f"at least {math.ceil(1 / alpha - 1 - 1e-9)}"


def leakage_row(method: str, decisions: dict[str, bool], control_ids: set[str], s: Settings, shift: str | None) -> dict:
    controls = sorted(set(decisions) & control_ids)
    suspects = sorted(set(decisions) - control_ids)
    row = {
        "test": "leakage_rate",
        "detector": method,
        "n_suspect": len(suspects),
        "effect": RATE,
        "assumes_exchangeable": True,
        "evidence": OBSERVATIONAL,
        **_dropped(control_ids, set(controls), f"control ids without a {method} decision"),
    }
    if not (controls and suspects):
        return row | {
            "verdict": verdict(None, s.alpha, RATE, None, s.inconclusive_rate, shift),
            "counted_as_evidence": False,
            "note": "no suspect or no control decided",
        }
    x, y = sum(decisions[i] for i in suspects), sum(decisions[i] for i in controls)
    n, m = len(suspects), len(controls)
    p = float(fisher_exact([[x, n - x], [y, m - y]], alternative="greater").pvalue)
    detectable = detectable_fisher_rate(n, m, y / m, s.alpha)
    return row | {
        "statistic": x / n,
        "p_value": p,
        "detectable_effect": detectable,
        "verdict": verdict(p, s.alpha, RATE, detectable, s.inconclusive_rate, shift),
        "counted_as_evidence": shift is None and p <= s.alpha,
        "note": f"{x} of {n} suspects flagged against {y} of {m} controls (Fisher exact, one-sided; power with "
        "the controls' rate plugged in)",
    }


def dataset_inference_row(found: dict, s: Settings, shift: str | None) -> dict:
    """``found``: the audit's dataset-inference row (n_suspect, n_control,
    n_control_unscored, features, p_value, note)."""
    n, m, p = found["n_suspect"], found["n_control"], found.get("p_value")
    detectable = dataset_inference_detectable_auc(n, m, s.alpha)
    return {
        "test": "dataset_inference",
        "detector": found.get("features") or "",
        "n_suspect": n,
        "n_controls_used": m,
        "n_controls_dropped": found["n_control_unscored"],
        "controls_dropped": f"{found['n_control_unscored']} control ids of samples the audit did not score"
        if found["n_control_unscored"]
        else None,
        "p_value": p,
        "effect": AUC,
        "detectable_effect": detectable,
        "assumes_exchangeable": True,
        "evidence": OBSERVATIONAL,
        "verdict": verdict(p, s.alpha, AUC, detectable, s.inconclusive_auc, shift),
        "counted_as_evidence": shift is None and p is not None and p <= s.alpha,
        "note": found.get("note") or "power: Mann-Whitney approximation on the held-out halves at alpha / 2",
    }


# Where the blind baseline rejects, the contrast is gated too: its assumption (a shift moves both models'
# scores alike) failed in the shifted-control experiment (docs/results.md): with docstring-free suspects a
# never-exposed model's contrast rejected in 8 of 10 draws.
CONTRAST_UNDER_SHIFT = (
    "; the contrast assumes the shift moves the target's and the reference's scores alike, which "
    "the shifted-control experiment found false"
)


def contrast_row(
    method: str,
    target: dict[str, float],
    reference: dict[str, float],
    reference_name: str,
    control_ids: set[str],
    s: Settings,
    shift: str | None = None,
) -> dict:
    """The reference-model contrast; ``shift``: the gate's text where the
    blind baseline rejected (then its verdict is not counted as evidence)."""
    gated = None if shift is None else shift + CONTRAST_UNDER_SHIFT
    both = set(target) & set(reference)
    controls, suspects = sorted(both & control_ids), sorted(both - control_ids)
    row = {
        "test": "reference_contrast",
        "detector": method,
        "n_suspect": len(suspects),
        "effect": AUC,
        "assumes_exchangeable": False,
        "evidence": OBSERVATIONAL,
        **_dropped(control_ids, set(controls), f"control ids without a {method} score under both models"),
    }
    note = f"d = {method}(target) - {method}({reference_name}); {ASSUMPTION}"
    if not (controls and suspects):
        return row | {
            "verdict": verdict(None, s.alpha, AUC, None, s.inconclusive_auc, gated),
            "counted_as_evidence": False,
            "note": note,
        }
    result = reference_contrast(
        contrasts(target, reference, suspects), contrasts(target, reference, controls), seed=s.seed
    )
    detectable = detectable_auc(len(suspects), len(controls), s.alpha)
    return row | {
        "statistic": result.mean_difference,
        "p_value": result.p_value,
        "detectable_effect": detectable,
        "verdict": verdict(result.p_value, s.alpha, AUC, detectable, s.inconclusive_auc, gated),
        "counted_as_evidence": gated is None and result.p_value <= s.alpha,
        "note": note,
    }


def model_rows(
    model: str,
    benchmark: str,
    lookup: dict[str, dict[str, float]],
    decisions: dict[str, dict[str, bool]],
    control_ids: set[str],
    blind: BlindBaseline | None,
    di: dict | None,
    s: Settings,
    reference: tuple[str, dict[str, dict[str, float]], str] | None = None,
    negative_control: bool = False,
) -> list[dict]:
    """Every row of one model on one benchmark. ``lookup``: method -> sample
    -> finite score; ``decisions``: SrDetection method -> sample -> flagged;
    ``control_ids``: this benchmark's control samples; ``reference``:
    (its name, its lookup, the contrast's method) or None;
    ``negative_control``: the model is declared unexposed to suspects and
    controls (its rows are the negative-control gate's input)."""
    shift = gate(blind, s.alpha)
    rows = [blind_row(blind, s)] if blind is not None else []
    if di is not None:
        rows.append(dataset_inference_row(di, s, shift))
    rows += [conformal_row(method, lookup[method], control_ids, s, shift) for method in sorted(lookup)]
    rows += [
        leakage_row(method, decisions[method], control_ids, s, shift)
        for method in LEAKAGE_METHODS
        if method in decisions
    ]
    if reference is not None:
        name, ref_lookup, method = reference
        missing = [who for who, table in ((model, lookup), (name, ref_lookup)) if method not in table]
        if missing:
            raise ValueError(
                f"audit.reference.method: {method!r} has no finite score under {' or '.join(missing)} on "
                f"{benchmark} (scored: {', '.join(sorted(lookup))})"
            )
        rows.append(contrast_row(method, lookup[method], ref_lookup[method], name, control_ids, s, shift))
    common = {
        "model": model,
        "benchmark": benchmark,
        "alpha": s.alpha,
        "negative_control": negative_control,
        **blind_columns(blind, s.alpha),
    }
    return [common | r for r in rows]


def negative_control_gate(rows: list[dict]) -> list[dict]:
    """Close the negative-control gate where it must: on each benchmark,
    a negative-control model (column ``negative_control``) whose
    observational rows reject at alpha / m (Bonferroni over its m rows with
    a p-value) shows that the control set differs from the suspects in a way
    models see, whatever the blind baseline found. Every observational row
    of that benchmark then reads the gate's text and is not counted (a row
    the blind gate already closed keeps its text). The rows come back in
    their order, the gate's text in ``negative_control_gate``."""
    gates: dict[str, str] = {}
    for benchmark in dict.fromkeys(r["benchmark"] for r in rows):
        for model in dict.fromkeys(r["model"] for r in rows if r["benchmark"] == benchmark and r["negative_control"]):
            tested = [
                r
                for r in rows
                if (r["model"], r["benchmark"]) == (model, benchmark)
                and r.get("evidence") == OBSERVATIONAL
                and r.get("p_value") is not None
            ]
            rejecting = sorted(
                (r for r in tested if r["p_value"] <= r["alpha"] / len(tested)), key=lambda r: r["p_value"]
            )
            if rejecting and benchmark not in gates:
                first = rejecting[0]
                name = f"{first['test']} ({first['detector']})" if first["detector"] else first["test"]
                gates[benchmark] = negative_control_text(model, name, first["p_value"])
    out = []
    for r in rows:
        text = gates.get(r["benchmark"])
        if text is None or r.get("evidence") != OBSERVATIONAL:
            out.append(r)
            continue
        blind_closed = r.get("assumes_exchangeable") and r.get("blind_rejected")
        out.append(
            r
            | {"negative_control_gate": text, "counted_as_evidence": False}
            | ({} if blind_closed else {"verdict": text})
        )
    return out


def negative_control_bootstrap_row(
    model: str,
    benchmark: str,
    method: str,
    lookups: dict[str, dict[str, dict[str, float]]],
    negative_controls: list[str],
    control_ids: set[str],
    s: Settings,
    blind: BlindBaseline | None,
) -> dict:
    """The ConStat-style test of ``model`` against two or more negative
    controls on ``method`` (:mod:`leaktrace.calibration.negative_controls`):
    observational, and not gated by the negative-control gate, since it is
    the test built for a control set that models see as different."""
    names = [model, *negative_controls]
    missing = [name for name in names if method not in lookups[name]]
    if missing:
        raise ValueError(
            f"audit.reference.method: {method!r} has no finite score under {', '.join(missing)} on {benchmark}, "
            "which the negative-control bootstrap compares"
        )
    scored = set.intersection(*(set(lookups[name][method]) for name in names))
    controls, suspects = sorted(scored & control_ids), sorted(scored - control_ids)
    row = {
        "model": model,
        "benchmark": benchmark,
        "test": "negative_control_bootstrap",
        "detector": method,
        "n_suspect": len(suspects),
        "effect": AUC,
        "alpha": s.alpha,
        "assumes_exchangeable": False,
        "evidence": OBSERVATIONAL,
        "negative_control": False,
        **blind_columns(blind, s.alpha),
        **_dropped(control_ids, set(controls), f"control ids without a {method} score under every model"),
    }
    note = f"{model}'s AUC of suspects over controls minus the mean of {', '.join(negative_controls)}'; {BOOTSTRAP_ASSUMPTION}"
    if not (controls and suspects):
        return row | {
            "verdict": verdict(None, s.alpha, AUC, None, s.inconclusive_auc),
            "counted_as_evidence": False,
            "note": note,
        }
    found = bootstrap_test(
        lookups[model][method], [lookups[n][method] for n in negative_controls], suspects, controls, seed=s.seed
    )
    return row | {
        "statistic": found.difference,
        "p_value": found.p_value,
        "verdict": verdict(found.p_value, s.alpha, AUC, None, s.inconclusive_auc),
        "counted_as_evidence": found.p_value <= s.alpha,
        "note": f"{note}; AUC {found.auc_target:.3f} against {found.auc_negative:.3f}, difference "
        f"{found.difference:+.3f} [{found.ci_low:+.3f}, {found.ci_high:+.3f}] over {found.resamples} bootstrap draws",
    }
