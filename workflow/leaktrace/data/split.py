"""SrDetection's controlled testbed split: the pre-exposure filter, then a
seeded 1:1 member / non-member split, and within each class a calibration
fold (for choosing the thresholds of threshold-based baselines) disjoint from
the evaluation fold. ReCaLL's prefix texts are non-members held out before
the split (fold ``recall-prefix``): never trained on, never evaluated."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass


UNKNOWN = "unknown: no valid filter variant to compare against"


def pre_exposure(original_loss: float, variant_losses: Sequence[float]) -> tuple[bool | None, str | None]:
    """SrDetection (Sec. 4.1): drop a sample whose original form is already the
    easiest (lowest PPL) among its variants under the base model, since the
    testbed could not tell its later exposure from prior exposure. (flagged,
    reason): a sample without a valid variant to compare with is unknown
    (None), not pre-exposed: missing evidence is not exposure."""
    if not variant_losses:
        return None, UNKNOWN
    if original_loss < min(variant_losses):
        return True, f"pre-exposure: original has the lowest PPL among {len(variant_losses)} variants under the base model"
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
) -> dict[str, Assignment]:
    """``recall_prefix`` samples are held out first as non-members of fold
    ``recall-prefix``; the rest are split ``member_fraction`` : rest, and each
    class into calibration and evaluation folds."""
    if not 0 < member_fraction < 1:
        raise ValueError(f"member_fraction must be in (0, 1), got {member_fraction}")
    if not 0 <= calibration_fraction < 1:
        raise ValueError(f"calibration_fraction must be in [0, 1), got {calibration_fraction}")
    ids = sorted(sample_ids)
    rng.shuffle(ids)
    if not 0 <= recall_prefix <= len(ids) - 2:
        raise ValueError(f"cannot hold out {recall_prefix} of {len(ids)} samples for ReCaLL's prefix and still split the rest")
    result: dict[str, Assignment] = {sid: Assignment("non-member", RECALL_PREFIX) for sid in ids[:recall_prefix]}
    ids = ids[recall_prefix:]
    n_members = round(len(ids) * member_fraction)
    for split, group in (("member", ids[:n_members]), ("non-member", ids[n_members:])):
        n_cal = math.floor(len(group) * calibration_fraction)
        for k, sid in enumerate(group):
            result[sid] = Assignment(split, "calibration" if k < n_cal else "evaluation")
    return result
