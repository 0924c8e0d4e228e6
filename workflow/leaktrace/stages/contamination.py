"""contamination: dataset-level p-values per model and benchmark from the
score tables alone (no forward pass). Dataset inference against known
non-members (the testbed's split) or a held-out id list, the
variant-preference test against a reference model (audit mode), the
p-value as a function of the number of samples, and the calibration of each
test: its false-positive rate under nulls the testbed knows to be true (each
target on random halves of its non-members, the sham control's variant
preference, the exchangeability test on random orders) and its power on a
target's members. Dataset inference's null under the unexposed models is
``calibration.membership``'s (re-randomised memberships, learned features
refitted); the exchangeability test on the benchmark's real order under the
unexposed models goes to the calibration table (``calibration_rows``). Also
the ``dataset-inference`` command on tables a user brings."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.calibration.rates import ABOVE, false_positive_rate, rejection_rate
from leaktrace.calibration.table import POOLED_UNEXPOSED, REAL_ORDER, count_row, write_rows
from leaktrace.calibration.unexposed import is_unexposed
from leaktrace.calibration.validity_rules import pooled_models, unjudgeable
from leaktrace.contamination.combine import COMBINATION
from leaktrace.contamination.dataset_inference import MIN_PER_SET, dataset_inference
from leaktrace.contamination.dataset_inference_row import DI, dataset_inference_row
from leaktrace.contamination.features import feature_matrix, score_lookup, shared_methods
from leaktrace.contamination.variant_preference import preference_test
from leaktrace.data.sample_ids import match_ids, read_id_list
from leaktrace.data.split import RECALL_PREFIX
from leaktrace.detect.scores import scores_by_method
from leaktrace.errors import InputError
from leaktrace.models.naming import BASE_MODEL, COORDINATES, model_coordinates
from leaktrace.report.plots import p_value_curves
from leaktrace.report.tables import markdown_table
from leaktrace.seeding import derive_seed
from leaktrace.settings.contamination import (
    ContaminationSettings,
    DatasetInferenceCommand,
    DatasetInferenceSettings,
    PreferenceSettings,
)

log = logging.getLogger(__name__)

PREFERENCE, EXCHANGEABILITY = "variant_preference", "exchangeability"
TESTBED, HELD_OUT, VARIANTS, PERMUTATIONS = "testbed", "held_out", "variants", "permutations"

P_VALUES_SCHEMA = pa.schema(
    [
        *COORDINATES,
        ("test", pa.string()),  # dataset_inference | variant_preference | exchangeability
        # testbed (known non-members) | held_out (an id list) | variants (audit mode) | permutations (exchangeability)
        ("validation", pa.string()),
        ("reference", pa.string()),  # variant_preference: the model whose preference is subtracted
        ("n_suspect", pa.int32()),
        ("n_validation", pa.int32()),  # dataset inference only
        ("features", pa.string()),  # the detectors used, comma-separated
        ("p_value", pa.float64()),
        ("combination", pa.string()),  # how the p-values of the splits were combined
        ("smallest_n", pa.int32()),  # smallest suspect-set size with p < alpha on the curve; null if none
        # variant_preference: target minus reference preference; exchangeability: canonical minus permuted log-likelihood
        ("mean_difference", pa.float64()),
    ]
)

CURVE_SCHEMA = pa.schema(
    [("model", pa.string()), ("validation", pa.string()), ("n", pa.int32()), ("p_value", pa.float64())]
)

CALIBRATION_SCHEMA = pa.schema(
    [
        # null: the rate is a false-positive rate (a null the testbed knows to be true); power: a rate under exposure
        ("kind", pa.string()),
        ("scenario", pa.string()),
        ("model", pa.string()),
        ("test", pa.string()),
        ("reference", pa.string()),  # variant_preference: the model whose preference is subtracted
        ("alpha", pa.float64()),
        ("n_seeds", pa.int32()),
        ("n_rejected", pa.int32()),
        ("rate", pa.float64()),  # share of seeds with p < alpha: the FPR of a null row, the power of a power row
        ("rate_low", pa.float64()),  # Clopper-Pearson 95%
        ("rate_high", pa.float64()),
        ("binomial_p", pa.float64()),  # null rows: one-sided exact binomial test of the rejections against alpha
        ("verdict", pa.string()),  # null rows
        # dataset inference's first split alone (exact, not conservative like the combination): uniformity
        ("rate_one_split", pa.float64()),
    ]
)

NULL, POWER = "null", "power"


def read_ids(path: Path, sample_ids: Collection[str]) -> set[str]:
    """The samples a held-out id list names (one id per line, ``mbpp/11`` or
    ``11``: :func:`leaktrace.data.sample_ids.match_ids`; an id that names no
    sample is an error)."""
    return match_ids(read_id_list(path), sample_ids, str(path))


def run_preference(
    target: dict, reference: dict, sample_ids: Sequence[str], settings: PreferenceSettings, seed: int
) -> dict:
    method = settings.method
    if method not in target or method not in reference:
        raise ValueError(
            f"the variant-preference test reads {method!r} scores, which the target or the reference lacks"
        )
    ids = [sid for sid in sample_ids if sid in target[method] and sid in reference[method]]
    result = preference_test(target[method], reference[method], ids, n_resamples=settings.n_resamples, seed=seed)
    return {
        "test": PREFERENCE,
        "n_suspect": result.n_samples,
        "features": method,
        "p_value": result.p_value,
        "mean_difference": result.mean_difference,
    }


def _halves(ids: Sequence[str], seed: int) -> tuple[list[str], list[str]]:
    shuffled = sorted(ids)
    random.Random(seed).shuffle(shuffled)
    return shuffled[: len(shuffled) // 2], shuffled[len(shuffled) // 2 :]


def is_sham(model: str) -> bool:
    """The sham control (contamination.sham): fine-tuned as a target, on no benchmark sample."""
    return model.startswith("sham-")


def preference_reference(name: str, lookups: dict) -> str:
    """The model ``variant_preference.reference`` names: a scored model, or
    ``sham``, the first sham control."""
    if name == "sham":
        shams = [m for m in lookups if is_sham(m)]
        if not shams:
            raise ValueError(
                "contamination.variant_preference.reference is sham, but no sham control is scored (contamination.sham)"
            )
        return shams[0]
    if name not in lookups:
        raise ValueError(
            f"contamination.variant_preference.reference {name!r} is not a scored model: {sorted(lookups)}"
        )
    return name


@dataclass(frozen=True)
class Scenario:
    """One calibration row: a test of ``model`` (against ``reference``) on a
    fresh random draw from the pools per seed. Dataset inference: a half of
    ``suspect`` against the other half, or, with ``validation``, against a
    half of it; the variant preference: a half of ``suspect``."""

    name: str
    kind: str
    model: str
    test: str
    suspect: list[str]
    validation: list[str] | None = None
    reference: str | None = None

    def draw(self, seed: int) -> tuple[list[str], list[str]]:
        a, b = _halves(self.suspect, seed)
        return (
            (a, _halves(self.validation, derive_seed(seed, "validation"))[0]) if self.validation is not None else (a, b)
        )


def calibration_scenarios(
    models: Sequence[str], references: Sequence[str], everyone: list[str], members: list[str], non_members: list[str]
) -> list[Scenario]:
    """The nulls and the exposures each calibrated model gives. Sham control
    (never saw the benchmark): its variant preference against each reference
    that is not itself (against the base model: a null for that test
    although the sham was fine-tuned; a second sham against the first: a
    null for the sham-referenced test). Target: DI on halves of its
    non-members (null) and half its members against half its non-members
    (power); its variant preference against each reference, on halves of the
    non-members (null) and of the members (power). Dataset inference under a
    model that never saw the split (base model, sham) is calibrated on
    re-randomised memberships with its learned features refitted
    (``calibration.membership``), which random halves of all samples are not."""
    scenarios = []
    for model in models:
        if model == BASE_MODEL:
            continue
        if is_sham(model):
            scenarios += [
                Scenario(
                    f"sham vs {_role(ref)}, random halves of all samples",
                    NULL,
                    model,
                    PREFERENCE,
                    everyone,
                    reference=ref,
                )
                for ref in references
                if ref != model
            ]
        else:
            scenarios.append(Scenario("target, random halves of non-members", NULL, model, DI, non_members))
            scenarios.append(
                Scenario("target, half the members vs half the non-members", POWER, model, DI, members, non_members)
            )
            for ref in references:
                scenarios.append(
                    Scenario(
                        f"target vs {_role(ref)}, random halves of non-members",
                        NULL,
                        model,
                        PREFERENCE,
                        non_members,
                        reference=ref,
                    )
                )
                scenarios.append(
                    Scenario(
                        f"target vs {_role(ref)}, random halves of members",
                        POWER,
                        model,
                        PREFERENCE,
                        members,
                        reference=ref,
                    )
                )
    return scenarios


def _role(model: str) -> str:
    return "base" if model == BASE_MODEL else "sham" if is_sham(model) else model


def calibration_rows(
    lookups: dict[str, dict],
    everyone: list[str],
    members: list[str],
    non_members: list[str],
    settings: ContaminationSettings,
    seed: int,
    reference: str | None = None,
    models: Sequence[str] = (),
) -> list[dict]:
    """The rejection rate of each scenario over ``calibration.seeds`` random
    draws, for the models ``models`` names (none: all). The
    variant preference is calibrated against the base model, the first sham
    control and ``reference`` (the configured one), those of them scored."""
    di, pref, alpha = settings.dataset_inference, settings.variant_preference, settings.contamination_alpha
    calibrated = set(models or lookups)
    shams = [m for m in lookups if is_sham(m)]
    references = list(dict.fromkeys(m for m in (BASE_MODEL, *shams[:1], reference) if m in lookups))
    rows = []
    for sc in calibration_scenarios(
        [m for m in lookups if m in calibrated], references, everyone, members, non_members
    ):
        if sc.test == DI and min(len(sc.suspect), len(sc.validation or sc.suspect)) // 2 < MIN_PER_SET:
            log.warning(
                "calibration %r of %s skipped: halves of the samples are below %d", sc.name, sc.model, MIN_PER_SET
            )
            continue
        methods = shared_methods([lookups[sc.model]], [sc.suspect + (sc.validation or [])])
        ps, single = [], []
        for k in range(settings.calibration.seeds):
            s = derive_seed(seed, "calibration", sc.name, sc.model, k)
            a, b = sc.draw(s)
            if sc.test == DI:
                suspect, validation = (feature_matrix(lookups[sc.model], half, methods) for half in (a, b))
                result = dataset_inference(suspect, validation, n_splits=di.n_splits, seed=s)
                ps.append(result.p_value)
                single.append(result.split_p_values[0])
            else:
                ps.append(run_preference(lookups[sc.model], lookups[sc.reference], a, pref, s)["p_value"])
                single.append(ps[-1])
        rows.append(_rate_row(sc.kind, sc.name, sc.model, sc.test, sc.reference, ps, single, alpha))
    return rows


def _rate_row(
    kind: str,
    scenario: str,
    model: str,
    test: str,
    reference: str | None,
    ps: list[float],
    single: list[float],
    alpha: float,
) -> dict:
    rate = false_positive_rate(ps, alpha) if kind == NULL else rejection_rate(ps, alpha)
    return {
        "kind": kind,
        "scenario": scenario,
        "model": model,
        "test": test,
        "reference": reference,
        "alpha": alpha,
        **rate,
        "rate_one_split": sum(p < alpha for p in single) / len(single),
    }


def exchangeability_calibration_rows(paths: Mapping[str, Path], alpha: float) -> list[dict]:
    """The sharded test's false-positive rate under each model from its
    random-order runs (stages/exchangeability.py); orders too long to shard
    are left out."""
    rows = []
    for model, path in paths.items():
        runs = read_records(path)
        ps = [r["p_value"] for r in runs if r["p_value"] is not None]
        if not ps:
            log.warning("exchangeability calibration of %s skipped: no random order gave two shards", model)
            continue
        scenario = f"random orders of the {runs[0]['samples']} examples as the canonical one"
        rows.append(_rate_row(NULL, scenario, model, EXCHANGEABILITY, None, ps, ps, alpha))
    return rows


def real_order_rows(results: dict[str, dict], alphas: list[float]) -> list[dict]:
    """The exchangeability test on the benchmark's real order under each
    unexposed model (``results``: model -> the exchangeability stage's row),
    and pooled over them: a null only if the order carries nothing a model
    can prefer unseen, i.e. was randomised at release. One model's row is a
    single draw and cannot be judged; the pooled row is, by Bonferroni over
    the models' p-values (they score one order, so they are dependent)."""
    tested = {m: r for m, r in results.items() if is_unexposed(m) and r["p_value"] is not None}
    untestable = sorted(m for m, r in results.items() if is_unexposed(m) and r["p_value"] is None)
    if untestable:
        log.warning(
            "exchangeability on the real order: no p-value under %s (fewer than two shards fit)", ", ".join(untestable)
        )
    rows = []
    for alpha in alphas:
        for model, r in tested.items():
            note = f"{r['n_shards']} shards x {r['n_permutations']} permutations of {r['n_examples']} examples ({r['samples']}); p = {r['p_value']:.3g}"
            rows.append(
                count_row(
                    EXCHANGEABILITY,
                    model,
                    REAL_ORDER,
                    alpha,
                    int(r["p_value"] <= alpha),
                    1,
                    unjudgeable(alpha),
                    note=note + "; one draw: judged only pooled over the models",
                )
            )
        if tested:
            rejected = sum(r["p_value"] <= alpha for r in tested.values())
            ps = [r["p_value"] for r in tested.values()]
            rows.append(
                count_row(
                    EXCHANGEABILITY,
                    POOLED_UNEXPOSED,
                    REAL_ORDER,
                    alpha,
                    rejected,
                    len(tested),
                    pooled_models(ps, alpha),
                    note=f"the real order under {', '.join(tested)}; one order, so the models' p-values are "
                    f"dependent: judged by Bonferroni, {len(ps)} x min p = {min(1.0, len(ps) * min(ps)):.3g}",
                )
            )
    return rows


def contamination(
    samples: Path,
    scores: Mapping[str, Path],
    settings: ContaminationSettings,
    seed: int,
    output_dir: Path,
    held_out_ids: Path | None = None,
    exchangeability: Mapping[str, Path] | None = None,
    exchangeability_calibration: Mapping[str, Path] | None = None,
    calibration_models: tuple[str, ...] = (),
) -> None:
    """Write the dataset-level contamination tests of one benchmark (p-values,
    their curve over the number of samples, their calibration and the report
    section) to ``output_dir``.

    ``scores``: testbed model -> its scores.parquet, base model first (sham
    controls named ``sham-…``); ``exchangeability``: model -> the
    exchangeability stage's result, added to the p-value table;
    ``exchangeability_calibration``: model -> its random-order runs;
    ``calibration_models``: the models calibrated (``contamination.calibration.models``
    as the rule resolves it; none: all)."""
    s = settings
    records = read_records(samples, ["sample_id", "kept", "split", "fold"])
    split = {r["sample_id"]: r["split"] for r in records if r["kept"] and r["fold"] != RECALL_PREFIX}
    members = sorted(sid for sid, s in split.items() if s == "member")
    non_members = sorted(sid for sid, s in split.items() if s == "non-member")
    exclude = set(s.dataset_inference.exclude_methods)
    lookups = {model: scores_by_method(path, exclude)[0] for model, path in scores.items()}
    di = s.dataset_inference
    pref = replace(
        s.variant_preference,
        reference=preference_reference(s.variant_preference.reference, lookups) if VARIANTS in s.validation else None,
    )
    rows, curve = [], []
    for model, lookup in lookups.items():
        base = {"model": model, **model_coordinates(model)}
        model_seed = derive_seed(seed, "contamination", model)
        for validation in s.validation:
            if validation == TESTBED:
                row, points = dataset_inference_row(
                    lookup, members, lookup, non_members, di, s.contamination_alpha, model_seed
                )
            elif validation == HELD_OUT:
                if held_out_ids is None:
                    raise ValueError(
                        "contamination.validation lists held_out but contamination.held_out_ids is not set"
                    )
                held = read_ids(held_out_ids, [r["sample_id"] for r in records])
                scored = set().union(*lookup.values())
                row, points = dataset_inference_row(
                    lookup, sorted(scored - held), lookup, sorted(scored & held), di, s.contamination_alpha, model_seed
                )
            elif model in (pref.reference, BASE_MODEL):
                continue  # the reference against itself, or the base model against a fine-tuned reference
            else:
                row = run_preference(lookup, lookups[pref.reference], sorted(split), pref, model_seed)
                row["reference"], points = pref.reference, []
            rows.append(base | {"validation": validation} | row)
            curve += [{"model": model, "validation": validation, "n": n, "p_value": p} for n, p in points]
    real_order = {}
    for model, path in (exchangeability or {}).items():
        (result,) = read_records(path)
        real_order[model] = result
        rows.append(
            {
                "model": model,
                **model_coordinates(model),
                "test": EXCHANGEABILITY,
                "validation": PERMUTATIONS,
                "n_suspect": result["n_examples"],
                "p_value": result["p_value"],
                "mean_difference": result["mean_difference"],
                "features": f"{result['n_shards']} shards x {result['n_permutations']} permutations ({result['samples']})",
            }
        )
    calibration = calibration_rows(
        lookups, sorted(split), members, non_members, s, seed, pref.reference, calibration_models
    ) + exchangeability_calibration_rows(exchangeability_calibration or {}, s.contamination_alpha)
    write_table(rows, P_VALUES_SCHEMA, output_dir / "p_values.parquet")
    write_table(curve, CURVE_SCHEMA, output_dir / "p_value_curve.parquet")
    write_table(calibration, CALIBRATION_SCHEMA, output_dir / "calibration.parquet")
    write_rows(real_order_rows(real_order, s.alphas), output_dir / "calibration_rows.parquet")
    p_value_curves(curve, s.contamination_alpha, output_dir / "p_value_curve.png")
    (output_dir / "report.md").write_text(render_section(rows, calibration, s.contamination_alpha))
    log.info("contamination: %d p-values, %d calibration rows in %s", len(rows), len(calibration), output_dir)


def render_section(rows: Sequence[dict], calibration: Sequence[dict], alpha: float) -> str:
    """The Markdown section for the aggregate report. A p-value is shown
    beside its test's calibration (for the variant preference, with the same
    reference model): a test that rejects too often under a null the testbed
    knows to be true is marked, so its p-values are not read as evidence.
    False-positive rates and power are tables of their own."""
    nulls = [c for c in calibration if c["kind"] == NULL]
    failed = {(c["test"], c.get("reference")) for c in nulls if c["verdict"] == ABOVE}
    checked = {(c["test"], c.get("reference")) for c in nulls}

    def calibrated(row: dict) -> str:
        key = (row["test"], row.get("reference") if row["test"] == PREFERENCE else None)
        return "NO: rejects too often under its null" if key in failed else ("yes" if key in checked else "not checked")

    table = [
        {
            **r,
            "p": "n/e" if r["p_value"] is None else f"{r['p_value']:.2g}",
            "n for p<α": r.get("smallest_n") if r.get("smallest_n") is not None else "–",
            "calibrated": calibrated(r),
        }
        for r in rows
    ]
    cal = [
        {
            **r,
            "reference": r.get("reference") or "–",
            "rate [95% CI]": f"{r['rate']:.3f} [{r['rate_low']:.3f}, {r['rate_high']:.3f}]",
        }
        for r in calibration
    ]
    return (
        "\n## Dataset-level contamination tests\n\n"
        'A p-value per model for "this benchmark was in training". Dataset inference (Maini et al. 2024): the detectors\' '
        "scores as features, a logistic regression fitted on half of the suspect and validation sets, a one-sided Welch "
        f"t-test on the other half; {COMBINATION}. Validation `testbed`: the members are the suspect set, the non-members "
        "the validation set; `variants` (audit mode): the model's preference for each original over its variants minus "
        f"the reference's, one-sided paired permutation test. Exchangeability (Oren et al. 2023, `permutations`): shards of "
        "the benchmark in canonical order against seeded permutations of each, one-sided t-test across shards; it sees "
        "only contamination that kept the benchmark's order. A `sham-…` model is the sham control: trained as the target "
        "on the same mix with every member replaced by non-benchmark code, so it was fine-tuned but never saw the "
        'benchmark. "n for p<α": the smallest suspect-set size whose p-value '
        f"on the p-value-vs-n curve is below α = contamination.alpha = {alpha} and stays below it.\n\n"
        + markdown_table(
            table,
            [
                "model",
                "epoch",
                "ratio",
                "seed",
                "test",
                "validation",
                "reference",
                "n_suspect",
                "n_validation",
                "p",
                "n for p<α",
                "mean_difference",
                "calibrated",
            ],
        )
        + f"\n### Calibration under the null: false-positive rates (α = contamination.alpha = {alpha})\n\n"
        "The share of null draws with p < α over seeds, each seed a fresh random draw (Clopper-Pearson 95% CI); "
        '"within binomial margin" unless a one-sided exact binomial test rejects FPR = α at 5%. Seeds that re-split one '
        "set of samples are dependent, so the margin is a guide. The combination (2 x median) is conservative by "
        "design; `rate_one_split` is the rate of the first split's p-value alone, which is exact.\n\n"
        + markdown_table(
            [c for c in cal if c["kind"] == NULL],
            [
                "scenario",
                "model",
                "test",
                "reference",
                "n_seeds",
                "n_rejected",
                "rate [95% CI]",
                "binomial_p",
                "verdict",
                "rate_one_split",
            ],
        )
        + "\n### Power under exposure\n\n"
        "The same draws on a target's members: the share of seeds with p < α.\n\n"
        + markdown_table(
            [c for c in cal if c["kind"] == POWER],
            ["scenario", "model", "test", "reference", "n_seeds", "n_rejected", "rate [95% CI]", "rate_one_split"],
        )
    )


def read_scores(path: Path) -> list[dict]:
    """A scores table as long rows (sample_id, method, score): the pipeline's
    ``scores.parquet`` (long), or a wide table, Parquet or CSV, with a
    ``sample_id`` column and one numeric column per detector."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if not path.exists():
        raise InputError(str(path), None, "scores table does not exist")
    try:
        table = pacsv.read_csv(path) if path.suffix.lower() == ".csv" else pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as err:
        raise InputError(str(path), None, f"not a readable Parquet or CSV table: {err}") from None
    if "sample_id" not in table.column_names:
        raise InputError(str(path), None, f"no sample_id column (columns: {table.column_names})")
    ids = [str(s) for s in table.column("sample_id").to_pylist()]
    if {"method", "score"} <= set(table.column_names):
        return [
            {"sample_id": sid, "method": m, "score": s}
            for sid, m, s in zip(
                ids, table.column("method").to_pylist(), table.column("score").to_pylist(), strict=True
            )
        ]
    numeric = [
        name
        for name, kind in zip(table.column_names, table.schema.types, strict=True)
        if name != "sample_id" and (pa.types.is_floating(kind) or pa.types.is_integer(kind))
    ]
    if not numeric:
        raise InputError(str(path), None, "neither method/score columns nor numeric detector columns")
    return [
        {"sample_id": sid, "method": name, "score": None if v is None else float(v)}
        for name in numeric
        for sid, v in zip(ids, table.column(name).to_pylist(), strict=True)
    ]


def dataset_inference_tables(
    scores: Path,
    settings: DatasetInferenceCommand,
    seed: int,
    output: Path,
    *,
    name: str,
    validation_scores: Path | None = None,
    validation_ids: Path | None = None,
    reference_scores: Path | None = None,
    curve_output: Path | None = None,
) -> dict:
    """The ``dataset-inference`` command: one p-value for the samples of
    ``scores`` (the suspect set) against exactly one of a validation scores
    table, a list of the held-out ids among them, or a reference model's
    scores of the same samples (the variant-preference test)."""
    s = settings
    given = [p for p in (validation_scores, validation_ids, reference_scores) if p is not None]
    if len(given) != 1:
        raise InputError(
            "arguments", None, "give exactly one of --validation-scores, --validation-ids, --reference-scores"
        )
    exclude = set(s.dataset_inference.exclude_methods)
    suspect = score_lookup(read_scores(scores), exclude)
    suspect_ids = sorted(set().union(*suspect.values()))
    points: list[tuple[int, float]] = []
    try:
        if reference_scores is not None:
            row = run_preference(
                suspect,
                score_lookup(read_scores(reference_scores), exclude),
                suspect_ids,
                s.variant_preference,
                seed,
            ) | {"validation": VARIANTS, "reference": str(reference_scores)}
        else:
            if validation_scores is not None:
                validation = score_lookup(read_scores(validation_scores), exclude)
                validation_set = sorted(set().union(*validation.values()))
                kind = "validation scores"
            else:
                held = read_ids(validation_ids, suspect_ids)
                validation, validation_set = suspect, sorted(set(suspect_ids) & held)
                suspect_ids = sorted(set(suspect_ids) - held)
                kind = HELD_OUT
            row, points = dataset_inference_row(
                suspect, suspect_ids, validation, validation_set, s.dataset_inference, s.contamination_alpha, seed
            )
            row["validation"] = kind
    except ValueError as err:
        raise InputError(str(scores), None, str(err)) from None
    row = {"model": name, **row}
    write_table([row], P_VALUES_SCHEMA, output)
    if curve_output is not None:
        write_table(
            [{"model": name, "validation": row["validation"], "n": n, "p_value": p} for n, p in points],
            CURVE_SCHEMA,
            curve_output,
        )
    return row


def dataset_inference_command(
    scores: Path,
    output: Path,
    validation_scores: Path | None = None,
    validation_ids: Path | None = None,
    reference_scores: Path | None = None,
    name: str = "model",
    alpha: float = 0.05,
    n_splits: int = 11,
    curve_sizes: tuple[int, ...] = (8, 16, 24, 32, 48),
    curve_draws: int = 5,
    exclude: tuple[str, ...] = ("ref_oracle",),
    method: str = "neighbor",
    n_resamples: int = 999,
    seed: int = 0,
    curve: Path | None = None,
) -> None:
    """A dataset-level p-value on score tables a user brings.

    ``scores``: the suspect set's scores (leaktrace's scores.parquet, or
    Parquet/CSV with sample_id and one numeric column per detector), against
    exactly one of ``validation_scores``, ``validation_ids`` (held-out ids
    among them) or ``reference_scores`` (a reference model's scores, the
    variant-preference test with the detector ``method``). ``n_splits``
    random A/B splits, combined as 2 x median; ``exclude``: detectors not
    used as features. Prints the row's summary as JSON."""
    settings = DatasetInferenceCommand(
        contamination_alpha=alpha,
        dataset_inference=DatasetInferenceSettings(
            n_splits=n_splits, exclude_methods=exclude, curve_sizes=curve_sizes, curve_draws=curve_draws
        ),
        variant_preference=PreferenceSettings(method=method, n_resamples=n_resamples),
    )
    row = dataset_inference_tables(
        scores,
        settings,
        seed,
        output,
        name=name,
        validation_scores=validation_scores,
        validation_ids=validation_ids,
        reference_scores=reference_scores,
        curve_output=curve,
    )
    summary = ("model", "test", "validation", "n_suspect", "n_validation", "p_value", "smallest_n")
    print(json.dumps({k: row.get(k) for k in summary}))
