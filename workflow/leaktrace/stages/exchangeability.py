"""exchangeability: the sharded test of Oren et al. for one model: the
benchmark's examples in canonical order packed into shards that fit the
model's context, each shard and its seeded permutations scored in one
batched pass of the token scorer, and the canonical-minus-permuted
log-likelihoods t-tested across shards. Its calibration repeats the test
with seeded random orders of the examples in place of the canonical one.

``audit_exchangeability``: the same test in every audit, on an audited
benchmark's published order (the file's order) under an audited model, with
the exact rank-sum p-value as its headline and the t-test beside it; the
audit's table and its Markdown gather the rows."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import numpy as np
import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.contamination.exchangeability import (
    ASSUMPTION,
    AUDIT_SCHEMA,
    EXACT_METHOD,
    MIN_SHARDS,
    NORMAL_METHOD,
    SEPARATOR,
    distinct_permutations,
    pack_shards,
    permutations,
    shard_budget,
    shard_ranks,
    shard_text,
    sharded_test,
)
from leaktrace.data.samples import document
from leaktrace.models.configured import language_model
from leaktrace.seeding import derive_seed
from leaktrace.settings.exchangeability import (
    AuditExchangeabilitySettings,
    ExchangeabilityCalibrationSettings,
    ExchangeabilitySettings,
)
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.score import TokenBatch
from leaktrace.watermark.ranks import EXACT, rank_sum_test

log = logging.getLogger(__name__)

EXCHANGEABILITY_SCHEMA = pa.schema(
    [
        ("samples", pa.string()),  # members | all: which examples, in the benchmark's order
        ("n_examples", pa.int32()),  # examples in the tested shards
        ("n_shards", pa.int32()),
        ("n_permutations", pa.int32()),
        ("mean_difference", pa.float64()),  # canonical minus mean permuted log-likelihood (nats), mean over shards
        ("p_value", pa.float64()),  # one-sided one-sample t-test across shards; null: fewer than 2 shards fit
    ]
)


CALIBRATION_SCHEMA = pa.schema([("order_seed", pa.int32()), *EXCHANGEABILITY_SCHEMA])


def canonical_examples(benchmark: Path, samples: Path, which: str) -> list[str]:
    """The benchmark's code in its own order; ``members``: only the testbed's members."""
    rows = read_records(benchmark, ["sample_id", "code"])
    if which == "members":
        members = {r["sample_id"] for r in read_records(samples, ["sample_id", "split"]) if r["split"] == "member"}
        rows = [r for r in rows if r["sample_id"] in members]
    return [r["code"] for r in rows]


def shard_orders(
    lengths: list[int], budget: int, settings: ExchangeabilitySettings, seed: int, *names: object, draw=permutations
) -> list[tuple[list[int], list[list[int]]]]:
    """The shards of the examples in their given order, each with its orders
    to score: the given one first, then seeded permutations (``draw``)."""
    shards = pack_shards(lengths, budget, settings.n_shards)
    return [
        (
            shard,
            [list(range(len(shard)))]
            + draw(len(shard), settings.n_permutations, np.random.default_rng(derive_seed(seed, *names, k))),
        )
        for k, shard in enumerate(shards)
    ]


def order_tests(
    lm,
    examples: list[str],
    orderings: list[list[int]],
    settings: ExchangeabilitySettings,
    seed: int,
    names: list[tuple],
) -> list[dict]:
    """The sharded test of each ordering of ``examples`` taken as the
    canonical one (the permutations of ordering i seeded by ``names[i]``),
    every shard text of every ordering scored in one batched pass: one row
    each, p-value null where fewer than two shards fit."""
    lengths = [len(lm.encode(text + SEPARATOR)) for text in examples]
    plans = [
        shard_orders([lengths[i] for i in ordering], shard_budget(lm.max_length), settings, seed, *key)
        for ordering, key in zip(orderings, names, strict=True)
    ]
    texts = [
        shard_text([examples[ordering[i]] for i in shard], order)
        for ordering, plan in zip(orderings, plans, strict=True)
        for shard, orders in plan
        for order in orders
    ]
    stats = iter(lm.score(texts, moments=[False] * len(texts)))
    return [
        _sharded_row([[next(stats) for _ in orders] for _, orders in plan], [shard for shard, _ in plan], lm, settings)
        for plan in plans
    ]


def _sharded_row(groups: list[list], shards: list[list[int]], lm, settings: ExchangeabilitySettings) -> dict:
    canonical, permuted, kept = [], [], []
    for k, (shard, group) in enumerate(zip(shards, groups, strict=True)):
        if any(s.truncated for s in group):
            log.warning("shard %d left out: an order of it does not fit the context of %d tokens", k, lm.max_length)
            continue
        lls = [float(np.sum(s.logprobs, dtype=np.float64)) for s in group]
        canonical.append(lls[0])
        permuted.append(lls[1:])
        kept.append(shard)
    row = {
        "samples": settings.samples,
        "n_examples": sum(len(s) for s in kept),
        "n_shards": len(kept),
        "n_permutations": settings.n_permutations,
    }
    if len(kept) < MIN_SHARDS:
        # e.g. examples as long as the context: no shard holds two of them
        log.warning(
            "exchangeability not testable under %s: %d shards of two or more examples fit a context of %d tokens",
            lm.name,
            len(kept),
            lm.max_length,
        )
        return row | {"mean_difference": None, "p_value": None}
    result = sharded_test(canonical, permuted)
    log.info(
        "exchangeability under %s: %d shards of %d examples, mean difference %.3f nats, p = %.3g",
        lm.name,
        result.n_shards,
        row["n_examples"],
        result.mean_difference,
        result.p_value,
    )
    return row | {"mean_difference": result.mean_difference, "p_value": result.p_value}


def exchangeability(
    benchmark: Path,
    samples: Path,
    model: ModelSettings,
    settings: ExchangeabilitySettings,
    batch: TokenBatch,
    seed: int,
    output: Path,
    adapter: Path | None = None,
) -> None:
    """Test whether one model prefers the benchmark's order of its examples (Oren et al.'s sharded test).

    The examples (``settings.samples``: the testbed's members, or all) in
    the benchmark's order are packed into shards, each scored against its
    seeded permutations under ``model`` (and its ``adapter``); one row."""
    examples = canonical_examples(benchmark, samples, settings.samples)
    lm = language_model(model, adapter, batch)
    (row,) = order_tests(lm, examples, [list(range(len(examples)))], settings, seed, [("exchangeability",)])
    write_table([row], EXCHANGEABILITY_SCHEMA, output)


def exchangeability_calibration(
    benchmark: Path,
    samples: Path,
    model: ModelSettings,
    settings: ExchangeabilityCalibrationSettings,
    batch: TokenBatch,
    seed: int,
    output: Path,
    adapter: Path | None = None,
) -> None:
    """Calibrate the sharded order test: the test on seeded random orders of the examples, one row each.

    The null holds for any model that never saw these orders:
    ``calibration_seeds`` seeded random orders of the examples, each
    taken as the canonical one. Its false-positive rate, beside the real
    order's p-value, says whether a low p-value is the order or the test."""
    examples = canonical_examples(benchmark, samples, settings.samples)
    lm = language_model(model, adapter, batch)
    keys = [("exchangeability-calibration", c) for c in range(settings.calibration_seeds)]
    orderings = [np.random.default_rng(derive_seed(seed, *key)).permutation(len(examples)).tolist() for key in keys]
    rows = order_tests(lm, examples, orderings, settings, seed, keys)
    write_table([{"order_seed": c, **row} for c, row in enumerate(rows)], CALIBRATION_SCHEMA, output)


def audit_exchangeability(
    benchmark: Path,
    benchmark_name: str,
    name: str,
    model: ModelSettings,
    settings: AuditExchangeabilitySettings,
    batch: TokenBatch,
    seed: int,
    output: Path,
    adapter: Path | None = None,
) -> None:
    """Test whether one audited model prefers the published order of an
    audited benchmark: one row of the audit's order table.

    Oren et al.'s sharded test of ``benchmark`` (the ingested table, rows
    in the file's order) under the audited model ``name`` (``model`` and its
    ``adapter``). It needs no control set, only
    the published order's randomness (:data:`ASSUMPTION`). The headline
    p-value is exact: greedy packing puts a shard's examples in the same shard
    whatever their order within it, so under the assumption each shard's
    published order is a uniform draw among its orders, independent across
    shards, and its rank among distinct random others is uniform
    (contamination.exchangeability.shard_ranks). The permutations are seeded
    by the benchmark alone: every model ranks the same orders."""
    examples = [document(row) for row in read_records(benchmark)]
    lm = language_model(model, adapter, batch)
    lengths = [len(lm.encode(text + SEPARATOR)) for text in examples]
    key = ("audit-exchangeability", benchmark_name)
    plan = shard_orders(lengths, shard_budget(lm.max_length), settings, seed, *key, draw=distinct_permutations)
    texts = [shard_text([examples[i] for i in shard], order) for shard, orders in plan for order in orders]
    stats = iter(lm.score(texts, moments=[False] * len(texts)))
    groups = [[next(stats) for _ in orders] for _, orders in plan]
    canonical, permuted, kept = [], [], []
    for k, ((shard, _), group) in enumerate(zip(plan, groups, strict=True)):
        if any(s.truncated for s in group):  # a property of the shard's set of orders: the null holds without it
            log.warning("shard %d left out: an order of it does not fit the context of %d tokens", k, lm.max_length)
            continue
        lls = [float(np.sum(s.logprobs, dtype=np.float64)) for s in group]
        canonical.append(lls[0])
        permuted.append(lls[1:])
        kept.append(shard)
    row = {
        "model": name,
        "benchmark": benchmark_name,
        "test": "exchangeability",
        "n_benchmark_examples": len(examples),
        "n_examples": sum(len(s) for s in kept),
        "n_shards": len(kept),
        "n_permutations": settings.n_permutations,
        "assumption": ASSUMPTION,
    }
    write_table([row | exchangeability_p_values(canonical, permuted, seed, key, lm.max_length)], AUDIT_SCHEMA, output)


def exchangeability_p_values(
    canonical: list[float], permuted: list[list[float]], seed: int, key: tuple, context: int
) -> dict:
    """The exact rank-sum p-value (one shard suffices), the t-test's (two), or why there is none."""
    if not canonical:
        log.warning("exchangeability not testable: no shard of two examples fits a context of %d tokens", context)
        return {
            "rank_sum": None,
            "rank_sum_null_mean": None,
            "mean_difference": None,
            "p_value": None,
            "p_method": f"not testable: no shard of two or more examples fits a context of {context} tokens",
            "t_test_p_value": None,
        }
    ranks, sizes = shard_ranks(canonical, permuted, random.Random(derive_seed(seed, *key, "ties")))
    exact = rank_sum_test(ranks, sizes)
    t_test = sharded_test(canonical, permuted).p_value if len(canonical) >= MIN_SHARDS else None
    differences = [c - float(np.mean(p)) for c, p in zip(canonical, permuted, strict=True)]
    log.info(
        "exchangeability: %d shards, rank sum %d (null mean %.1f), p = %.3g (%s), t-test p = %s",
        len(ranks),
        exact.rank_sum,
        exact.expected,
        exact.p_value,
        exact.method,
        "–" if t_test is None else f"{t_test:.3g}",
    )
    return {
        "rank_sum": exact.rank_sum,
        "rank_sum_null_mean": exact.expected,
        "mean_difference": float(np.mean(differences)),
        "p_value": exact.p_value,
        "p_method": EXACT_METHOD if exact.method == EXACT else NORMAL_METHOD,
        "t_test_p_value": t_test,
    }
