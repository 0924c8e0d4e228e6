"""The sign-flip (paired permutation) test of the complement twin.

The target is trained on the members, its twin on the non-members (same
ratio, epochs, seed and LoRA settings), so each evaluated sample x_i was
seen by exactly one of the two. Per sample, d_i = s_seen(x_i) - s_unseen(x_i):
a detector's score under the model that trained on x_i minus its score under
the model that did not. Which half of the split x_i fell in was a fair coin
of the seeded split, so if a detector does not respond to exposure each d_i
is symmetric about 0. The statistic is T = sum d_i and the one-sided p-value
counts the sign vectors e in {-1, +1}^n with sum e_i |d_i| >= T: exactly, by
enumerating all 2^n of them, for n <= ``EXACT_MAX``; otherwise over
``RESAMPLES`` random sign vectors, p = (1 + #>=) / (R + 1), which keeps the
test valid (Phipson & Smyth 2010). scipy's ``permutation_test`` does the
counting (one sample with ``permutation_type="samples"`` flips signs)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import permutation_test

EXACT_MAX = 20  # up to this many pairs every sign vector is enumerated (2^20 of them)
RESAMPLES = 10_000  # random sign vectors beyond that


@dataclass(frozen=True)
class SignFlip:
    n: int  # pairs
    statistic: float  # T = sum of d_i
    mean_difference: float  # T / n
    p_value: float  # one-sided: the seen model scores higher
    exact: bool  # every sign vector enumerated (else RESAMPLES random ones)
    n_sign_vectors: int  # 2^n when exact, else RESAMPLES


def _total(d: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.sum(d, axis=axis)


def sign_flip_test(
    differences: Sequence[float], *, seed: int, resamples: int = RESAMPLES, exact_max: int = EXACT_MAX
) -> SignFlip:
    """One-sided sign-flip test of ``differences`` (d_i = seen - unseen);
    ``seed`` drives the random sign vectors when n > ``exact_max``."""
    d = np.asarray(differences, dtype=float)
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"the sign-flip test needs a non-empty list of paired differences, got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError(f"{int(np.sum(~np.isfinite(d)))} paired differences are not finite")
    exact = d.size <= exact_max
    result = permutation_test(
        (d,),
        _total,
        permutation_type="samples",
        alternative="greater",
        vectorized=True,
        n_resamples=np.inf if exact else resamples,
        random_state=np.random.default_rng(seed),
    )
    return SignFlip(
        n=int(d.size),
        statistic=float(d.sum()),
        mean_difference=float(d.mean()),
        p_value=float(result.pvalue),
        exact=exact,
        n_sign_vectors=2 ** int(d.size) if exact else resamples,
    )


def paired_differences(seen: dict[str, float], unseen: dict[str, float], sample_ids: Sequence[str]) -> np.ndarray:
    """d_i = seen[x_i] - unseen[x_i] over ``sample_ids`` (each must be in both)."""
    missing = [sid for sid in sample_ids if sid not in seen or sid not in unseen]
    if missing:
        raise ValueError(
            f"{len(missing)} samples lack a score under the model that saw them or the one that did not, "
            f"e.g. {missing[:3]}"
        )
    return np.array([seen[sid] - unseen[sid] for sid in sample_ids], dtype=float)
