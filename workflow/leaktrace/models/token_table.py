"""The ``tokens.parquet`` artifact: per-text token statistics of one model,
the cache every detector reads. Kept apart from the backends so that stages
reading the cache never import a deep-learning framework."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from leaktrace.artifacts import read_table, write_table
from leaktrace.models.backend import TokenStats

TOKENS_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("variant_id", pa.int32()),
        ("view", pa.string()),  # "text" or "lowercase"
        ("n_tokens", pa.int32()),
        ("truncated", pa.bool_()),
        ("token_ids", pa.list_(pa.int32())),
        ("logprobs", pa.list_(pa.float32())),
        ("mu", pa.list_(pa.float32())),
        ("sigma", pa.list_(pa.float32())),
        ("prefix_shots", pa.int32()),  # ReCaLL's prefixed pass: shots and tokens before the text (0: a plain pass)
        ("prefix_tokens", pa.int32()),
    ]
)

Key = tuple[str, int, str]  # sample_id, variant_id, view


def write_token_stats(keys: Sequence[Key], stats: Sequence[TokenStats], path: Path) -> None:
    columns: dict[str, list] = {name: [] for name in TOKENS_SCHEMA.names}
    for (sid, vid, view), s in zip(keys, stats, strict=True):
        for name, value in (
            ("sample_id", sid),
            ("variant_id", vid),
            ("view", view),
            ("n_tokens", s.n_tokens),
            ("truncated", s.truncated),
            ("token_ids", s.token_ids),
            ("logprobs", s.logprobs),
            ("mu", s.mu),
            ("sigma", s.sigma),
            ("prefix_shots", s.prefix_shots),
            ("prefix_tokens", s.prefix_tokens),
        ):
            columns[name].append(value)
    write_table(columns, TOKENS_SCHEMA, path)


def _optional(values: pa.ListScalar) -> np.ndarray | None:
    return np.asarray(values.values, dtype=np.float32) if values.is_valid else None


def read_token_stats(path: Path) -> dict[Key, TokenStats]:
    table = read_table(path)
    keys = zip(*(table.column(c).to_pylist() for c in ("sample_id", "variant_id", "view")), strict=True)
    truncated = table.column("truncated").to_pylist()
    shots, prefix_tokens = table.column("prefix_shots").to_pylist(), table.column("prefix_tokens").to_pylist()
    arrays = {c: table.column(c) for c in ("token_ids", "logprobs", "mu", "sigma")}
    return {
        key: TokenStats(
            token_ids=np.asarray(arrays["token_ids"][i].values, dtype=np.int32),
            logprobs=np.asarray(arrays["logprobs"][i].values, dtype=np.float32),
            mu=_optional(arrays["mu"][i]),
            sigma=_optional(arrays["sigma"][i]),
            truncated=truncated[i],
            prefix_shots=shots[i],
            prefix_tokens=prefix_tokens[i],
        )
        for i, key in enumerate(keys)
    }


def losses_by_text(path: Path) -> dict[tuple[str, int], float]:
    """Mean negative log-likelihood of every scored text (view ``text``)."""
    return {
        (sid, vid): -float(np.mean(s.logprobs, dtype=np.float64))
        for (sid, vid, view), s in read_token_stats(path).items()
        if view == "text" and s.n_tokens
    }
