"""Token frequencies of a reference corpus under one tokenizer (DC-PDD's
reference distribution), cached as Parquet keyed by a fingerprint of the
tokenizer, so a corpus is counted once per tokenizer and counts made with one
tokenizer can never be applied to another's token ids.

The table has one row per token id of the vocabulary (zeros included):
``tokenizer`` (the fingerprint), ``vocab_size``, ``token_id``, ``count``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from tqdm import tqdm

from leaktrace.artifacts import read_table, write_table
from leaktrace.errors import InputError

TOKEN_COUNTS_SCHEMA = pa.schema(
    [
        ("tokenizer", pa.string()),
        ("vocab_size", pa.int32()),
        ("token_id", pa.int32()),
        ("count", pa.int64()),
    ]
)


@dataclass(frozen=True)
class TokenCounts:
    """Occurrences of every token id (index = id) in a reference corpus."""

    tokenizer: str
    counts: np.ndarray

    @property
    def vocab_size(self) -> int:
        return len(self.counts)

    def frequencies(self) -> np.ndarray:
        """Laplace-smoothed relative frequencies f = (c + 1) / (sum c + V)
        (DC-PDD, Zhang et al. 2024, Eq. 4): every id, seen or not, has f > 0."""
        counts = self.counts.astype(np.float64)
        return (counts + 1.0) / (counts.sum() + len(counts))

    def check_tokenizer(self, fingerprint: str) -> None:
        if fingerprint != self.tokenizer:
            raise ValueError(
                f"token counts were made with tokenizer {self.tokenizer}, but the model's tokenizer is {fingerprint}"
            )


def tokenizer_fingerprint(tokenizer) -> str:
    """A short stable hash of everything that decides token ids: the full
    serialised tokenizer (vocabulary, merges, normalisation, pre-tokenisation,
    added tokens) for a fast tokenizer, else the sorted vocabulary."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        payload = backend.to_str()
    else:
        payload = json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False)
    payload = f"{type(tokenizer).__name__}\n{len(tokenizer)}\n{payload}"
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def count_tokens(tokenizer, texts: Iterable[str], *, batch_size: int = 256, progress: bool = False) -> TokenCounts:
    """Count the token ids of ``texts`` (no special tokens added) over the
    whole vocabulary, ``len(tokenizer)`` ids including added tokens."""
    vocab_size = len(tokenizer)
    counts = np.zeros(vocab_size, dtype=np.int64)
    iterator = iter(texts)
    with tqdm(desc="counting tokens", unit=" texts", disable=not progress, mininterval=5) as bar:
        while batch := list(islice(iterator, batch_size)):
            encoded = tokenizer(batch, add_special_tokens=False, verbose=False)["input_ids"]
            flat = np.fromiter((t for ids in encoded for t in ids), dtype=np.int64)
            if flat.size and flat.max() >= vocab_size:
                raise ValueError(f"token id {int(flat.max())} is outside the vocabulary of {vocab_size}")
            counts += np.bincount(flat, minlength=vocab_size)
            bar.update(len(batch))
    return TokenCounts(tokenizer_fingerprint(tokenizer), counts)


def write_token_counts(counts: TokenCounts, path: Path) -> None:
    n = counts.vocab_size
    write_table(
        {
            "tokenizer": [counts.tokenizer] * n,
            "vocab_size": [n] * n,
            "token_id": list(range(n)),
            "count": counts.counts.tolist(),
        },
        TOKEN_COUNTS_SCHEMA,
        path,
    )


def read_token_counts(path: Path, tokenizer: str | None = None) -> TokenCounts:
    """The counts stored in ``path`` for tokenizer fingerprint ``tokenizer``
    (or the only tokenizer in the file when None)."""
    table = read_table(path)
    present = sorted(set(table.column("tokenizer").to_pylist()))
    if tokenizer is None:
        if len(present) != 1:
            raise InputError(str(path), None, f"holds counts for tokenizers {present}; name one")
        tokenizer = present[0]
    rows = table.filter(pc.equal(table.column("tokenizer"), tokenizer))
    if rows.num_rows == 0:
        raise InputError(str(path), None, f"no token counts for tokenizer {tokenizer} (the file has {present})")
    vocab_size = rows.column("vocab_size")[0].as_py()
    ids = rows.column("token_id").to_numpy()
    if rows.num_rows != vocab_size or not np.array_equal(np.sort(ids), np.arange(vocab_size)):
        raise InputError(
            str(path), None, f"token counts for {tokenizer} do not cover ids 0..{vocab_size - 1} once each"
        )
    counts = np.zeros(vocab_size, dtype=np.int64)
    counts[ids] = rows.column("count").to_numpy()
    return TokenCounts(tokenizer, counts)


def cached_token_counts(
    tokenizer, texts: Iterable[str], cache_dir: Path, corpus: str, *, progress: bool = False
) -> TokenCounts:
    """Counts of ``corpus`` under ``tokenizer``, read from
    ``cache_dir/{corpus}.{fingerprint}.parquet`` or counted and written there."""
    fingerprint = tokenizer_fingerprint(tokenizer)
    path = Path(cache_dir) / f"{corpus}.{fingerprint}.parquet"
    if path.exists():
        return read_token_counts(path, fingerprint)
    counts = count_tokens(tokenizer, texts, progress=progress)
    write_token_counts(counts, path)
    return counts
