"""The signing path's inner loops, compiled with numba: one pass over a
document's UTF-8 bytes for the ``rolling64`` shingle hashes, and one fused
loop (permute, then keep the minimum) over a batch's shingle hashes for each
MinHash scheme.

Why compiled: profiling the NumPy path on the standard library put about half
of the time in applying the permutations (a num_perm x shingles temporary,
written and read three to five times, and for ``legacy`` a uint64 ``%``) and
most of the rest in the dozen array passes that tokenise and hash a document;
here each value is computed once, in registers. The arithmetic is the
definition's (leakage/tokens.py, leakage/minhash.py), so the values are the
same bit for bit: tests/test_leakage.py compares them with datasketch,
tests/test_verify_human.py with LessLeak's released script, and
tests/test_signature_pins.py pins them.

``legacy``'s ``(a*h + b) mod (2^61 - 1)`` of a wrapped uint64 ``x`` is reduced
as ``(x & p) + (x >> 61)`` followed by one conditional subtraction of p: x is
``hi*2^61 + lo`` with ``2^61 = 1 (mod p)``, ``lo <= p`` and ``hi <= 7``, so the
sum is below 2p.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_U64 = np.uint64
_U32 = np.uint32
_POLY_BASE = np.uint64(0x100000001B3)  # leakage/tokens.py POLY_BASE
_NGRAM_MULT = np.uint64(0x9E3779B97F4A7C15)  # leakage/tokens.py NGRAM_MULT
_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
_S32 = np.uint64(32)
_S61 = np.uint64(61)
_MERSENNE = np.uint64((1 << 61) - 1)
_MAX32 = np.uint64((1 << 32) - 1)
_F1 = np.uint32(0x85EBCA6B)
_F2 = np.uint32(0xC2B2AE35)
_S16 = np.uint32(16)
_S13 = np.uint32(13)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)

# byte classes of the ``code`` tokenizer: 0 whitespace, 1 word byte, 2 any other byte (a token alone)
BYTE_CLASS = np.full(256, 2, dtype=np.uint8)
BYTE_CLASS[list(b" \t\n\r\x0b\x0c")] = 0
BYTE_CLASS[list(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")] = 1
BYTE_CLASS[128:] = 1


@njit(cache=True, inline="always")
def _fmix64(h):  # pragma: no cover - compiled
    h ^= h >> _S33
    h *= _M1
    h ^= h >> _S33
    h *= _M2
    return h ^ (h >> _S33)


@njit(cache=True)
def code_token_hashes(b, byte_class):  # pragma: no cover - compiled
    """``rolling64_token_hash`` of every ``code`` token of the UTF-8 bytes ``b``, in order."""
    n = b.shape[0]
    out = np.empty(n, dtype=np.uint64)
    m = 0
    i = 0
    while i < n:
        c = byte_class[b[i]]
        if c == 0:
            i += 1
            continue
        if c == 2:
            out[m] = _fmix64(_U64(b[i]) ^ _ONE)
            m += 1
            i += 1
            continue
        poly = _ZERO
        power = _ONE
        start = i
        while i < n and byte_class[b[i]] == 1:
            poly += _U64(b[i]) * power
            power *= _POLY_BASE
            i += 1
        out[m] = _fmix64(poly ^ _U64(i - start))
        m += 1
    return out[:m]


@njit(cache=True)
def shingle_hashes_rolling64(token_hashes, n):  # pragma: no cover - compiled
    """``rolling64`` shingle hashes (uint32, in document order) of a document's
    token hashes: n-grams, or one shingle of all tokens when there are fewer."""
    m = token_hashes.shape[0]
    if m == 0:
        return np.empty(0, dtype=np.uint32)
    k = min(n, m)
    count = m - k + 1
    out = np.empty(count, dtype=np.uint32)
    for i in range(count):
        x = token_hashes[i]
        for j in range(1, k):
            x = x * _NGRAM_MULT + token_hashes[i + j]
        out[i] = _U32(x >> _S32)
    return out


@njit(cache=True)
def min_affine32(hashes, offsets, a, b, out):  # pragma: no cover - compiled
    """out[d, p] = min over document d's hashes h of a[p] * fmix32(h) + b[p]
    (uint32, wrapping); documents are hashes[offsets[d]:offsets[d + 1]]; rows
    of documents without hashes are left as they are."""
    P = a.shape[0]
    for d in range(offsets.shape[0] - 1):
        sig = out[d]
        for t in range(offsets[d], offsets[d + 1]):
            x = hashes[t]  # numba widens uint32 arithmetic to 64 bits: truncate after each step
            x = _U32(x ^ (x >> _S16))
            x = _U32(x * _F1)
            x = _U32(x ^ (x >> _S13))
            x = _U32(x * _F2)
            x = _U32(x ^ (x >> _S16))
            for p in range(P):
                v = _U32(a[p] * x + b[p])
                if v < sig[p]:
                    sig[p] = v


@njit(cache=True)
def min_legacy(hashes, offsets, a, b, out):  # pragma: no cover - compiled
    """out[d, p] = min over document d's hashes h of ((a[p] * h + b[p]) mod
    2^64 mod (2^61 - 1)) & (2^32 - 1), datasketch's legacy permutation."""
    P = a.shape[0]
    for d in range(offsets.shape[0] - 1):
        sig = out[d]
        for t in range(offsets[d], offsets[d + 1]):
            x = _U64(hashes[t])
            for p in range(P):
                v = a[p] * x + b[p]
                r = (v & _MERSENNE) + (v >> _S61)
                if r >= _MERSENNE:
                    r -= _MERSENNE
                r &= _MAX32
                if r < sig[p]:
                    sig[p] = r


@njit(cache=True)
def sorted_unique(h):  # pragma: no cover - compiled
    """The distinct values of the sorted array ``h`` (a view of its start, overwritten in place)."""
    n = h.shape[0]
    if n < 2:
        return h
    w = 1
    for i in range(1, n):
        if h[i] != h[w - 1]:
            h[w] = h[i]
            w += 1
    return h[:w]
