"""calibration: the calibration table's rows of the per-sample detectors and
of dataset inference, from the score tables and the learned detectors'
features alone (no forward pass). ``conformal_calibration``: the two checks
of the conformal decisions (``calibration.conformal_checks``) for every
detector under every given model; ``membership_calibration``: dataset
inference on re-randomised memberships under the unexposed models
(``calibration.membership``). Each writes a row file of
``calibration.table`` for the aggregate's calibration table."""

from __future__ import annotations

import dataclasses
import logging
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from leaktrace.artifacts import read_records
from leaktrace.calibration.conformal_checks import (
    Refit,
    calibration_fold_rows,
    refitted_repartitioned_rows,
    repartitioned_rows,
)
from leaktrace.calibration.membership import membership_rows
from leaktrace.calibration.table import write_rows
from leaktrace.contamination.features import score_lookup
from leaktrace.data.split import RECALL_PREFIX
from leaktrace.detect.dpdllm import DpdllmFitter
from leaktrace.detect.dpdllm import feature_matrix as dpdllm_features
from leaktrace.detect.registry import family_params
from leaktrace.detect.scores import read_scores
from leaktrace.detect.veilprobe import veilprobe_fitter
from leaktrace.seeding import derive_seed
from leaktrace.settings.calibration import ConformalSettings, MembershipSettings

log = logging.getLogger(__name__)

LEARNED = ("dpdllm", "veilprobe")


def read_split(samples: Path) -> dict[str, tuple[bool, str]]:
    """sample_id -> (member, fold) of the kept samples of the split (ReCaLL's prefix left out)."""
    return {
        r["sample_id"]: (r["split"] == "member", r["fold"])
        for r in read_records(samples, ["sample_id", "kept", "split", "fold"])
        if r["kept"] and r["fold"] != RECALL_PREFIX
    }


def refit_of(
    family: str, features: Path, settings: ConformalSettings | MembershipSettings, seed: int
) -> tuple[Refit, list[str]]:
    """A learned detector's refit from its features file, and the sample ids of its positions."""
    rows = read_records(features)
    ids = [r["sample_id"] for r in rows]
    folds = settings.cross_fit_folds
    if family == "dpdllm":
        return Refit(DpdllmFitter(dpdllm_features(rows)), len(ids), folds), ids
    if family == "veilprobe":
        veilprobe = settings.veilprobe
        params = family_params("veilprobe", None if veilprobe is None else dataclasses.asdict(veilprobe))
        return Refit(veilprobe_fitter(rows, params, seed), len(ids), folds, params["labelled_fraction"]), ids
    raise ValueError(f"no refit for {family!r}; learned detectors: {LEARNED}")


def _by_method(scores: Path) -> dict[str, dict[str, dict]]:
    by_method: dict[str, dict[str, dict]] = defaultdict(dict)
    for row in read_scores(scores):
        if row["score"] is not None and np.isfinite(row["score"]):
            by_method[row["method"]][row["sample_id"]] = row
    return by_method


def conformal_calibration(
    samples: Path,
    scores: Mapping[str, Path],
    settings: ConformalSettings,
    seed: int,
    output: Path,
    learned: Mapping[tuple[str, str], Path] | None = None,
) -> None:
    """The calibration table's rows of the conformal decisions: checks (a)
    and (b) of every detector under every model of ``scores``.

    ``learned``: (model, family) -> the learned detector's features, which
    check (b) refits in every partition. A learned detector whose features
    are not given is checked on its deployed scores only (check (a))."""
    torch.set_num_threads(1)
    learned = learned or {}
    alphas, repartitions = settings.alphas, settings.repartitions
    split = read_split(samples)
    rows = []
    for model, path in scores.items():
        methods = _by_method(path)
        # progress in the job's log, with the time left: the refits of the learned detectors are most of it
        for method, by_sample in tqdm(
            methods.items(), total=len(methods), desc=f"conformal checks under {model}", unit="detector", mininterval=10
        ):
            scored = [s for s in sorted(split) if s in by_sample]
            non_members = [s for s in scored if not split[s][0]]
            controls = [s for s in non_members if split[s][1] == "calibration"]
            tested = [s for s in non_members if split[s][1] == "evaluation"]
            if not controls or not tested:
                log.warning(
                    "%s under %s: %d controls, %d tested non-members; not checked",
                    method,
                    model,
                    len(controls),
                    len(tested),
                )
                continue
            key = derive_seed(seed, "calibration", model, method)
            rows += calibration_fold_rows(method, model, by_sample, controls, tested, alphas)
            if method in LEARNED:
                if (model, method) not in learned:
                    log.warning(
                        "%s under %s: no features given, so the re-partitioned check (which refits it) is left out",
                        method,
                        model,
                    )
                    continue
                refit, ids = refit_of(method, learned[(model, method)], settings, seed)
                at = {s: i for i, s in enumerate(ids)}
                members = np.array(
                    [at[s] for s in sorted(split) if s in at and split[s][0] and split[s][1] == "calibration"]
                )
                pool = np.array([at[s] for s in non_members if s in at])
                n_control = sum(s in at for s in controls)
                rows += refitted_repartitioned_rows(
                    method, model, refit, members, pool, n_control, repartitions, alphas, key
                )
            else:
                values = np.array([by_sample[s]["score"] for s in non_members], dtype=float)
                rows += repartitioned_rows(method, model, values, len(controls), repartitions, alphas, key)
        log.info("conformal checks under %s: %d rows so far", model, len(rows))
    write_rows(rows, output)


def membership_calibration(
    samples: Path,
    scores: Mapping[str, Path],
    settings: MembershipSettings,
    seed: int,
    output: Path,
    learned: Mapping[tuple[str, str], Path] | None = None,
) -> None:
    """The calibration table's rows of dataset inference on re-randomised
    memberships under every model of ``scores`` (the unexposed ones).

    Its learned features (``learned``: (model, family) -> features) are
    refitted in every draw. A learned detector scored under a model without
    its features given is left out of the features, never used with the
    labels it was fitted on."""
    torch.set_num_threads(1)
    learned, di = learned or {}, settings.dataset_inference
    split = read_split(samples)
    rows = []
    for model, path in tqdm(
        scores.items(), total=len(scores), desc="re-randomised memberships", unit="model", mininterval=10
    ):
        records = read_scores(path, ["sample_id", "method", "score", "fold_scores"])
        fitted = {r["method"] for r in records if r["fold_scores"] is not None}
        exclude = set(di.exclude_methods) | fitted
        lookup = score_lookup(records, exclude)
        refits = {
            family: refit_of(family, features, settings, seed)
            for (m, family), features in learned.items()
            if m == model and family not in di.exclude_methods
        }
        left_out = sorted(fitted - set(refits))
        if left_out:
            log.warning(
                "%s: learned detectors %s without features to refit are left out of dataset inference's null",
                model,
                ", ".join(left_out),
            )
        rows += membership_rows(
            model,
            lookup,
            split,
            refits,
            di,
            settings.alphas,
            settings.memberships,
            derive_seed(seed, "membership", model),
        )
        log.info("re-randomised memberships under %s done", model)
    write_rows(rows, output)
