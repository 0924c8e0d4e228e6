"""The calibration table: one row per (method, model, null, alpha) saying how
often a decision at alpha fires under a null the testbed knows to be true,
and whether that rate is consistent with alpha. Every family writes its rows
through ``count_row`` or ``average_row`` into a row file of ``SCHEMA``; the
aggregate stage joins the row files it is given into
``aggregate/<benchmark>/calibration.parquet``.

Two kinds of rate. A count of rejections over null draws (the evaluation
non-members under one control set, re-randomised memberships, models), with
its Clopper-Pearson 95% interval; an average over random re-partitions of
one finite set, the quantity a conformal guarantee bounds, with the normal
95% interval of a mean over independent partitions (of this data). Whether
a row ``holds`` is a test of "this decision is calibrated" chosen for how
its draws depend on each other (``validity_rules``: binomial for
independent draws, beta-binomial for flags sharing one control set, the
mean against its exact expectation with its Monte Carlo error for
re-partitions, Bonferroni for models scoring one data set, none for a
single draw), each with a false-alarm rate of at most
``validity_rules.LEVEL`` under exact exchangeability; ``rule``,
``expected_rate`` and ``holds_p`` say which test, against what, and its
p-value. ``holds`` is empty where a row cannot be judged."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
from scipy.stats import kstest

from leaktrace.artifacts import read_table, write_table
from leaktrace.calibration.rates import clopper_pearson
from leaktrace.calibration.validity_rules import Judgement, independent_draws, repartition_mean
from leaktrace.errors import InputError

CALIBRATION_FOLD = "calibration fold"  # control: the calibration fold's non-members; tested: the evaluation fold's
REPARTITIONED = "re-partitioned"  # random control / evaluation parts of the non-members, every fit refitted
REMEMBERSHIP = "re-randomised membership"  # dataset inference on random member / non-member assignments
REAL_ORDER = "real order"  # exchangeability on the benchmark's own order under models that never saw it
POOLED_UNEXPOSED = "pooled unexposed models"  # the real order's row over every unexposed model (the one judged)
COUNT, AVERAGE = "count", "average"

SCHEMA = pa.schema(
    [
        ("method", pa.string()),  # a detector's name or a test's
        ("model", pa.string()),
        ("null", pa.string()),
        ("alpha", pa.float64()),
        ("n", pa.int32()),  # count: null draws; average: partitions
        ("rejections", pa.int32()),  # count rows; null for averaged rows
        ("rate", pa.float64()),
        ("ci_low", pa.float64()),
        ("ci_high", pa.float64()),
        ("holds", pa.bool_()),  # the row's rule does not reject calibration at validity_rules.LEVEL; null: unjudgeable
        ("kind", pa.string()),  # count | average
        ("ks_d", pa.float64()),  # KS distance of independent null p-values from U(0, 1), where they exist
        ("ks_p", pa.float64()),
        ("note", pa.string()),  # what the row's draws are, in words
        (
            "rule",
            pa.string(),
        ),  # the test behind holds (validity_rules): binomial, beta-binomial, mean vs expectation, ...
        ("expected_rate", pa.float64()),  # the rate a calibrated decision does not exceed (on average)
        ("holds_p", pa.float64()),  # the rule's p-value: holds iff it is at least validity_rules.LEVEL
    ]
)
KEY = ("method", "model", "null", "alpha")


def ks_uniform(p_values: Sequence[float]) -> dict:
    """KS test of p-values against U(0, 1) (empty: no figures). Valid only
    for p-values independent given the data (re-drawn memberships or
    publications); conformal p-values sharing a control set or a pool are
    not, and under exact exchangeability a KS test of them rejects far more
    often than its level, so the conformal rows carry none."""
    if len(p_values) == 0:
        return {"ks_d": None, "ks_p": None}
    result = kstest(np.asarray(p_values, dtype=float), "uniform")
    return {"ks_d": float(result.statistic), "ks_p": float(result.pvalue)}


def count_row(
    method: str,
    model: str,
    null: str,
    alpha: float,
    rejections: int,
    n: int,
    judgement: Judgement | None = None,
    **extra,
) -> dict:
    """Rejections among ``n`` null draws, judged by ``judgement`` (by
    default ``validity_rules.independent_draws``: independent draws, holds
    iff the Clopper-Pearson interval's lower end is at most ``alpha``)."""
    low, high = clopper_pearson(int(rejections), int(n))
    judgement = judgement or independent_draws(int(rejections), int(n), alpha)
    return {
        "method": method,
        "model": model,
        "null": null,
        "alpha": float(alpha),
        "n": int(n),
        "rejections": int(rejections),
        "rate": rejections / n,
        "ci_low": low,
        "ci_high": high,
        "kind": COUNT,
        **extra,
        **judgement.columns(),
    }


def average_row(
    method: str,
    model: str,
    null: str,
    alpha: float,
    rates: Sequence[float],
    expected_rate: float | None = None,
    **extra,
) -> dict:
    """The mean false-positive rate over independent partitions, judged
    against ``expected_rate`` (by default ``alpha``) with its Monte Carlo
    error (``validity_rules.repartition_mean``)."""
    values = np.asarray(rates, dtype=float)
    if values.size == 0:
        raise ValueError(f"{method} under {model}: an average over no partitions")
    mean = float(values.mean())
    half = 1.96 * float(values.std(ddof=1)) / math.sqrt(values.size) if values.size > 1 else float("nan")
    judgement = repartition_mean(values, alpha if expected_rate is None else expected_rate)
    return {
        "method": method,
        "model": model,
        "null": null,
        "alpha": float(alpha),
        "n": int(values.size),
        "rejections": None,
        "rate": mean,
        "ci_low": max(0.0, mean - half),
        "ci_high": min(1.0, mean + half),
        "kind": AVERAGE,
        **extra,
        **judgement.columns(),
    }


def write_rows(rows: Iterable[dict], path: Path) -> None:
    write_table(sorted(rows, key=lambda r: tuple(r[k] for k in KEY)), SCHEMA, path)


def combined_rows(paths: Sequence[Path]) -> list[dict]:
    """The rows of every row file, sorted by (method, model, null, alpha); a
    file of another schema, or a key two rows share, is an error naming the file."""
    rows, seen = [], {}
    for path in paths:
        table = read_table(path)
        if table.schema.names[: len(SCHEMA)] != SCHEMA.names:
            raise InputError(
                str(path),
                None,
                f"not a calibration row file: columns {table.schema.names}, "
                f"expected {SCHEMA.names} (leaktrace.calibration.table)",
            )
        for row in table.select(SCHEMA.names).to_pylist():
            key = tuple(row[k] for k in KEY)
            if key in seen:
                raise InputError(str(path), None, f"calibration row {key} is also in {seen[key]}")
            seen[key] = path
            rows.append(row)
    return sorted(rows, key=lambda r: tuple(r[k] for k in KEY))
