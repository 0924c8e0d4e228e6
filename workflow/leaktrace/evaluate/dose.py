"""The exposure-dose table: for each dose (each member's copies k in the
training mix, the passes over it) and each test, how often the test detects
exposure over training seeds, and the smallest dose it detects in at least
``power`` of the seeds. A reader of a "no evidence" verdict needs exactly
this: how much exposure the tests that ran could have seen.

One row per (test, method, copies, epochs). Every test gives one p-value per
seed, and "detects at a seed" means p <= alpha:

* per-sample detectors: the one-sided Mann-Whitney p of members' scores
  above non-members' (valid by design: the split is a seeded random draw),
  beside the TPR at ``fpr`` FPR and the AUC of that seed;
* dataset-level tests: dataset inference, the complement twin's sign-flip
  test, the randomized publication's rank test, the exchangeability test of a
  randomised published order: the p-values their own modules compute.

The detection rate over seeds gets a Wilson interval (n = seeds); the TPR
pools the flagged members of every seed (Wilson, n = members x seeds, the
seeds' spread left out); the AUC is the seeds' mean with their range, not an
interval (three seeds do not make one)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from scipy.stats import mannwhitneyu

from leaktrace.evaluate.metrics import roc_auc, tpr_at_fpr
from leaktrace.evaluate.proportions import wilson_interval

PER_SAMPLE = "per-sample detector"
DATASET_INFERENCE = "dataset inference"
TWIN = "twin sign-flip"
WATERMARK = "watermark rank test"
EXCHANGEABILITY = "exchangeability"
TESTS = (PER_SAMPLE, DATASET_INFERENCE, TWIN, WATERMARK, EXCHANGEABILITY)


def per_sample_result(member_scores: Sequence[float], non_member_scores: Sequence[float], fpr: float) -> dict:
    """One seed of one detector: AUC, TPR at ``fpr`` (with the flagged
    members' count) and the one-sided Mann-Whitney p of members above
    non-members."""
    members = np.asarray(member_scores, dtype=float)
    others = np.asarray(non_member_scores, dtype=float)
    if members.size == 0 or others.size == 0:
        raise ValueError(f"a per-sample detector needs members and non-members, got {members.size} and {others.size}")
    labels = np.r_[np.ones(members.size, bool), np.zeros(others.size, bool)]
    scores = np.r_[members, others]
    tpr = tpr_at_fpr(labels, scores, fpr)
    p = float(mannwhitneyu(members, others, alternative="greater", method="auto").pvalue)
    return {
        "p_value": p,
        "auc": float(roc_auc(labels, scores)),
        "tpr": None if math.isnan(tpr) else tpr,
        "n_flagged": None if math.isnan(tpr) else int(round(tpr * members.size)),
        "n_members": int(members.size),
    }


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def summarise(results: Sequence[dict], *, alpha: float, power: float) -> list[dict]:
    """``results``: one dict per (test, method, copies, epochs, seed) with
    its ``p_value`` (None: the test could not run at that seed) and, for
    per-sample detectors, ``auc``/``tpr``/``n_flagged``/``n_members``. One
    row per (test, method, copies, epochs), with each (test, method)'s
    smallest one-pass dose detected in at least ``power`` of its seeds."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in results:
        if r["test"] not in TESTS:
            raise ValueError(f"unknown test {r['test']!r}; one of {TESTS}")
        groups[(r["test"], r["method"], r["copies"], r["epochs"])].append(r)
    rows = []
    for (test, method, copies, epochs), seeds in groups.items():
        ps = [r["p_value"] for r in seeds if r["p_value"] is not None]
        detected = sum(p <= alpha for p in ps)
        low, high = wilson_interval(detected, len(ps)) if ps else (None, None)
        row = {
            "test": test,
            "method": method,
            "copies": copies,
            "epochs": epochs,
            "n_seeds": len(seeds),
            "n_tested": len(ps),
            "n_detected": detected,
            "detection_rate": detected / len(ps) if ps else None,
            "rate_ci_low": low,
            "rate_ci_high": high,
            "median_p": float(np.median(ps)) if ps else None,
            "tpr_mean": None,
            "tpr_ci_low": None,
            "tpr_ci_high": None,
            "auc_mean": None,
            "auc_min": None,
            "auc_max": None,
        }
        if test == PER_SAMPLE:
            tprs = [r for r in seeds if r.get("tpr") is not None]
            aucs = [r["auc"] for r in seeds if r.get("auc") is not None and not math.isnan(r["auc"])]
            if tprs:
                flagged, members = sum(r["n_flagged"] for r in tprs), sum(r["n_members"] for r in tprs)
                row["tpr_mean"] = _mean([r["tpr"] for r in tprs])
                row["tpr_ci_low"], row["tpr_ci_high"] = wilson_interval(flagged, members)
            if aucs:
                row.update(auc_mean=_mean(aucs), auc_min=min(aucs), auc_max=max(aucs))
        rows.append(row)
    smallest = smallest_copies(rows, power)
    for row in rows:
        row["smallest_copies"] = smallest.get((row["test"], row["method"]))
    return sorted(rows, key=lambda r: (TESTS.index(r["test"]), r["method"], r["epochs"], r["copies"]))


def smallest_copies(rows: Sequence[dict], power: float) -> dict[tuple[str, str], int]:
    """(test, method) -> the smallest k of the one-pass doses whose detection
    rate is at least ``power`` (absent where none is)."""
    found: dict[tuple[str, str], int] = {}
    for row in sorted(rows, key=lambda r: r["copies"]):
        key = (row["test"], row["method"])
        if (
            row["epochs"] == 1
            and key not in found
            and row["detection_rate"] is not None
            and row["detection_rate"] >= power
        ):
            found[key] = row["copies"]
    return found
