"""The blind baseline on the testbed's member / non-member split: the
check that the detectors' AUCs are not read off the texts alone.

The testbed's members and non-members are a random split of one benchmark,
so a text-only classifier (:mod:`leaktrace.calibration.blind_baseline`)
should sit near AUC 0.5 there; where it does not, the split is not random
(or the seed drew an unlucky one) and every detector's AUC carries that
difference. It is run on the evaluation fold's members against its
non-members (kept samples; ReCaLL's prefix samples are a fold of their own): the samples
every detector's AUC is measured on (``evaluate.detection``), so each
detector's AUC and the blind one are compared on the same samples and the
same bootstrap replicates (paired). The calibration fold is the conformal
control set and enters no AUC. Members are the positive class, as in the
detection table."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from leaktrace.calibration.blind_baseline import fold_mean_auc, table_row_and_scores

EVALUATION = "evaluation"

# Its out-of-fold scores (results/<run>/calibration/<benchmark>/blind_scores.parquet), one row per sample and repeat.
SCORES_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("member", pa.bool_()),
        ("repeat", pa.int32()),  # the cross-validation split (fold seed = seed + repeat)
        ("fold", pa.int32()),  # the fold whose fit scored the sample (its AUC is taken within the fold)
        ("score", pa.float64()),  # the logistic regression's decision value, fitted without the sample's fold
    ]
)


def evaluation_samples(samples: Sequence[dict]) -> list[tuple[str, bool]]:
    """(sample_id, is a member) of the evaluation fold's kept samples, sorted by id."""
    return sorted((s["sample_id"], s["split"] == "member") for s in samples if s["kept"] and s["fold"] == EVALUATION)


def split_blind_baseline(
    benchmark: str,
    samples: Sequence[dict],
    texts: dict[str, str],
    *,
    alpha: float,
    permutations: int,
    repeats: int,
    seed: int,
) -> tuple[dict, list[dict]]:
    """The blind baseline's table row (members as suspects, non-members as
    controls) and its out-of-fold scores of the evaluation fold."""
    chosen = evaluation_samples(samples)
    missing = [sid for sid, _ in chosen if sid not in texts]
    if missing:
        raise ValueError(f"{len(missing)} samples of the split are not in the benchmark's table, e.g. {missing[:3]}")
    documents, members = [texts[sid] for sid, _ in chosen], [member for _, member in chosen]
    row, fitted = table_row_and_scores(benchmark, documents, members, alpha, permutations, seed, repeats)
    if fitted is None:
        return row, []
    scores, fold_of = fitted
    return row, [
        {"sample_id": sid, "member": member, "repeat": r, "fold": int(fold_of[r, i]), "score": float(scores[r, i])}
        for r in range(repeats)
        for i, (sid, member) in enumerate(chosen)
    ]


def scores_by_sample(rows: Sequence[dict]) -> dict[str, list[tuple[float, int]]]:
    """sample_id -> its (out-of-fold score, fold) in each repeat, in repeat order."""
    out: dict[str, dict[int, tuple[float, int]]] = defaultdict(dict)
    for r in rows:
        out[r["sample_id"]][r["repeat"]] = (r["score"], r["fold"])
    return {sid: [by_repeat[k] for k in sorted(by_repeat)] for sid, by_repeat in out.items()}


def blind_auc(
    scores: np.ndarray, fold_of: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """The blind baseline's statistic on a set of samples: the mean over
    repeats of the mean within-fold AUC (``scores``, ``fold_of``: (repeats,
    n)), per row of ``weights`` (B, n), or a scalar without."""
    return np.mean([fold_mean_auc(s, f, labels, weights) for s, f in zip(scores, fold_of, strict=True)], axis=0)
