"""The sharded exchangeability test (Oren, Meister, Chatterji, Ladhak,
Hashimoto, "Proving Test Set Contamination in Black Box Language Models",
2023).

A model that never saw a benchmark has no reason to prefer its canonical
order of examples over any other: the orders are exchangeable. Consecutive
examples are packed into shards that fit the model's context; per shard,
the log-likelihood of the canonical order minus the mean over seeded random
permutations of its examples; across shards, a one-sided one-sample t-test
(scipy) that the mean difference is positive. It detects only contamination
that kept the benchmark's order, and it needs no non-members.

The t-test's p-value leans on normality of the shard differences. The exact
alternative (:func:`shard_ranks`) needs only the null itself: where the order
tested is a uniform random one (a published order that was randomised), the
canonical order of each shard is one uniform draw among its orders, so its
rank among itself and distinct random others is uniform, independently
across shards, and the sum of the ranks has an exact null distribution (the
watermark's rank-sum convolution, leaktrace.watermark.ranks)."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from scipy.stats import ttest_1samp

SEPARATOR = "\n\n"  # between the examples of a shard
MIN_SHARDS = 2  # the t-test across shards needs two

# Tokens kept free in each shard: joining examples can tokenise a little
# differently from the examples alone; a shard whose any order is still cut
# by the context is left out.
JOIN_MARGIN = 16


def shard_budget(max_length: int) -> int:
    """Tokens of a shard's examples (separators included) under a context of ``max_length``."""
    return max_length - 1 - JOIN_MARGIN


def pack_shards(
    lengths: Sequence[int], budget: int, n_shards: int | None = None, min_examples: int = 2
) -> list[list[int]]:
    """Consecutive example indices grouped greedily into shards of at most
    ``budget`` tokens (``lengths``: each example's tokens, separator
    included); an example longer than the budget alone ends the shard and is
    left out. Shards with fewer than ``min_examples`` have no other order and
    are dropped. The first ``n_shards`` (None: all)."""
    shards, current, used = [], [], 0
    for i, n in enumerate(lengths):
        if current and used + n > budget:
            shards.append(current)
            current, used = [], 0
        if n > budget:
            continue
        current.append(i)
        used += n
    if current:
        shards.append(current)
    shards = [s for s in shards if len(s) >= min_examples]
    return shards if n_shards is None else shards[:n_shards]


def permutations(n_examples: int, n_permutations: int, rng: np.random.Generator) -> list[list[int]]:
    """Random orders of a shard's examples, the canonical one excluded."""
    orders = []
    while len(orders) < n_permutations:
        order = rng.permutation(n_examples).tolist()
        if order != list(range(n_examples)):
            orders.append(order)
    return orders


def distinct_permutations(n_examples: int, n_permutations: int, rng: np.random.Generator) -> list[list[int]]:
    """Up to ``n_permutations`` distinct random orders of a shard's examples,
    the canonical one excluded; every other order where there are no more.
    Distinct draws keep the canonical order exchangeable with the others
    (with repeats, a two-example shard scores its one other order r times),
    which the exact rank test needs."""
    others = math.factorial(n_examples) - 1
    if others <= n_permutations:
        return [list(order) for order in itertools.permutations(range(n_examples))][1:]
    orders, seen = [], {tuple(range(n_examples))}
    while len(orders) < n_permutations:
        order = tuple(rng.permutation(n_examples).tolist())
        if order not in seen:
            seen.add(order)
            orders.append(list(order))
    return orders


def shard_text(examples: Sequence[str], order: Sequence[int]) -> str:
    return SEPARATOR.join(examples[i] for i in order)


@dataclass(frozen=True)
class Result:
    p_value: float
    n_shards: int
    mean_difference: float  # canonical minus permuted log-likelihood, mean over shards
    differences: tuple[float, ...]


def sharded_test(canonical: Sequence[float], permuted: Sequence[Sequence[float]]) -> Result:
    """``canonical[k]``: the log-likelihood of shard k in canonical order;
    ``permuted[k]``: those of its permutations."""
    if len(canonical) != len(permuted):
        raise ValueError(f"{len(canonical)} canonical shards, {len(permuted)} permuted")
    if len(canonical) < MIN_SHARDS:
        raise ValueError(f"the sharded test needs at least {MIN_SHARDS} shards, got {len(canonical)}")
    diffs = np.array([c - np.mean(p) for c, p in zip(canonical, permuted, strict=True)], dtype=float)
    p = ttest_1samp(diffs, 0.0, alternative="greater").pvalue
    return Result(1.0 if np.isnan(p) else float(p), len(diffs), float(diffs.mean()), tuple(diffs.tolist()))


def shard_ranks(
    canonical: Sequence[float], permuted: Sequence[Sequence[float]], rng: random.Random
) -> tuple[list[int], list[int]]:
    """Per shard, the canonical order's rank among its own and its distinct
    permutations' log-likelihoods (1 = the highest; a tie broken uniformly at
    random by ``rng``, so the rank stays exactly uniform under the null), and
    the number of orders it was ranked among. Under the null the ranks are
    independent uniforms: leaktrace.watermark.ranks.rank_sum_test gives
    their sum's exact p-value. Needs :func:`distinct_permutations`."""
    if len(canonical) != len(permuted):
        raise ValueError(f"{len(canonical)} canonical shards, {len(permuted)} permuted")
    ranks, sizes = [], []
    for c, others in zip(canonical, permuted, strict=True):
        values = np.asarray(others, dtype=float)
        if not np.all(np.isfinite(values)) or not np.isfinite(c):
            raise ValueError(f"log-likelihoods must be finite, got {c} and {list(others)}")
        above, tied = int(np.sum(values > c)), int(np.sum(values == c))
        ranks.append(1 + above + rng.randint(0, tied))
        sizes.append(1 + len(values))
    return ranks, sizes


# The audit's order test, one row per audited model x benchmark (audit/exchangeability.parquet).
AUDIT_SCHEMA = pa.schema(
    [
        ("model", pa.string()),  # the audit.models name
        ("benchmark", pa.string()),
        ("test", pa.string()),  # "exchangeability"
        ("n_benchmark_examples", pa.int32()),  # examples in the benchmark, in its published order
        ("n_examples", pa.int32()),  # examples in the tested shards
        ("n_shards", pa.int32()),  # shards of two or more consecutive examples that fit the context, tested
        ("n_permutations", pa.int32()),  # distinct other orders per shard (every other order of a smaller shard)
        ("rank_sum", pa.int64()),  # sum over shards of the published order's rank (1 = the most likely order)
        ("rank_sum_null_mean", pa.float64()),
        ("mean_difference", pa.float64()),  # published minus mean permuted log-likelihood (nats), mean over shards
        ("p_value", pa.float64()),  # the rank sum's, exact under the assumption; null: no shard fits
        ("p_method", pa.string()),  # how p_value was computed, or why there is none
        ("t_test_p_value", pa.float64()),  # Oren et al.'s one-sided t-test across shards; null: fewer than 2 shards
        ("assumption", pa.string()),  # what the p-value's validity rests on
    ]
)

ASSUMPTION = (
    "the benchmark's published order was random: the file's order of its examples is one uniform draw, made "
    "independently of any model (true by design for an order randomised at release, as data/published_order.py "
    "makes one; a release that says how its order was drawn can be checked). Then the p-value is exact and a "
    "small one is evidence of exposure to the release in its order. An order the authors chose (by topic, "
    "difficulty, source or date) can be preferred by a model that never saw it, and a small p-value is then "
    "observational, conditional on this assumption. Contamination that shuffled the examples goes undetected."
)
EXACT_METHOD = "rank sum over shards, exact convolution (each shard's published order ranked among distinct others)"
NORMAL_METHOD = "rank sum over shards, normal approximation"
