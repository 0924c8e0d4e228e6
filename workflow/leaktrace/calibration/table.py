"""The calibration table: one row per (method, model, null, alpha) saying how
often a decision at alpha fires under a null the testbed knows to be true,
and whether that rate is consistent with alpha. Every family writes its rows
through ``count_row`` or ``average_row`` into a row file of ``SCHEMA``; the
aggregate stage joins the row files it is given into
``aggregate/<benchmark>/calibration.parquet``.

Two kinds of rate. A count of rejections over independent null draws (the
evaluation non-members under one control set, re-randomised memberships,
models): ``holds`` iff the Clopper-Pearson 95% interval reaches down to
alpha (``ci_low <= alpha``), i.e. the count is not improbably high for a
calibrated test. An average over random re-partitions of one finite set, the
quantity a conformal guarantee bounds: ``holds`` iff ``rate <= alpha +
AVERAGE_MARGIN``; its interval is the normal one of a mean over independent
partitions (of this data)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
from scipy.stats import kstest

from leaktrace.artifacts import read_table, write_table
from leaktrace.calibration.rates import clopper_pearson
from leaktrace.errors import InputError

CALIBRATION_FOLD = "calibration fold"  # control: the calibration fold's non-members; tested: the evaluation fold's
REPARTITIONED = "re-partitioned"  # random control / evaluation parts of the non-members, every fit refitted
REMEMBERSHIP = "re-randomised membership"  # dataset inference on random member / non-member assignments
REAL_ORDER = "real order"  # exchangeability on the benchmark's own order under models that never saw it
COUNT, AVERAGE = "count", "average"
AVERAGE_MARGIN = 0.01

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
        ("holds", pa.bool_()),
        ("kind", pa.string()),  # count | average
        ("ks_d", pa.float64()),  # KS distance of the (randomised) null p-values from U(0, 1), where they exist
        ("ks_p", pa.float64()),
        ("note", pa.string()),  # what the row's draws are, in words
    ]
)
KEY = ("method", "model", "null", "alpha")


def ks_uniform(p_values: Sequence[float]) -> dict:
    """KS test of p-values against U(0, 1) (empty: no figures)."""
    if len(p_values) == 0:
        return {"ks_d": None, "ks_p": None}
    result = kstest(np.asarray(p_values, dtype=float), "uniform")
    return {"ks_d": float(result.statistic), "ks_p": float(result.pvalue)}


def count_row(method: str, model: str, null: str, alpha: float, rejections: int, n: int, **extra) -> dict:
    """Rejections among ``n`` independent null draws; holds iff the
    Clopper-Pearson interval's lower end is at most ``alpha``."""
    low, high = clopper_pearson(int(rejections), int(n))
    return {"method": method, "model": model, "null": null, "alpha": float(alpha), "n": int(n),
            "rejections": int(rejections), "rate": rejections / n, "ci_low": low, "ci_high": high,
            "holds": low <= alpha, "kind": COUNT, **extra}


def average_row(method: str, model: str, null: str, alpha: float, rates: Sequence[float], **extra) -> dict:
    """The mean false-positive rate over partitions; holds iff it is at most
    ``alpha + AVERAGE_MARGIN``."""
    values = np.asarray(rates, dtype=float)
    if values.size == 0:
        raise ValueError(f"{method} under {model}: an average over no partitions")
    mean = float(values.mean())
    half = 1.96 * float(values.std(ddof=1)) / math.sqrt(values.size) if values.size > 1 else float("nan")
    return {"method": method, "model": model, "null": null, "alpha": float(alpha), "n": int(values.size),
            "rejections": None, "rate": mean, "ci_low": max(0.0, mean - half), "ci_high": min(1.0, mean + half),
            "holds": mean <= alpha + AVERAGE_MARGIN, "kind": AVERAGE, **extra}


def write_rows(rows: Iterable[dict], path: Path) -> None:
    write_table(sorted(rows, key=lambda r: tuple(r[k] for k in KEY)), SCHEMA, path)


def combined_rows(paths: Sequence[Path]) -> list[dict]:
    """The rows of every row file, sorted by (method, model, null, alpha); a
    file of another schema, or a key two rows share, is an error naming the file."""
    rows, seen = [], {}
    for path in paths:
        table = read_table(path)
        if table.schema.names[: len(SCHEMA)] != SCHEMA.names:
            raise InputError(str(path), None, f"not a calibration row file: columns {table.schema.names}, "
                                              f"expected {SCHEMA.names} (leaktrace.calibration.table)")
        for row in table.select(SCHEMA.names).to_pylist():
            key = tuple(row[k] for k in KEY)
            if key in seen:
                raise InputError(str(path), None, f"calibration row {key} is also in {seen[key]}")
            seen[key] = path
            rows.append(row)
    return sorted(rows, key=lambda r: tuple(r[k] for k in KEY))
