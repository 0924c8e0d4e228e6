"""The LSH index of the benchmark side (the small side; the corpus is only
ever streamed through it).

Banding is datasketch's: band i covers permutations [i*r, (i+1)*r) and its key
is ``bytes(hashvalues[start:end].byteswap().data)`` (``MinHashLSH._byteswap``).
:class:`BandIndex` stores exactly those keys in one dict per band and looks up
a whole batch of signatures at once; tests check that it returns what
``datasketch.MinHashLSH.query`` returns. Bands × rows come from the config or,
given a threshold, from datasketch's own optimiser (``MinHashLSH(threshold,
num_perm, weights)``), by default weighted towards recall: exact verification
removes the extra candidates, while a pair the bands miss is lost for good.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from datasketch import MinHashLSH


def choose_bands(
    num_perm: int, threshold: float | None, bands: int | None, rows: int | None, false_negative_weight: float
) -> tuple[int, int]:
    """(bands, rows): explicit if both are given, else datasketch's optimum for
    ``threshold`` with weights (1 - w, w) on false positives / negatives."""
    if bands is not None or rows is not None:
        if bands is None or rows is None:
            raise ValueError("give both lsh.bands and lsh.rows, or neither (and a threshold)")
        if bands < 2 or rows < 1 or bands * rows > num_perm:
            raise ValueError(f"lsh bands x rows = {bands} x {rows} must have bands >= 2 and fit in num_perm {num_perm}")
        return bands, rows
    if threshold is None:
        raise ValueError("the LSH needs a threshold or explicit bands and rows")
    w = round(false_negative_weight, 6)
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=(round(1 - w, 6), w))
    return lsh.b, lsh.r


def candidate_probability(jaccard: float, bands: int, rows: int) -> float:
    """P(a pair with this Jaccard similarity shares at least one band)."""
    return 1.0 - (1.0 - jaccard**rows) ** bands


def band_keys(signatures: np.ndarray, bands: int, rows: int) -> list[list[bytes]]:
    """Per band, the datasketch key of every signature row."""
    swapped = np.ascontiguousarray(signatures.byteswap())
    width = rows * swapped.dtype.itemsize
    keys = []
    for i in range(bands):
        block = np.ascontiguousarray(swapped[:, i * rows : (i + 1) * rows])
        keys.append([bytes(k) for k in block.view(f"V{width}").ravel().tolist()])
    return keys


class BandIndex:
    def __init__(self, bands: int, rows: int):
        self.bands, self.rows = bands, rows
        self.tables: list[dict[bytes, list[Hashable]]] = [{} for _ in range(bands)]
        self.size = 0

    def insert(self, keys: Sequence[Hashable], signatures: np.ndarray) -> None:
        for table, band in zip(self.tables, band_keys(signatures, self.bands, self.rows), strict=True):
            for key, k in zip(keys, band, strict=True):
                table.setdefault(k, []).append(key)
        self.size += len(keys)

    def query(self, signatures: np.ndarray) -> list[set[Hashable]]:
        """For each signature row, the keys sharing at least one band with it."""
        out: list[set[Hashable]] = [set() for _ in range(len(signatures))]
        for table, band in zip(self.tables, band_keys(signatures, self.bands, self.rows), strict=True):
            get = table.get
            for i, k in enumerate(band):
                hit = get(k)
                if hit:
                    out[i].update(hit)
        return out
