"""dose: the exposure-dose experiment's table (evaluate/dose.py), section
and figure (report/dose.py) from the dose models' scores and test results;
dose-order: the benchmark released in a randomised order
(data/published_order.py) that the experiment's order arm is trained on."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from leaktrace.artifacts import read_records, write_table
from leaktrace.calibration.sign_flip import paired_differences, sign_flip_test
from leaktrace.contamination.dataset_inference_row import dataset_inference_row
from leaktrace.data.published_order import published_order
from leaktrace.data.split import RECALL_PREFIX
from leaktrace.detect.registry import FAMILIES
from leaktrace.detect.scores import scores_by_method
from leaktrace.evaluate.dose import (
    DATASET_INFERENCE,
    EXCHANGEABILITY,
    PER_SAMPLE,
    TWIN,
    WATERMARK,
    per_sample_result,
    summarise,
)
from leaktrace.models.naming import dose_labels
from leaktrace.report.dose import dose_plot, render_section
from leaktrace.seeding import derive_seed, rng_for
from leaktrace.settings.dose import DoseSettings

log = logging.getLogger(__name__)

DOSE_SCHEMA = pa.schema(
    [
        ("test", pa.string()),
        ("method", pa.string()),  # the detector (per-sample and twin rows), else the test's features or ""
        ("copies", pa.int32()),  # k: copies of each member in the mix
        ("epochs", pa.int32()),  # passes over the mix (1; the top row: the default's last epoch)
        ("n_seeds", pa.int32()),
        ("n_tested", pa.int32()),  # seeds with a p-value
        ("n_detected", pa.int32()),  # of them with p <= alpha
        ("detection_rate", pa.float64()),
        ("rate_ci_low", pa.float64()),  # Wilson, n = seeds tested
        ("rate_ci_high", pa.float64()),
        ("median_p", pa.float64()),
        ("tpr_mean", pa.float64()),  # per-sample detectors: TPR at `fpr` FPR, mean over seeds
        ("tpr_ci_low", pa.float64()),  # Wilson over the flagged members of every seed
        ("tpr_ci_high", pa.float64()),
        ("auc_mean", pa.float64()),
        ("auc_min", pa.float64()),  # the seeds' range (not an interval)
        ("auc_max", pa.float64()),
        ("blind_auc", pa.float64()),  # the testbed's blind baseline beside each detector, where its row was given
        ("blind_ci_low", pa.float64()),
        ("blind_ci_high", pa.float64()),
        ("blind_p", pa.float64()),
        ("smallest_copies", pa.int32()),  # the smallest one-pass k detected in >= power of the seeds; null: none
        ("alpha", pa.float64()),
        ("fpr", pa.float64()),
        ("power", pa.float64()),
    ]
)


def dose_order(benchmark: Path, seed: int, output: Path) -> None:
    """The benchmark table's rows in a seeded random order, schema kept (the release the order arm trains on)."""
    table = pq.read_table(benchmark)
    order = published_order(range(table.num_rows), rng_for(seed, "dose-order"))
    pq.write_table(table.take(order), output)
    log.info("dose-order: %d rows of %s in a random published order", table.num_rows, benchmark)


def _evaluated(samples: Path) -> dict[str, tuple[bool, str]]:
    """sample_id -> (member, fold) over the evaluated samples."""
    records = read_records(samples, ["sample_id", "kept", "split", "fold"])
    return {
        r["sample_id"]: (r["split"] == "member", r["fold"]) for r in records if r["kept"] and r["fold"] != RECALL_PREFIX
    }


def _ids(split: dict, family: str, scored: dict[str, float], *others: dict[str, float]) -> list[str]:
    """The samples a detector is evaluated on: the evaluation fold only for one fitted on labels."""
    fitted = FAMILIES[family].label_fitted if family in FAMILIES else False
    return [
        sid
        for sid, (_, fold) in sorted(split.items())
        if (not fitted or fold == "evaluation") and sid in scored and all(sid in o for o in others)
    ]


def _dose(model: str) -> dict:
    arm, _, copies, seed, epochs = dose_labels(model)
    return {"arm": arm, "copies": copies, "seed": seed, "epochs": epochs}


def target_results(split: dict, scores: Mapping[str, Path], settings: DoseSettings, seed: int) -> list[dict]:
    """Per-sample detectors and dataset inference of each dose model of the members' arm."""
    members = sorted(s for s, (m, _) in split.items() if m)
    non_members = sorted(s for s, (m, _) in split.items() if not m)
    di = settings.dataset_inference
    results = []
    for model, path in scores.items():
        dose = _dose(model)
        lookup, families = scores_by_method(path)
        for method, family in families.items():
            ids = _ids(split, family, lookup[method])
            inside = [lookup[method][s] for s in ids if split[s][0]]
            outside = [lookup[method][s] for s in ids if not split[s][0]]
            if not inside or not outside:
                log.warning("%s: %s scored no member or no non-member; left out", model, method)
                continue
            results.append(
                {"test": PER_SAMPLE, "method": method, **dose, **per_sample_result(inside, outside, settings.fpr)}
            )
        features, _ = scores_by_method(path, set(di.exclude_methods))
        row, _ = dataset_inference_row(
            features,
            members,
            features,
            non_members,
            di,
            settings.alpha,
            derive_seed(seed, "dose", "dataset-inference", model),
            curve=False,
        )
        results.append({"test": DATASET_INFERENCE, "method": "", **dose, "p_value": row["p_value"]})
    return results


def twin_results(split: dict, targets: Mapping[str, Path], twins: Mapping[str, Path], seed: int) -> list[dict]:
    """The sign-flip test of each detector for each dose's (members' model,
    twin) pair of the same dose and seed: d = s_seen - s_unseen."""
    by_dose = {(d["copies"], d["seed"], d["epochs"]): m for m in targets for d in [_dose(m)]}
    results = []
    for twin, path in twins.items():
        dose = _dose(twin)
        target = by_dose.get((dose["copies"], dose["seed"], dose["epochs"]))
        if target is None:
            raise ValueError(f"twin {twin} has no members' model of its dose and seed among {sorted(targets)}")
        seen_scores, families = scores_by_method(targets[target])
        twin_scores, _ = scores_by_method(path)
        for method, family in families.items():
            if method not in twin_scores:
                continue
            ids = _ids(split, family, seen_scores[method], twin_scores[method])
            if not ids:
                continue
            seen = {s: (seen_scores if split[s][0] else twin_scores)[method][s] for s in ids}
            unseen = {s: (twin_scores if split[s][0] else seen_scores)[method][s] for s in ids}
            test = sign_flip_test(
                paired_differences(seen, unseen, ids), seed=derive_seed(seed, "dose", "twin", twin, method)
            )
            results.append({"test": TWIN, "method": method, **dose, "p_value": test.p_value})
    return results


def single_p_results(test: str, results: Mapping[str, Path]) -> list[dict]:
    """The watermark's or the exchangeability test's one p-value per model (None: could not run)."""
    rows = []
    for model, path in results.items():
        (row,) = read_records(path, ["p_value"])
        rows.append({"test": test, "method": "", **_dose(model), "p_value": row["p_value"]})
    return rows


def blind_row(paths: list[Path]) -> dict | None:
    """The testbed's blind-baseline row (calibration/blind_baseline.py's table), if given."""
    rows = [r for path in paths for r in read_records(path) if r.get("auc") is not None]
    if len(rows) > 1:
        raise ValueError(f"{len(rows)} blind-baseline rows given for one benchmark; expected one")
    return rows[0] if rows else None


def dose_table(
    samples: Path,
    scores: Mapping[str, Path],
    settings: DoseSettings,
    seed: int,
    output_dir: Path,
    twins: Mapping[str, Path] | None = None,
    watermark: Mapping[str, Path] | None = None,
    exchangeability: Mapping[str, Path] | None = None,
    blind: tuple[Path, ...] = (),
) -> None:
    """Write the exposure-dose experiment's table dose.parquet, its section
    dose.md and its figure dose.png to ``output_dir``.

    ``scores``: each dose model of the members' arm -> its scores.parquet;
    ``twins``: each dose twin -> its scores.parquet; ``watermark``: each
    watermark-arm model -> its rank-test result; ``exchangeability``: each
    order-arm model -> its exchangeability result; ``blind``: the testbed's
    blind-baseline row file."""
    split = _evaluated(samples)
    results = (
        target_results(split, scores, settings, seed)
        + twin_results(split, scores, twins or {}, seed)
        + single_p_results(WATERMARK, watermark or {})
        + single_p_results(EXCHANGEABILITY, exchangeability or {})
    )
    rows = summarise(results, alpha=settings.alpha, power=settings.power)
    baseline = blind_row(list(blind))
    extra = {"alpha": settings.alpha, "fpr": settings.fpr, "power": settings.power}
    for row in rows:
        per_sample = row["test"] == PER_SAMPLE and baseline is not None
        row.update(
            extra,
            blind_auc=baseline["auc"] if per_sample else None,
            blind_ci_low=baseline["ci_low"] if per_sample else None,
            blind_ci_high=baseline["ci_high"] if per_sample else None,
            blind_p=baseline["p_value"] if per_sample else None,
        )
    write_table(rows, DOSE_SCHEMA, output_dir / "dose.parquet")
    (output_dir / "dose.md").write_text(render_section(rows, settings, baseline))
    dose_plot(rows, settings.alpha, output_dir / "dose.png")
    log.info(
        "dose: %d rows (%d tests x doses) from %d seeds' results",
        len(rows),
        len({(r["test"], r["method"]) for r in rows}),
        len(results),
    )
