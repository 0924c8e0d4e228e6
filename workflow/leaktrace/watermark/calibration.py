"""The rank test's validity, checked: random publications re-drawn over scored forms.

Under a model that never saw the release, the losses of a problem's forms
are whatever they are, and the choice is independent of them. So drawing
the published form again, uniformly and independently per problem, over
the same scored forms (no new forward pass) gives draws of the benchmark
p-value from exactly the distribution the real publication's has under the
null. Over ``draws`` independent publications the share with p <= alpha
estimates the test's size: at most alpha, and below it for a discrete test
whose attainable size is below alpha (``RankSumNull.size``). The draws'
randomised p-values, exactly uniform under the null, go to a KS test; the
per-problem ranks are counted for the histogram of per-problem p-values."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from leaktrace.calibration.table import count_row, ks_uniform
from leaktrace.watermark.ranks import RankSumNull

METHOD = "watermark rank sum"
RANDOM_PUBLICATION = "random publication"  # the calibration table's null of this family


def redrawn_ranks(losses: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """The rank (1 = lowest loss, ties broken uniformly) of a uniformly drawn form, ``draws`` times."""
    chosen = losses[rng.integers(0, losses.size, draws)]
    below = (losses[None, :] < chosen[:, None]).sum(axis=1)
    tied = (losses[None, :] == chosen[:, None]).sum(axis=1) - 1
    return 1 + below + np.floor(rng.random(draws) * (tied + 1)).astype(np.int64)


def random_publications(
    problem_losses: Sequence[np.ndarray], draws: int, rng: np.random.Generator
) -> tuple[np.ndarray, Counter]:
    """Rank sums of ``draws`` random publications over the problems' form
    losses (problems with one form left out), and the count of each
    (forms, rank) pair over problems and draws."""
    sums = np.zeros(draws, dtype=np.int64)
    counts: Counter = Counter()
    for losses in problem_losses:
        if losses.size < 2:
            continue
        ranks = redrawn_ranks(losses, draws, rng)
        sums += ranks
        counts.update(
            {(int(losses.size), int(r)): int(n) for r, n in zip(*np.unique(ranks, return_counts=True), strict=True)}
        )
    return sums, counts


def calibration_rows(
    model: str, problem_losses: Sequence[np.ndarray], alphas: Sequence[float], draws: int, rng: np.random.Generator
) -> tuple[list[dict], Counter]:
    """The calibration table's rows of one unexposed model (one per alpha), and its rank counts."""
    sizes = [int(losses.size) for losses in problem_losses]
    null = RankSumNull(sizes)
    sums, counts = random_publications(problem_losses, draws, rng)
    p = null.p_values(sums)
    ks = ks_uniform(null.randomized_p_values(sums, rng.random(draws)))
    rows = []
    for alpha in alphas:
        note = (
            f"{draws} publications re-drawn over the scored forms of {len(null.sizes)} problems (no forward pass); "
            f"the rank-sum test ({null.method}) is discrete: its attainable size at α is {null.size(alpha):.4f}"
        )
        rows.append(
            count_row(METHOD, model, RANDOM_PUBLICATION, alpha, int((p <= alpha).sum()), draws, **ks, note=note)
        )
    return rows, counts


def p_bin(p: np.ndarray, bins: int) -> np.ndarray:
    """The bin of each per-problem p-value among ``bins`` equal bins ((k/bins, (k+1)/bins], k = 0..bins-1)."""
    return np.clip(np.ceil(np.asarray(p, dtype=float) * bins - 1e-9).astype(np.int64) - 1, 0, bins - 1)


def expected_p_histogram(sizes: Mapping[int, int], bins: int) -> np.ndarray:
    """The share of per-problem p-values (rank / m) in each bin under the
    null, for ``sizes``: forms m -> problems with m forms."""
    shares = np.zeros(bins)
    total = sum(n for m, n in sizes.items() if m >= 2)
    for m, n in sizes.items():
        if m >= 2:
            np.add.at(shares, p_bin(np.arange(1, m + 1) / m, bins), n / total / m)
    return shares
