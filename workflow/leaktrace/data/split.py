"""SrDetection's controlled testbed split: the pre-exposure filter, then a
seeded 1:1 member / non-member split, and within each class a calibration
fold (for choosing the thresholds of threshold-based baselines) disjoint from
the evaluation fold. The filter is judged before the split, on the detectors'
own variants under the base model, as the paper's (Sec. 3.2): with
``pre_exposure: remove`` a flagged sample leaves the split; with ``mark`` it
stays, flagged, and the split is drawn within the cleared and the flagged
samples apart, so the cleared ones are split 1:1 as the paper's remaining
samples are. ReCaLL's prefix texts are non-members held out before
the split (fold ``recall-prefix``): never trained on, never evaluated. The complement twin's split swaps the
two classes of the split and keeps every fold (``complement``)."""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

# filter.split.pre_exposure: judge the filter and keep flagged samples in the split, marked (split within
# cleared and flagged apart); judge it and drop flagged samples before the split (the paper's); or not judge it
PRE_EXPOSURE_MODES = ("mark", "remove", False)
PRE_EXPOSED = "pre-exposure"  # the reason of a flagged sample, and of one the filter removed

# The split's table (``filter/{benchmark}.samples.parquet``; the twin's has its columns): every sample, in it or why not
SAMPLES_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("kept", pa.bool_()),  # eligible and in the member / non-member split
        ("reason", pa.string()),  # why a sample is not in the split
        ("split", pa.string()),
        ("fold", pa.string()),
        # SrDetection's pre-exposure filter, judged before the split on the
        # detectors' own variants (kind "rename") under the base model, as the
        # paper's: true where the original beats every one of them. With
        # pre_exposure "mark" a flagged sample stays in the split (the filtered
        # protocol leaves it out); with "remove" it leaves the split (reason
        # "pre-exposure: ..."). False for every eligible sample with the filter
        # off; null for an ineligible one.
        ("pre_exposed", pa.bool_()),
        ("pre_exposure", pa.string()),  # the filter's reason when it flags
        ("original_loss", pa.float64()),
        ("min_variant_loss", pa.float64()),  # the lowest loss among the detector variants, under the base model
        ("n_valid_variants", pa.int32()),  # detector variants
    ]
)


def pre_exposure(original_loss: float, variant_losses: Sequence[float]) -> tuple[bool, str | None]:
    """SrDetection (Sec. 3.2): "removing any sample whose original form was
    already the easiest (lowest PPL) among its variants" under the base
    model, since the testbed could not tell its later exposure from prior
    exposure. (flagged, reason). The variants are the detectors' own, so an
    eligible sample always has at least one; none is an error, not a verdict."""
    if not variant_losses:
        raise ValueError("the pre-exposure filter needs at least one valid variant to compare the original with")
    if original_loss < min(variant_losses):
        return (
            True,
            f"{PRE_EXPOSED}: original has the lowest PPL among {len(variant_losses)} variants under the base model",
        )
    return False, None


@dataclass(frozen=True)
class Assignment:
    split: str  # "member" | "non-member"
    fold: str  # "calibration" | "evaluation" | "recall-prefix"


RECALL_PREFIX = "recall-prefix"


def assign_splits(
    sample_ids: Sequence[str],
    *,
    member_fraction: float,
    calibration_fraction: float,
    rng: random.Random,
    recall_prefix: int = 0,
    strata: Mapping[str, Hashable] | None = None,
) -> dict[str, Assignment]:
    """``recall_prefix`` samples are held out first as non-members of fold
    ``recall-prefix``; the rest are split ``member_fraction`` : rest, and each
    class into calibration and evaluation folds. With ``strata`` (sample ->
    stratum, e.g. the pre-exposure flag) each stratum is split so on its own,
    in the one seeded order, so every stratum keeps the member fraction; without, one stratum."""
    if not 0 < member_fraction < 1:
        raise ValueError(f"member_fraction must be in (0, 1), got {member_fraction}")
    if not 0 <= calibration_fraction < 1:
        raise ValueError(f"calibration_fraction must be in [0, 1), got {calibration_fraction}")
    ids = sorted(sample_ids)
    rng.shuffle(ids)
    if not 0 <= recall_prefix <= len(ids) - 2:
        raise ValueError(
            f"cannot hold out {recall_prefix} of {len(ids)} samples for ReCaLL's prefix and still split the rest"
        )
    if strata is not None and (missing := [sid for sid in ids if sid not in strata]):
        raise ValueError(f"{len(missing)} samples have no stratum, e.g. {missing[0]!r}")
    result: dict[str, Assignment] = {sid: Assignment("non-member", RECALL_PREFIX) for sid in ids[:recall_prefix]}
    ids = ids[recall_prefix:]
    groups: dict[Hashable, list[str]] = {}
    for sid in ids:
        groups.setdefault(None if strata is None else strata[sid], []).append(sid)
    for stratum in sorted(groups, key=repr):
        group_ids = groups[stratum]
        n_members = round(len(group_ids) * member_fraction)
        for split, group in (("member", group_ids[:n_members]), ("non-member", group_ids[n_members:])):
            n_cal = math.floor(len(group) * calibration_fraction)
            for k, sid in enumerate(group):
                result[sid] = Assignment(split, "calibration" if k < n_cal else "evaluation")
    return result


SWAPPED = {"member": "non-member", "non-member": "member"}


def complement(split: str | None, fold: str | None) -> str | None:
    """The class a sample has for the complement twin, trained on the
    target's non-members: members and non-members swapped, folds kept;
    ReCaLL's prefix samples (and samples outside the split) unchanged, so
    neither model trains on the prefix."""
    if split is None or fold == RECALL_PREFIX:
        return split
    if split not in SWAPPED:
        raise ValueError(f"unknown split {split!r}; known: {sorted(SWAPPED)}")
    return SWAPPED[split]
