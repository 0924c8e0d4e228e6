"""exchangeability: the sharded test of Oren et al. for one model: the
benchmark's examples in canonical order packed into shards that fit the
model's context, each shard and its seeded permutations scored in one
batched pass of the token scorer, and the canonical-minus-permuted
log-likelihoods t-tested across shards. Its calibration repeats the test
with seeded random orders of the examples in place of the canonical one."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.config_slice import read_slice
from leaktrace.contamination.exchangeability import (
    MIN_SHARDS,
    SEPARATOR,
    pack_shards,
    permutations,
    shard_budget,
    shard_text,
    sharded_test,
)
from leaktrace.models.configured import language_model
from leaktrace.seeding import derive_seed

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


@dataclass(frozen=True)
class ExchangeabilitySettings:
    """``contamination.exchangeability`` (config/schema.yaml): the examples tested, shards and permutations."""

    samples: str
    n_shards: int
    n_permutations: int


@dataclass(frozen=True)
class ExchangeabilityCalibrationSettings(ExchangeabilitySettings):
    calibration_seeds: int  # random orders taken as the canonical one


def shard_orders(
    lengths: list[int], budget: int, settings: ExchangeabilitySettings, seed: int, *names: object
) -> list[tuple[list[int], list[list[int]]]]:
    """The shards of the examples in their given order, each with its orders
    to score: the given one first, then seeded permutations."""
    shards = pack_shards(lengths, budget, settings.n_shards)
    return [
        (
            shard,
            [list(range(len(shard)))]
            + permutations(len(shard), settings.n_permutations, np.random.default_rng(derive_seed(seed, *names, k))),
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
    model: dict,
    adapter: str | None,
    settings: dict,
    batch: dict,
    seed: int,
    output: Path,
) -> None:
    """``settings``: the rule's slice (:class:`ExchangeabilitySettings`)."""
    settings = read_slice(ExchangeabilitySettings, settings, "contamination.exchangeability")
    examples = canonical_examples(benchmark, samples, settings.samples)
    lm = language_model(model, adapter, batch)
    (row,) = order_tests(lm, examples, [list(range(len(examples)))], settings, seed, [("exchangeability",)])
    write_table([row], EXCHANGEABILITY_SCHEMA, output)


def exchangeability_calibration(
    benchmark: Path,
    samples: Path,
    model: dict,
    adapter: str | None,
    settings: dict,
    batch: dict,
    seed: int,
    output: Path,
) -> None:
    """The test under a null that holds for any model that never saw these
    orders: ``calibration_seeds`` seeded random orders of the examples, each
    taken as the canonical one. Its false-positive rate, beside the real
    order's p-value, says whether a low p-value is the order or the test."""
    settings = read_slice(ExchangeabilityCalibrationSettings, settings, "contamination.exchangeability")
    examples = canonical_examples(benchmark, samples, settings.samples)
    lm = language_model(model, adapter, batch)
    keys = [("exchangeability-calibration", c) for c in range(settings.calibration_seeds)]
    orderings = [np.random.default_rng(derive_seed(seed, *key)).permutation(len(examples)).tolist() for key in keys]
    rows = order_tests(lm, examples, orderings, settings, seed, keys)
    write_table([{"order_seed": c, **row} for c, row in enumerate(rows)], CALIBRATION_SCHEMA, output)
