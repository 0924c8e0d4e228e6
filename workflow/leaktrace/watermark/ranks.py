"""The rank test of a randomized publication and its exact null distribution.

Problem i has m_i forms, one published uniformly at random, independently
of everything a model that never saw the release could do. Rank the forms
by the model's loss (rank 1 = lowest loss, ties with the published form
broken uniformly at random): the published form's rank R_i is uniform on
{1, ..., m_i}, so the per-problem p-value R_i / m_i is exact. The
benchmark-level statistic S = sum R_i is a sum of independent discrete
uniforms; its distribution is the convolution of their probability mass
functions, and the p-value P(S <= s) is exact (in floating point) for any
mix of m_i. A model that saw the release ranks its published forms low, so
small S is the evidence. Where the convolution would cost more than
``EXACT_MAX_OPERATIONS`` multiply-adds (tens of thousands of problems), the
p-value is a normal approximation with a continuity correction, and says
so. A problem with one form has R = 1 always and carries no information:
it is left out."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

EXACT, NORMAL = "exact convolution", "normal approximation"
EXACT_MAX_OPERATIONS = 2e9  # a second or two of numpy: a benchmark of several thousand problems is exact


def published_rank(losses: Sequence[float], published: int, rng: random.Random) -> int:
    """The published form's rank among ``losses`` (1 = lowest), a tie broken uniformly at random."""
    values = np.asarray(losses, dtype=float)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"losses must be finite, got {list(losses)}")
    own = values[published]
    below = int(np.sum(values < own))
    tied = int(np.sum(values == own)) - 1
    return 1 + below + rng.randint(0, tied)


def _operations(sizes: Sequence[int]) -> float:
    """Multiply-adds of the direct convolution, one problem at a time."""
    length, total = 1, 0.0
    for m in sizes:
        total += length * m
        length += m - 1
    return total


def rank_sum_pmf(sizes: Sequence[int]) -> np.ndarray:
    """P(S = len(sizes) + k) for k = 0, 1, ...: the convolution of the uniforms on {1..m}, m in ``sizes``."""
    if any(m < 1 for m in sizes):
        raise ValueError(f"every problem needs at least one form, got sizes {list(sizes)}")
    pmf = np.ones(1)
    for m in sorted(sizes):
        pmf = np.convolve(pmf, np.full(m, 1.0 / m))
    return pmf


class RankSumNull:
    """The null distribution of S over the problems with at least two forms:
    exact by convolution, or normal where that is infeasible (``method``)."""

    def __init__(self, sizes: Sequence[int]):
        self.sizes = [int(m) for m in sizes if m >= 2]
        if not self.sizes:
            raise ValueError("no problem has two forms: nothing to test")
        self.lowest = len(self.sizes)
        self.expected = sum((m + 1) / 2 for m in self.sizes)
        self.sd = math.sqrt(sum((m * m - 1) / 12 for m in self.sizes))
        self.method = EXACT if _operations(self.sizes) <= EXACT_MAX_OPERATIONS else NORMAL
        self._cdf = np.minimum(1.0, np.cumsum(rank_sum_pmf(self.sizes))) if self.method == EXACT else None

    def p_values(self, sums: np.ndarray) -> np.ndarray:
        """P(S <= s) for each rank sum s."""
        sums = np.asarray(sums, dtype=np.int64)
        if self._cdf is None:
            return norm.cdf((sums + 0.5 - self.expected) / self.sd)
        k = sums - self.lowest
        return np.where(k < 0, 0.0, self._cdf[np.clip(k, 0, self._cdf.size - 1)])

    def randomized_p_values(self, sums: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
        """P(S < s) + U P(S = s): exactly uniform under the null (a check of the null, never a decision)."""
        below = self.p_values(np.asarray(sums) - 1)
        return below + np.asarray(uniforms) * (self.p_values(sums) - below)

    def size(self, alpha: float) -> float:
        """The exact test's attainable size at alpha: the largest P(S <= c) at most alpha (discreteness)."""
        if self._cdf is None:
            return alpha
        below = self._cdf[self._cdf <= alpha * (1 + 1e-12)]
        return float(below[-1]) if below.size else 0.0


@dataclass(frozen=True)
class RankSumTest:
    problems: int  # problems with at least two forms
    rank_sum: int
    expected: float  # E[S] under the null
    p_value: float  # P(S <= rank_sum) under the null
    method: str  # EXACT or NORMAL


def rank_sum_test(ranks: Sequence[int], sizes: Sequence[int]) -> RankSumTest:
    """The benchmark-level p-value of the published forms' ranks (problems with one form left out)."""
    if len(ranks) != len(sizes):
        raise ValueError(f"{len(ranks)} ranks for {len(sizes)} problems")
    for r, m in zip(ranks, sizes, strict=True):
        if not 1 <= r <= m:
            raise ValueError(f"rank {r} outside 1..{m}")
    null = RankSumNull(sizes)
    s = sum(r for r, m in zip(ranks, sizes, strict=True) if m >= 2)
    return RankSumTest(len(null.sizes), s, null.expected, float(null.p_values(np.array([s]))[0]), null.method)
