"""audit-contamination: the dataset-level test of every audited model on
every audited benchmark, against the user's control ids.

No testbed knows which samples an audited model saw, so the validation set
is the user's: control ids (``contamination.held_out_ids``), samples the
model cannot have seen (problems released after its training cutoff, or
written for the audit). Dataset inference (Maini et al. 2024;
:mod:`leaktrace.contamination.dataset_inference`) asks whether the other
samples (the suspect set) score higher on the detectors than the controls.
Beside each p-value stands its null, measured on this model and benchmark:
the same test on random halves of the control set against each other, over
``contamination.calibration.seeds`` seeds (both halves unseen, so every
rejection is a false positive), with its Clopper-Pearson interval and
binomial verdict (:mod:`leaktrace.calibration.rates`). Ref's
reference model, when Ref is among the features, is named in the table.

Those halves are exchangeable by construction and cannot see a control set
that differs from the suspects, so beside them stands the blind baseline
(``audit/blind_baseline.parquet``, rule ``audit_blind``), and the verdict
table (``audit/verdicts.parquet``, :mod:`leaktrace.calibration.audit_verdicts`)
gives every test of the audit, each per-sample detector's conformal flags
included, its power, its control ids used and dropped, and its verdict,
gated where the blind baseline rejects."""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.calibration import audit_verdicts
from leaktrace.calibration.blind_baseline import BlindBaseline, from_row
from leaktrace.calibration.negative_controls import MIN_NEGATIVE_CONTROLS
from leaktrace.calibration.rates import false_positive_rate
from leaktrace.contamination.dataset_inference import MIN_PER_SET, dataset_inference
from leaktrace.contamination.dataset_inference_row import dataset_inference_row
from leaktrace.contamination.features import feature_matrix, score_lookup, shared_methods
from leaktrace.data.sample_ids import match_ids, read_id_list
from leaktrace.report.audit_verdicts import render as render_verdicts
from leaktrace.report.tables import markdown_table
from leaktrace.seeding import derive_seed
from leaktrace.settings.audit_contamination import AuditContaminationSettings

log = logging.getLogger(__name__)


SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("benchmark", pa.string()),
        ("test", pa.string()),  # dataset_inference
        ("n_suspect", pa.int32()),  # scored samples not among the control ids
        ("n_control", pa.int32()),  # scored control samples
        (
            "n_control_unscored",
            pa.int32(),
        ),  # control ids of samples the audit dropped (not runnable, no valid variants)
        ("features", pa.string()),  # the detectors used, comma-separated
        ("ref_model", pa.string()),  # Ref's reference model, when ref is a feature
        ("p_value", pa.float64()),
        ("alpha", pa.float64()),
        # the null: the test on random halves of the control set, one per seed
        ("null", pa.string()),
        ("null_seeds", pa.int32()),
        ("null_rejected", pa.int32()),
        ("null_rate", pa.float64()),  # its false-positive rate at alpha
        ("null_rate_low", pa.float64()),  # Clopper-Pearson 95%
        ("null_rate_high", pa.float64()),
        ("null_verdict", pa.string()),
        ("note", pa.string()),  # why a p-value or its null is missing
        # the gate and the power (audit/verdicts.parquet has the rest)
        ("blind_rejected", pa.bool_()),  # the blind baseline rejected at alpha (false: not refuted); null: not run
        ("detectable_effect", pa.float64()),  # the AUC detected with 80% power; null: none
        ("verdict", pa.string()),
    ]
)

NULL_SCENARIO = "random halves of the control set"


def _halves(ids: list[str], seed: int) -> tuple[list[str], list[str]]:
    shuffled = sorted(ids)
    random.Random(seed).shuffle(shuffled)
    return shuffled[: len(shuffled) // 2], shuffled[len(shuffled) // 2 :]


def model_row(
    model: str,
    benchmark: str,
    lookup: dict,
    control_ids: set[str],
    settings: AuditContaminationSettings,
    seed: int,
    ref_model: str | None = None,
) -> dict:
    """The test of one model on one benchmark, with its null; ``ref_model``:
    Ref's reference model, named in the row where Ref is a feature."""
    di, alpha, seeds = settings.dataset_inference, settings.contamination_alpha, settings.calibration.seeds
    scored = set().union(*lookup.values()) if lookup else set()
    control = sorted(scored & control_ids)
    suspect = sorted(scored - control_ids)
    row = {
        "model": model,
        "benchmark": benchmark,
        "test": "dataset_inference",
        "n_suspect": len(suspect),
        "n_control": len(control),
        "n_control_unscored": len(control_ids - scored),
        "alpha": alpha,
        "null": NULL_SCENARIO,
    }
    if min(len(suspect), len(control)) < MIN_PER_SET:
        return row | {
            "note": f"dataset inference needs at least {MIN_PER_SET} suspect and {MIN_PER_SET} control samples"
        }
    found, _ = dataset_inference_row(lookup, suspect, lookup, control, di, alpha, seed, curve=False)
    row |= {
        "features": found["features"],
        "p_value": found["p_value"],
        "ref_model": ref_model if "ref" in found["features"].split(",") else None,
    }
    if len(control) // 2 < MIN_PER_SET:
        return row | {"note": f"no null: halves of the {len(control)} control samples are below {MIN_PER_SET}"}
    methods = shared_methods([lookup], [control])
    ps = []
    for k in range(seeds):
        s = derive_seed(seed, "null", k)
        a, b = _halves(control, s)
        ps.append(
            dataset_inference(
                feature_matrix(lookup, a, methods), feature_matrix(lookup, b, methods), n_splits=di.n_splits, seed=s
            ).p_value
        )
    rate = false_positive_rate(ps, alpha)
    return row | {
        "null_seeds": rate["n_seeds"],
        "null_rejected": rate["n_rejected"],
        "null_rate": rate["rate"],
        "null_rate_low": rate["rate_low"],
        "null_rate_high": rate["rate_high"],
        "null_verdict": rate["verdict"],
    }


def verdict_settings(settings: AuditContaminationSettings, seed: int) -> audit_verdicts.Settings:
    """The verdict table's settings: audit.pac_delta, inconclusive_auc and
    inconclusive_rate at the test's alpha (contamination.alpha)."""
    return audit_verdicts.Settings(
        alpha=settings.contamination_alpha,
        delta=settings.pac_delta,
        inconclusive_auc=settings.inconclusive_auc,
        inconclusive_rate=settings.inconclusive_rate,
        seed=seed,
    )


def audit_contamination(
    scores: Mapping[tuple[str, str], Path],
    benchmarks: Mapping[str, Path],
    control_ids: Path,
    settings: AuditContaminationSettings,
    seed: int,
    output: Path,
    report: Path,
    blind: Path | None = None,
    verdicts: Path | None = None,
    verdicts_report: Path | None = None,
    ref_model: str | None = None,
) -> None:
    """Write the dataset-level test of every audited model on every audited
    benchmark against the control ids, and the audit's verdict table.

    The test and its null go to ``output`` and its Markdown ``report``. ``scores``: (audit
    model, benchmark) -> scores.parquet; ``benchmarks``: benchmark -> its
    ingested table (every sample, to match the ids); ``blind``: the audit's
    blind-baseline table; ``verdicts`` and ``verdicts_report``: where the
    verdict table goes; ``ref_model``: Ref's reference model (none: Ref is off)."""
    everything = {r["sample_id"] for path in benchmarks.values() for r in read_records(path, ["sample_id"])}
    matched = match_ids(read_id_list(control_ids), everything, str(control_ids))
    exclude = set(settings.dataset_inference.exclude_methods)
    baselines: dict[str, BlindBaseline | None] = (
        {r["benchmark"]: from_row(r) for r in read_records(blind)} if blind else {}
    )
    reference = settings.reference
    negatives = settings.unexposed()
    records = {key: read_records(path, ["sample_id", "method", "score", "decision"]) for key, path in scores.items()}
    rows, table = [], []
    for (model, benchmark), found in records.items():
        lookup = score_lookup(found, exclude)
        mine = {sid for sid in matched if sid.startswith(f"{benchmark}/")}
        model_seed = derive_seed(seed, "audit-contamination", model, benchmark)
        rows.append(model_row(model, benchmark, lookup, mine, settings, model_seed, ref_model))
        if rows[-1]["n_control_unscored"]:
            log.info(
                "%s on %s: %d control ids name samples the audit did not score",
                model,
                benchmark,
                rows[-1]["n_control_unscored"],
            )
        if verdicts is None:
            continue
        decisions = {
            m: {r["sample_id"]: bool(r["decision"]) for r in found if r["method"] == m and r["decision"] is not None}
            for m in audit_verdicts.LEAKAGE_METHODS
        }
        ref = None
        if reference.model and reference.model != model and (reference.model, benchmark) in records:
            ref = (reference.model, score_lookup(records[(reference.model, benchmark)], exclude), reference.method)
        mine_rows = audit_verdicts.model_rows(
            model,
            benchmark,
            lookup,
            {m: d for m, d in decisions.items() if d},
            mine,
            baselines.get(benchmark),
            rows[-1],
            verdict_settings(settings, model_seed),
            ref,
            negative_control=model in negatives,
        )
        if len(negatives) >= MIN_NEGATIVE_CONTROLS and model not in negatives:
            lookups = {name: score_lookup(records[(name, benchmark)], exclude) for name in [model, *negatives]}
            mine_rows.append(
                audit_verdicts.negative_control_bootstrap_row(
                    model,
                    benchmark,
                    reference.method,
                    lookups,
                    negatives,
                    mine,
                    verdict_settings(settings, model_seed),
                    baselines.get(benchmark),
                )
            )
        table += mine_rows
    table = audit_verdicts.negative_control_gate(table)
    for row in rows:
        di = next(
            (
                r
                for r in table
                if (r["model"], r["benchmark"], r["test"]) == (row["model"], row["benchmark"], "dataset_inference")
            ),
            None,
        )
        if di is not None:
            row |= {k: di[k] for k in ("blind_rejected", "detectable_effect", "verdict")}
    write_table(rows, SCHEMA, output)
    report.write_text(render(rows, settings.contamination_alpha))
    if verdicts is not None:
        write_table(table, audit_verdicts.SCHEMA, verdicts)
        delta = verdict_settings(settings, seed).delta
        (verdicts_report or verdicts.with_suffix(".md")).write_text(
            render_verdicts(table, settings.contamination_alpha, delta)
        )
    log.info("audit contamination: %d p-values, %d verdicts", len(rows), len(table))


def render(rows: list[dict], alpha: float) -> str:
    def fmt(value, spec=".3g"):
        return "–" if value is None else format(value, spec)

    table = [
        {
            **r,
            "p": fmt(r["p_value"]),
            "ref model": r.get("ref_model") or "–",
            "null FPR [95% CI]": "–"
            if r.get("null_rate") is None
            else f"{r['null_rate']:.3f} [{r['null_rate_low']:.3f}, {r['null_rate_high']:.3f}] ({r['null_rejected']}/{r['null_seeds']})",
            "null verdict": r.get("null_verdict") or r.get("note") or "–",
            "verdict": r.get("verdict") or "–",
        }
        for r in rows
    ]
    return (
        "# Audit: dataset-level test against the control ids\n\n"
        "Dataset inference (Maini et al. 2024): the detectors' scores as features, a logistic regression fitted on "
        "half of the suspect samples (those not among the control ids) and half of the controls, a one-sided Welch "
        "t-test on the other halves; the splits combined as twice the median p-value. A small p-value says the "
        "suspect samples score as the model's training data would, relative to the controls. Its null, beside it: "
        f"the same test on {NULL_SCENARIO} (no half was seen), over seeds; its false-positive rate at α = "
        f"contamination.alpha = {alpha} should be near α, or the p-value is not evidence. Those halves are exchangeable "
        'by construction, so they cannot see a control set that differs from the suspects: the verdict reads "not '
        'calibrated" where the blind baseline (a text-only classifier, `verdicts.md`) tells the two sets apart, and '
        "otherwise states the smallest AUC the test detects with 80% power.\n\n"
        + markdown_table(
            table,
            [
                "model",
                "benchmark",
                "n_suspect",
                "n_control",
                "features",
                "ref model",
                "p",
                "null FPR [95% CI]",
                "null verdict",
                "verdict",
            ],
        )
    )
