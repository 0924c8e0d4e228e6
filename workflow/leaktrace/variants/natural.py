"""Naturalness-matched variants: SrDetection's null check fails because a
renamed variant is less natural than its original under any model, so the
original beats all its variants far more often than 1 / (n + 1). With
``variants.natural`` on, the variants stage draws a larger pool of renamings
per sample and this module keeps, of the valid ones, the n whose naturalness
is nearest the original's under a *selection* model.

The rule is fixed in advance and involves no detector and no audited model:
``nearest`` keeps the n valid variants whose per-token loss under the
selection model is nearest the original's (absolute difference), ties broken
by a seeded random order. The selection model must not be a model under
audit (the base model, whose targets share its weights, or an audit model):
selecting on the audited model's own losses would make the null check pass
by construction and bias the detector it checks."""

from __future__ import annotations

import os
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping

from leaktrace.config_slice import read_slice
from leaktrace.models.backend import is_hub_id
from leaktrace.seeding import rng_for
from leaktrace.settings.variants import VariantsSettings

RULES = ("nearest",)
SELECTED_KINDS = ("rename",)  # the detectors' set (the pre-exposure filter's too); other sets pass through


def enabled(settings: Mapping) -> bool:
    return bool(settings.get("natural", {}).get("enabled"))


def generation_settings(variants: Mapping) -> dict:
    """The ``variants`` block the variants job's slice is taken from
    (``VariantsSettings``): without ``natural`` while it is off, and without
    ``names_per_variant`` while it is null (every name), so that a run which
    never sets them keeps the params (and outputs) of every variants job it
    had before they existed."""
    unset = {"names_per_variant"} if variants.get("names_per_variant") is None else set()
    if not enabled(variants):
        unset.add("natural")
    return {k: v for k, v in variants.items() if k not in unset}


def variants_settings(**changes) -> VariantsSettings:
    """The variants stage's settings at the schema's defaults with ``changes``
    (a mapping merged into its block's defaults; ``natural=None``: off), for
    library callers outside the pipeline (benchmarks, tests)."""
    from leaktrace.configuration import schema_defaults

    values = schema_defaults("variants")
    for key, value in changes.items():
        merge = isinstance(value, Mapping) and isinstance(values.get(key), Mapping)
        values[key] = {**values[key], **value} if merge else value
    return read_slice(VariantsSettings, values, "variants")


def pool_size(n: int, pool: int | None) -> int:
    """The renamings the variants stage draws per set: ``n`` (``variants.n``),
    or ``pool`` (``variants.natural.pool``, None while matching is off)."""
    if pool is None:
        return n
    if pool < n:
        raise ValueError(f"variants.natural.pool ({pool}) must be at least variants.n ({n})")
    return pool


def pool_settings(settings: Mapping) -> dict:
    """The ``variants`` block as the variants stage draws with it: n raised to
    the pool size when matching is on."""
    return {**settings, "n": pool_size(settings["n"], settings["natural"]["pool"] if enabled(settings) else None)}


def _same_model(a: str, b: str) -> bool:
    if is_hub_id(a) or is_hub_id(b):
        return a == b
    return os.path.realpath(a) == os.path.realpath(b)


def check_selection_model(selection: str | None, audited: Iterable[str]) -> str:
    """``selection`` itself, after refusing a missing one or one that is a model under audit."""
    if not selection:
        raise ValueError("variants.natural needs a selection model: set variants.natural.model or reference_model.path")
    for model in audited:
        if model and _same_model(selection, model):
            raise ValueError(
                f"variants.natural.model {selection!r} is a model under audit ({model!r}); the "
                "selection model must be another model (default: reference_model.path)"
            )
    return selection


def select_nearest(original_loss: float, losses: Mapping[int, float], n: int, rng: random.Random) -> list[int]:
    """The ids of the (up to) ``n`` variants whose loss is nearest
    ``original_loss``, in id order; equal distances ordered by ``rng``."""
    ids = sorted(losses)
    tiebreak = dict(zip(ids, rng.sample(range(len(ids)), len(ids)), strict=True))
    ranked = sorted(ids, key=lambda i: (abs(losses[i] - original_loss), tiebreak[i]))
    return sorted(ranked[:n])


def first_variant_id(kind: str, n: int, other_sets: tuple[str, ...]) -> int:
    """Ids 1..n are the detectors', then n for each other set, however many each got."""
    if kind == "rename":
        return 1
    return n + other_sets.index(kind) * n + 1


def choose_natural(
    rows: list[dict],
    losses: Mapping[tuple[str, int], float],
    n: int,
    rule: str,
    seed: int,
    other_sets: tuple[str, ...],
) -> list[dict]:
    """The variants table with, per sample, the ``n`` (``variants.n``) detector
    variants the rule (``variants.natural.rule``) picks from the pool (``losses``: (sample, variant id) ->
    the selection model's per-token loss, for the original and every valid
    pool variant), renumbered as the table without matching numbers them.
    Invalid and unpicked pool variants are dropped; other generators' sets
    keep their first n, renumbered."""
    if rule not in RULES:
        raise ValueError(f"variants.natural.rule {rule!r}: one of {RULES}")
    wanted = {"rename": n}
    by_set: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        by_set[(row["sample_id"], row["kind"])].append(row)
    out = []
    for row in rows:
        sid, kind = row["sample_id"], row["kind"]
        if kind == "original":
            out.append(row)
            for other in (*SELECTED_KINDS, *other_sets):
                members = by_set.get((sid, other), [])
                if other in SELECTED_KINDS:
                    candidates = {r["variant_id"]: losses[(sid, r["variant_id"])] for r in members if r["valid"]}
                    picked = set(
                        select_nearest(
                            losses[(sid, 0)], candidates, wanted[other], rng_for(seed, "natural-variants", other, sid)
                        )
                    )
                    members = [r for r in members if r["variant_id"] in picked]
                else:
                    members = members[:n]
                start = first_variant_id(other, n, other_sets)
                out += [{**r, "variant_id": start + k} for k, r in enumerate(members)]
        elif kind not in SELECTED_KINDS and kind not in other_sets:
            raise ValueError(f"variant of unknown kind {kind!r} in the pool (sample {sid})")
    return out
