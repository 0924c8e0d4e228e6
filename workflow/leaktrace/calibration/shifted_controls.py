"""The shifted-control experiment: how the audit's tests behave when the
control set differs from the suspects by a known shift that has nothing to
do with exposure, and when it does not.

A model that never saw the benchmark (the shipped base model, pretrained
on the standard library only) scores a pool holding every problem twice,
as released and shifted (docstrings removed: :mod:`leaktrace.data.docstrings`).
Each draw (seeded) picks ``n_suspect`` problems as suspects and
``n_control`` other problems as controls, in three conditions: ``shifted``
(suspects as released, controls shifted), ``unshifted`` (both as
released) and ``reversed`` (suspects shifted, controls as released: the
same shift in the other direction, which a one-sided test may see where it
missed the first); and four arms that change no text, so no text-only
classifier is built to see them: ``loss-target`` and ``loss-reference``
(controls drawn from the other problems with weight exp(beta z), z a
problem's standardised loss under the audited model, or under the
independent never-exposed reference: harder problems as controls),
``hardest-target`` (the hardest other problems under the audited model) and
``id-split`` (suspects from the lower half of the problem ids, controls from
the upper half: a stand-in for a later release). Every draw is an
audit with no exposure at all, so each rejection is a false positive. Per
draw, the audit's own verdict rows (:mod:`leaktrace.calibration.audit_verdicts`):
dataset inference, each detector's conformal flag count, SrDetection
gray-box's leakage rate (the naive tests, which assume exchangeable
controls), the blind baseline (which should reject the shifted controls
and not the others) and its gate, and the reference-model contrast against
a second never-exposed model. Draws share the pool, so they are not
independent: the rates' intervals (Clopper-Pearson over draws) are
optimistic."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from leaktrace.calibration import audit_verdicts
from leaktrace.calibration.blind_baseline import blind_baseline
from leaktrace.calibration.rates import clopper_pearson
from leaktrace.contamination.dataset_inference import MIN_PER_SET
from leaktrace.contamination.dataset_inference_row import dataset_inference_row
from leaktrace.seeding import derive_seed
from leaktrace.settings.shifted_controls import ShiftedControlsSettings

ORIGINAL_PREFIX, SHIFTED_PREFIX = "HumanEval/", "HumanEvalNoDoc/"  # scripts/shifted_pool.py's task ids
CONDITIONS = ("shifted", "unshifted", "reversed", "loss-target", "loss-reference", "hardest-target", "id-split")
TEXT_SHIFTS = {"shifted": (False, True), "reversed": (True, False)}  # (suspects shifted, controls shifted)
SELECTION_STRENGTH = 1.0  # beta of the loss-weighted arms
PAGE_ANSWERS = ("Evidence of exposure", "observational finding", "No evidence of exposure", "Inconclusive")
NAIVE_TESTS = ("dataset_inference", "conformal_flags", "leakage_rate")

DRAWS_SCHEMA = pa.schema(
    [
        ("condition", pa.string()),  # shifted: controls without docstrings | unshifted | reversed: suspects without
        ("draw", pa.int32()),
        ("test", pa.string()),
        ("detector", pa.string()),
        ("n_suspect", pa.int32()),
        ("n_control", pa.int32()),
        ("p_value", pa.float64()),
        ("rejected", pa.bool_()),  # p <= alpha, before the gate: the naive test's decision
        ("blind_auc", pa.float64()),
        ("blind_p", pa.float64()),
        ("gated", pa.bool_()),  # the blind baseline rejected and the test assumes exchangeable controls
        ("counted_as_evidence", pa.bool_()),  # after the gates
        ("verdict", pa.string()),
        ("page_answer", pa.string()),  # the verdict page's answer for the draw: one of PAGE_ANSWERS
    ]
)

PAGE_SCHEMA = pa.schema(
    [
        ("condition", pa.string()),
        ("answer", pa.string()),  # one of PAGE_ANSWERS
        ("n_draws", pa.int32()),
        ("n_answered", pa.int32()),
        ("rate", pa.float64()),
        ("rate_low", pa.float64()),  # Clopper-Pearson 95% over draws
        ("rate_high", pa.float64()),
    ]
)

SUMMARY_SCHEMA = pa.schema(
    [
        ("condition", pa.string()),
        ("test", pa.string()),  # conformal_flags: every detector's draws pooled
        ("n_draws", pa.int32()),  # draws (x detectors for conformal_flags)
        ("n_rejected", pa.int32()),  # naive: p <= alpha
        ("rate", pa.float64()),  # a false-positive rate for every test but the blind baseline's (its detection rate)
        ("rate_low", pa.float64()),  # Clopper-Pearson 95% over draws (draws share the pool: optimistic)
        ("rate_high", pa.float64()),
        ("n_counted", pa.int32()),  # counted as evidence after the gate
        ("counted_rate", pa.float64()),
    ]
)


def problems(sample_ids: Sequence[str], benchmark: str) -> list[str]:
    """The problem numbers that are in the pool both as released and shifted, sorted numerically."""
    original = {
        s.removeprefix(f"{benchmark}/{ORIGINAL_PREFIX}")
        for s in sample_ids
        if s.startswith(f"{benchmark}/{ORIGINAL_PREFIX}")
    }
    shifted = {
        s.removeprefix(f"{benchmark}/{SHIFTED_PREFIX}")
        for s in sample_ids
        if s.startswith(f"{benchmark}/{SHIFTED_PREFIX}")
    }
    return sorted(original & shifted, key=lambda k: (len(k), k))


def sample_id(benchmark: str, problem: str, shifted: bool) -> str:
    return f"{benchmark}/{SHIFTED_PREFIX if shifted else ORIGINAL_PREFIX}{problem}"


def draw(pool: Sequence[str], n_suspect: int, n_control: int, seed: int) -> tuple[list[str], list[str]]:
    """``n_suspect`` suspect problems and ``n_control`` other ones, at random (seeded)."""
    if n_suspect + n_control > len(pool):
        raise ValueError(
            f"{n_suspect} suspects and {n_control} controls need {n_suspect + n_control} problems; the pool has "
            f"{len(pool)}"
        )
    order = np.random.default_rng(seed).permutation(len(pool))
    return sorted(pool[i] for i in order[:n_suspect]), sorted(pool[i] for i in order[n_suspect : n_suspect + n_control])


def select_controls(
    condition: str,
    pool: Sequence[str],
    suspects: Sequence[str],
    n_control: int,
    loss: dict[str, dict[str, float]],
    seed: int,
) -> list[str]:
    """The controls of an arm that changes no text: from the problems not
    among ``suspects``, by ``condition``'s rule. ``loss``: "target" and
    "reference" -> problem -> its loss score (higher: likelier, so its
    negative is the loss)."""
    rest = [k for k in pool if k not in set(suspects)]
    if condition in ("loss-target", "loss-reference", "hardest-target"):
        scores = loss["target" if condition != "loss-reference" else "reference"]
        values = np.array([-scores[k] for k in rest])  # the loss: higher is harder
        z = (values - values.mean()) / (values.std() or 1.0)
        if condition == "hardest-target":
            return sorted(rest[i] for i in np.argsort(-z, kind="stable")[:n_control])
        weights = np.exp(SELECTION_STRENGTH * z)
        chosen = np.random.default_rng(seed).choice(len(rest), n_control, replace=False, p=weights / weights.sum())
        return sorted(rest[i] for i in chosen)
    raise ValueError(f"{condition!r} draws its controls at random or by id")


def id_split(pool: Sequence[str], n_suspect: int, n_control: int, seed: int) -> tuple[list[str], list[str]]:
    """Suspects at random from the lower half of the problem ids, controls from the upper half."""
    half = len(pool) // 2
    if n_suspect > half or n_control > len(pool) - half:
        raise ValueError(f"the id split needs {n_suspect} and {n_control} problems in each half of {len(pool)}")
    rng = np.random.default_rng(seed)
    low, high = pool[:half], pool[half:]
    return (
        sorted(low[i] for i in rng.permutation(len(low))[:n_suspect]),
        sorted(high[i] for i in rng.permutation(len(high))[:n_control]),
    )


def _restricted(lookup: dict[str, dict], ids: set[str]) -> dict[str, dict]:
    return {m: {s: v for s, v in by_id.items() if s in ids} for m, by_id in lookup.items()}


def draw_rows(
    benchmark: str,
    condition: str,
    number: int,
    suspects: list[str],
    controls: list[str],
    texts: dict[str, str],
    lookup: dict[str, dict[str, float]],
    reference: dict[str, dict[str, float]],
    decisions: dict[str, dict[str, bool]],
    settings: ShiftedControlsSettings,
    seed: int,
    page_answer: Callable[[list[dict]], str] | None = None,
) -> list[dict]:
    """The audit's verdict rows of one draw, the reference among them as a
    declared negative control (so both gates close as in an audit);
    ``page_answer``: the verdict page's answer from the target's rows (the
    report's rule, passed in by the stage)."""
    if condition not in CONDITIONS:
        raise ValueError(f"unknown condition {condition!r}; known: {', '.join(CONDITIONS)}")
    suspects_shifted, controls_shifted = TEXT_SHIFTS.get(condition, (False, False))
    suspect_ids = [sample_id(benchmark, k, suspects_shifted) for k in suspects]
    control_ids = [sample_id(benchmark, k, controls_shifted) for k in controls]
    chosen, controls_set = set(suspect_ids) | set(control_ids), set(control_ids)
    mine, ref = _restricted(lookup, chosen), _restricted(reference, chosen)
    ordered = sorted(chosen)
    blind = blind_baseline(
        [texts[s] for s in ordered],
        [s not in controls_set for s in ordered],
        seed=derive_seed(seed, "blind"),
        permutations=settings.blind_permutations,
        repeats=settings.blind_repeats,
    )
    scored = set().union(*mine.values()) if mine else set()
    suspect_scored, control_scored = sorted(scored & set(suspect_ids)), sorted(scored & controls_set)
    di = None
    if min(len(suspect_scored), len(control_scored)) >= MIN_PER_SET:
        found, _ = dataset_inference_row(
            mine,
            suspect_scored,
            mine,
            control_scored,
            settings.dataset_inference,
            settings.contamination_alpha,
            derive_seed(seed, "dataset-inference"),
            curve=False,
        )
        di = {
            "n_suspect": len(suspect_scored),
            "n_control": len(control_scored),
            "n_control_unscored": len(controls_set - scored),
            "features": found["features"],
            "p_value": found["p_value"],
        }
    s = audit_verdicts.Settings(
        alpha=settings.contamination_alpha,
        delta=settings.pac_delta,
        inconclusive_auc=settings.inconclusive_auc,
        inconclusive_rate=settings.inconclusive_rate,
        seed=derive_seed(seed, "verdicts"),
    )
    rows = audit_verdicts.model_rows(
        "target",
        benchmark,
        mine,
        _restricted(decisions, chosen),
        controls_set,
        blind,
        di,
        s,
        ("reference", ref, settings.reference_method),
    )
    negative = audit_verdicts.model_rows(
        "reference", benchmark, ref, {}, controls_set, blind, None, s, negative_control=True
    )
    rows = [r for r in audit_verdicts.negative_control_gate(rows + negative) if r["model"] == "target"]
    answer = page_answer(rows) if page_answer else None
    return [
        {
            "condition": condition,
            "draw": number,
            "test": r["test"],
            "detector": r.get("detector"),
            "n_suspect": r.get("n_suspect"),
            "n_control": r.get("n_controls_used"),
            "p_value": r.get("p_value"),
            "rejected": r.get("p_value") is not None and r["p_value"] <= settings.contamination_alpha,
            "blind_auc": r["blind_auc"],
            "blind_p": r["blind_p"],
            "gated": bool(r["assumes_exchangeable"]) and r["blind_rejected"] is True,
            "counted_as_evidence": bool(r["counted_as_evidence"]),
            "verdict": r["verdict"],
            "page_answer": answer,
        }
        for r in rows
    ]


def experiment_rows(
    benchmark: str,
    texts: dict[str, str],
    lookup: dict[str, dict[str, float]],
    reference: dict[str, dict[str, float]],
    decisions: dict[str, dict[str, bool]],
    settings: ShiftedControlsSettings,
    seed: int,
    page_answer: Callable[[list[dict]], str] | None = None,
) -> list[dict]:
    """Every draw in every condition. Draw d picks the same suspect problems
    in every condition but the id split, and the same controls in the three
    text conditions: there only whose docstrings are removed differs."""
    pool = problems(list(texts), benchmark)
    method = settings.reference_method
    loss = {
        "target": {k: lookup[method][sample_id(benchmark, k, False)] for k in pool},
        "reference": {k: reference[method][sample_id(benchmark, k, False)] for k in pool},
    }
    rows = []
    for number in range(settings.draws):
        draw_seed = derive_seed(seed, "shifted-controls", number)
        random_suspects, random_controls = draw(pool, settings.n_suspect, settings.n_control, draw_seed)
        for condition in CONDITIONS:
            suspects, controls = random_suspects, random_controls
            if condition == "id-split":
                suspects, controls = id_split(pool, settings.n_suspect, settings.n_control, draw_seed)
            elif condition not in ("shifted", "unshifted", "reversed"):
                controls = select_controls(condition, pool, suspects, settings.n_control, loss, draw_seed)
            rows += draw_rows(
                benchmark,
                condition,
                number,
                suspects,
                controls,
                texts,
                lookup,
                reference,
                decisions,
                settings,
                draw_seed,
                page_answer,
            )
    return rows


def summary_rows(rows: Sequence[dict], alpha: float) -> list[dict]:
    """Per condition and test, the naive rejection rate (p <= alpha) over
    draws, with its interval, and the share counted as evidence after the gate."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        if r["p_value"] is not None:
            groups[(r["condition"], r["test"])].append(r)
    out = []
    for (condition, test), found in sorted(groups.items(), key=lambda kv: (CONDITIONS.index(kv[0][0]), kv[0][1])):
        rejected = sum(r["p_value"] <= alpha for r in found)  # the audit's decision rule
        low, high = clopper_pearson(rejected, len(found))
        counted = sum(r["counted_as_evidence"] for r in found)
        out.append(
            {
                "condition": condition,
                "test": test,
                "n_draws": len(found),
                "n_rejected": rejected,
                "rate": rejected / len(found),
                "rate_low": low,
                "rate_high": high,
                "n_counted": counted,
                "counted_rate": counted / len(found),
            }
        )
    return out


def page_rows(rows: Sequence[dict]) -> list[dict]:
    """Per condition, how often the verdict page answered each of
    ``PAGE_ANSWERS`` over the draws, with its Clopper-Pearson interval: the
    false "Evidence of exposure" rate the page would show a user."""
    answers = {(r["condition"], r["draw"]): r["page_answer"] for r in rows if r.get("page_answer")}
    out = []
    for condition in CONDITIONS:
        found = [a for (c, _), a in answers.items() if c == condition]
        if not found:
            continue
        for kind in PAGE_ANSWERS:
            n = sum(a == kind for a in found)
            low, high = clopper_pearson(n, len(found))
            out.append(
                {
                    "condition": condition,
                    "answer": kind,
                    "n_draws": len(found),
                    "n_answered": n,
                    "rate": n / len(found),
                    "rate_low": low,
                    "rate_high": high,
                }
            )
    return out
