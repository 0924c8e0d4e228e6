"""Containment over windows: the scan's candidate path for a copy inside a
longer corpus unit, where whole-unit Jaccard cannot see it.

A 20-line function copied into a 2,000-line class, or a generated file,
shares about 1% of the unit's shingles: its Jaccard with the unit is near 0
and MinHash-LSH never proposes the pair. Its containment |B ∩ C| / |B| (B the
benchmark unit's shingles, C the corpus unit's) is near 1.
:class:`ContainmentIndex` holds the benchmark side's shingle sets exactly (no
sketch: the benchmark side is small) as a sparse incidence matrix and gives
every corpus unit of a batch the keys whose containment reaches a threshold,
with one sparse product per batch. Over a long unit, containment alone is
loose: the common shingles of a short unit are scattered over any long file.
:func:`best_span` therefore counts only the benchmark shingles that lie in one
window of the corpus unit at most ``WINDOW`` times the benchmark unit's
length plus ``SLACK`` shingles, and returns that window's containment and its
first and last line: the matched span the scan reports and verifies.

Shingles are ``code``-token 3-grams (leakage/tokens.py: a token is a run of
word characters or one other character, whitespace separates) hashed with
``rolling64``, whatever the scan's preset (its signatures stay what they
are); line breaks are whitespace, so a copy re-wrapped into short lines keeps
every shingle but those cut inside a token. With ``lower`` the shingles are
of the lowercased text: the statement channel's word 3-grams
(:mod:`~leaktrace.leakage.statement` splits words the same way).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from leaktrace.leakage import kernels
from leaktrace.leakage.tokens import code_token_spans, rolling64_shingle_hashes, token_hashes_rolling64
from leaktrace.leakage.units import Unit

NGRAM = 3
WINDOW = 2.0  # a window spans at most this many times the benchmark unit's shingles ...
SLACK = 20  # ... plus this many (insertions inside a short copy)


def positional(text: str, lower: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, bytes]:
    """(the shingle hashes in text order, the tokens' byte starts and ends, the UTF-8 bytes hashed)."""
    data = (text.lower() if lower else text).encode("utf-8")
    b = np.frombuffer(data, dtype=np.uint8)
    starts, ends = code_token_spans(b)
    hashes = (
        rolling64_shingle_hashes(token_hashes_rolling64(data, (starts, ends)), NGRAM)
        if len(b)
        else np.empty(0, dtype=np.uint32)
    )
    return hashes, starts, ends, data


def shingle_set(text: str, lower: bool = False) -> tuple[int, np.ndarray]:
    """(the number of tokens, the sorted distinct shingle hashes) of ``text``:
    :func:`positional`'s, through the compiled tokeniser (leakage/kernels.py),
    for the scan's every unit and document where positions are not needed."""
    data = (text.lower() if lower else text).encode("utf-8")
    th, _ = kernels.code_token_hashes(np.frombuffer(data, dtype=np.uint8), kernels.BYTE_CLASS)
    hashes = kernels.shingle_hashes_rolling64(th, NGRAM)
    hashes.sort()
    return len(th), kernels.sorted_unique(hashes)


def hash_set(text: str, lower: bool = False) -> np.ndarray:
    """The sorted distinct shingle hashes of ``text``."""
    return shingle_set(text, lower)[1]


class ContainmentIndex:
    """The benchmark side's shingle sets, keyed, for containment queries."""

    def __init__(self, keys: list, sets: list[np.ndarray], threshold: float):
        if not 0 < threshold <= 1:
            raise ValueError(f"containment threshold must be in (0, 1], got {threshold}")
        kept = [(k, s) for k, s in zip(keys, sets, strict=True) if len(s)]
        self.keys = [k for k, _ in kept]
        self.threshold = threshold
        self.sizes = np.array([len(s) for _, s in kept], dtype=np.int64)
        every = np.concatenate([s for _, s in kept]) if kept else np.empty(0, dtype=np.uint32)
        self.hashes, where = np.unique(every, return_inverse=True)
        columns = np.repeat(np.arange(len(kept)), self.sizes)
        self.matrix = sparse.csr_matrix(
            (np.ones(len(every), dtype=np.int32), (where.ravel(), columns)), shape=(len(self.hashes), len(kept))
        )
        self.size_of = dict(zip(self.keys, self.sizes.tolist(), strict=True))
        self.set_of = dict(kept)

    def query(self, sets: list[np.ndarray]) -> list[dict]:
        """For each corpus unit's distinct shingle hashes, {key: containment}
        of the keys whose containment in the unit reaches the threshold."""
        out: list[dict] = [{} for _ in sets]
        if not self.keys or not sets:
            return out
        lengths = np.array([len(s) for s in sets], dtype=np.int64)
        every = np.concatenate(sets).astype(np.uint32) if lengths.sum() else np.empty(0, dtype=np.uint32)
        rows = np.repeat(np.arange(len(sets)), lengths)
        pos = np.searchsorted(self.hashes, every)
        pos[pos == len(self.hashes)] = 0
        hit = self.hashes[pos] == every
        found = sparse.csr_matrix(
            (np.ones(int(hit.sum()), dtype=np.int32), (rows[hit], pos[hit])), shape=(len(sets), len(self.hashes))
        )
        shared = (found @ self.matrix).tocoo()
        share = shared.data / self.sizes[shared.col]
        for r, c, x in zip(shared.row.tolist(), shared.col.tolist(), share.tolist(), strict=True):
            if x >= self.threshold:
                out[r][self.keys[c]] = x
        return out


@dataclass(frozen=True)
class Span:
    containment: float  # of the benchmark unit's shingles, in the window
    first_line: int  # 1-based, of the text searched
    last_line: int


def best_span(bench: np.ndarray, text: str, lower: bool = False) -> Span | None:
    """The window of ``text`` (at most ``WINDOW`` x ``len(bench)`` + ``SLACK``
    shingles) holding the most distinct shingles of the sorted set ``bench``,
    cut to its first and last matching shingle; None when none matches."""
    if not len(bench):
        return None
    hashes, starts, ends, data = positional(text, lower)
    pos = np.flatnonzero(np.isin(hashes, bench))
    if not len(pos):
        return None
    width = int(WINDOW * len(bench)) + SLACK
    matched = hashes[pos].tolist()
    positions = pos.tolist()
    held: dict[int, int] = {}
    best = (0, 0, 0)  # (distinct shingles, first index, last index) into positions
    left = 0
    for right, h in enumerate(matched):
        held[h] = held.get(h, 0) + 1
        while positions[right] - positions[left] >= width:
            g = matched[left]
            held[g] -= 1
            if not held[g]:
                del held[g]
            left += 1
        if len(held) > best[0]:
            best = (len(held), left, right)
    first_token = positions[best[1]]
    last_token = min(positions[best[2]] + NGRAM - 1, len(starts) - 1)
    start, end = int(starts[first_token]), int(ends[last_token])
    return Span(best[0] / len(bench), data.count(b"\n", 0, start) + 1, data.count(b"\n", 0, end - 1) + 1)


def cut(unit: Unit, span: Span) -> Unit:
    """The lines of ``unit`` the span covers, as a unit of their own (its lines in the document)."""
    lines = unit.text.split("\n")  # line numbers count "\n" alone, as best_span does
    text = "\n".join(lines[span.first_line - 1 : span.last_line]) + ("\n" if span.last_line < len(lines) else "")
    return Unit(text, unit.name, unit.start_line + span.first_line - 1, unit.start_line + span.last_line - 1)
