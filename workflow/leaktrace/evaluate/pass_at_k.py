"""LessLeak-Bench's RQ3: pass@k on the leaked and the non-leaked part of a
benchmark, and their ratio.

pass@k is the unbiased estimator of Chen et al. (2021, "Evaluating Large
Language Models Trained on Code"): with n samples of a problem, c of them
correct, 1 - C(n - c, k) / C(n, k), averaged over problems. Intervals: a
percentile bootstrap over problems, drawn within each part (its size kept),
the ratio taken per replicate.
"""

from __future__ import annotations

import numpy as np
from scipy.special import comb

from leaktrace.evaluate.bootstrap import percentile_interval


def pass_at_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Per problem, the chance that at least one of k of its n samples is
    correct; NaN where n < k (not estimable)."""
    n, c = np.asarray(n, dtype=int), np.asarray(c, dtype=int)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = 1.0 - comb(n - c, k, exact=False) / comb(n, k, exact=False)
    return np.where(n >= k, value, np.nan)


def leaked_pass_rows(
    n: np.ndarray, c: np.ndarray, leaked: np.ndarray, ks: list[int], *, n_resamples: int, rng: np.random.Generator
) -> list[dict]:
    """One row per k: pass@k of the leaked and of the non-leaked problems
    with intervals, and leaked / non-leaked (null where the non-leaked
    pass@k is 0 or a part is empty)."""
    leaked = np.asarray(leaked, dtype=bool)
    parts = {"leaked": np.flatnonzero(leaked), "non_leaked": np.flatnonzero(~leaked)}
    draws = {
        name: rows[rng.integers(0, rows.size, (n_resamples, rows.size))] for name, rows in parts.items() if rows.size
    }
    rows = []
    for k in ks:
        per_problem = pass_at_k(n, c, k)
        row = {"k": k, "n_leaked": int(parts["leaked"].size), "n_non_leaked": int(parts["non_leaked"].size)}
        replicates = {}
        for name, idx in parts.items():
            point = float(per_problem[idx].mean()) if idx.size else float("nan")
            replicates[name] = per_problem[draws[name]].mean(axis=-1) if idx.size else np.full(n_resamples, np.nan)
            low, high = percentile_interval(replicates[name])
            row |= {name: point, f"{name}_low": float(low), f"{name}_high": float(high)}
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = replicates["leaked"] / replicates["non_leaked"]
        finite = ratio[np.isfinite(ratio)]
        point = row["leaked"] / row["non_leaked"] if row["non_leaked"] > 0 else float("nan")
        low, high = percentile_interval(finite) if finite.size else (float("nan"), float("nan"))
        row |= {
            "ratio": point,
            "ratio_low": float(low),
            "ratio_high": float(high),
            "ratio_replicates": int(finite.size),
        }  # replicates whose non-leaked pass@k is above 0
        rows.append({key: None if isinstance(v, float) and np.isnan(v) else v for key, v in row.items()})
    return rows
