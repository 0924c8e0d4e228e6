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


# POLY_BASE^j mod 2^64 for the bytes of a token: the per-byte update reads its power instead of
# multiplying a running one (a serial multiply per byte); a token longer than this takes the loop below
_POWERS_LEN = 256
_POWERS = np.ones(_POWERS_LEN, dtype=np.uint64)
with np.errstate(over="ignore"):
    _POWERS[1:] = np.cumprod(np.full(_POWERS_LEN - 1, _POLY_BASE, dtype=np.uint64), dtype=np.uint64)


@njit(cache=True)
def _code_token_hashes_long(b, byte_class):  # pragma: no cover - compiled
    """:func:`code_token_hashes` with a running power: for documents with a token of 256 bytes or more."""
    n = b.shape[0]
    out = np.empty(n, dtype=np.uint64)
    starts = np.empty(n, dtype=np.int64)
    m = 0
    i = 0
    while i < n:
        c = byte_class[b[i]]
        if c == 0:
            i += 1
            continue
        starts[m] = i
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
    return out[:m], starts[:m]


@njit(cache=True)
def code_token_hashes(b, byte_class):  # pragma: no cover - compiled
    """(``rolling64_token_hash`` of every ``code`` token of the UTF-8 bytes
    ``b``, in order; each token's first byte offset).

    One branch-free pass over the bytes (a token boundary is data, not a
    jump: the branchy loop mispredicted at nearly every boundary): each byte
    extends the current token's polynomial or starts a new one, and the
    finished token's value and length are written at the slot the token
    counter points to, which advances only when a token ends. The finaliser
    runs afterwards over the tokens."""
    n = b.shape[0]
    starts = np.empty(n + 1, dtype=np.int64)
    polys = np.empty(n + 1, dtype=np.uint64)
    lens = np.empty(n + 1, dtype=np.uint64)
    m = 0  # tokens started
    e = 0  # tokens ended
    prev = 0  # the previous byte's class
    k = 0  # bytes in the current token
    poly = _ZERO
    longest = 0
    for i in range(n):
        c = byte_class[b[i]]
        polys[e] = poly
        lens[e] = k
        e += (prev != 0) & ((prev == 2) | (c != 1))  # the previous byte ended a token
        starts[m] = i
        cont = (c == 1) & (prev == 1)
        m += (c != 0) & (not cont)
        kk = k * cont
        longest = max(longest, kk)
        poly = poly * _U64(cont) + _U64(b[i]) * _POWERS[min(kk, _POWERS_LEN - 1)]
        k = (kk + 1) * (c != 0)
        prev = c
    polys[e] = poly
    lens[e] = k
    if longest >= _POWERS_LEN - 1:
        return _code_token_hashes_long(b, byte_class)
    out = np.empty(m, dtype=np.uint64)
    for t in range(m):
        out[t] = _fmix64(polys[t] ^ lens[t])
    return out, starts[:m]


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


@njit(cache=True, inline="always")
def _fmix32(x):  # pragma: no cover - compiled
    x = _U32(x ^ (x >> _S16))  # numba widens uint32 arithmetic to 64 bits: truncate after each step
    x = _U32(x * _F1)
    x = _U32(x ^ (x >> _S13))
    x = _U32(x * _F2)
    return _U32(x ^ (x >> _S16))


@njit(cache=True)
def min_affine32(hashes, offsets, a, b, out):  # pragma: no cover - compiled
    """out[d, p] = min over document d's hashes h of a[p] * fmix32(h) + b[p]
    (uint32, wrapping); documents are hashes[offsets[d]:offsets[d + 1]]; rows
    of documents without hashes are left as they are. Four hashes per pass
    over the permutations: the signature row is read and written a quarter
    as often."""
    P = a.shape[0]
    for d in range(offsets.shape[0] - 1):
        sig = out[d]
        t, hi = offsets[d], offsets[d + 1]
        while t + 3 < hi:
            x1 = _fmix32(hashes[t])
            x2 = _fmix32(hashes[t + 1])
            x3 = _fmix32(hashes[t + 2])
            x4 = _fmix32(hashes[t + 3])
            for p in range(P):
                ap = a[p]
                bp = b[p]
                low = min(min(_U32(ap * x1 + bp), _U32(ap * x2 + bp)), min(_U32(ap * x3 + bp), _U32(ap * x4 + bp)))
                sig[p] = min(sig[p], low)
            t += 4
        while t < hi:
            x = _fmix32(hashes[t])
            for p in range(P):
                sig[p] = min(sig[p], _U32(a[p] * x + b[p]))
            t += 1


@njit(cache=True, inline="always")
def _legacy32(al, ah, bp, h):  # pragma: no cover - compiled
    """The low 32 bits of ((a*h + b) mod 2^64) mod (2^61 - 1), a = ah*2^32 + al, h < 2^32:
    a*h mod 2^64 is al*h + (ah*h << 32), two 32 x 32 -> 64-bit products (one
    SIMD multiply each, where a full 64-bit product takes three)."""
    v = al * h + ((ah * h) << _S32) + bp
    r = (v & _MERSENNE) + (v >> _S61)
    return _U32(min(r, r - _MERSENNE))  # r < 2p: r - p wraps above r unless r >= p


@njit(cache=True)
def min_legacy(hashes, offsets, a, b, out):  # pragma: no cover - compiled
    """out[d, p] = min over document d's hashes h of ((a[p] * h + b[p]) mod
    2^64 mod (2^61 - 1)) & (2^32 - 1), datasketch's legacy permutation. The
    loop runs over a document's hashes for two permutations at a time (a
    vectorised reduction, twice as fast here as updating all permutations per
    hash, which suits affine32's cheaper arithmetic better); the running
    minimum is kept in 32 bits (the values are masked to 32 bits), which
    vectorises twice as wide as a 64-bit one."""
    P = a.shape[0]
    for d in range(offsets.shape[0] - 1):
        lo, hi = offsets[d], offsets[d + 1]
        p = 0
        while p < P:
            q = min(p + 1, P - 1)  # an odd last permutation is computed twice
            al1, ah1, b1 = a[p] & _MAX32, a[p] >> _S32, b[p]
            al2, ah2, b2 = a[q] & _MAX32, a[q] >> _S32, b[q]
            m1 = _U32(out[d, p])
            m2 = _U32(out[d, q])
            for t in range(lo, hi):  # branch-free, so that LLVM vectorises it
                h = _U64(hashes[t])
                m1 = min(m1, _legacy32(al1, ah1, b1, h))
                m2 = min(m2, _legacy32(al2, ah2, b2, h))
            out[d, p] = m1
            out[d, q] = m2
            p += 2


@njit(cache=True)
def sorted_unique(h):  # pragma: no cover - compiled
    """The distinct values of the sorted array ``h`` (a view of its start,
    overwritten in place). Branch-free (every value is written, the write
    position advances on a new value): a branch per value mispredicted on
    about half of them."""
    n = h.shape[0]
    if n < 2:
        return h
    w = 1
    last = h[0]
    for i in range(1, n):
        v = h[i]
        h[w] = v
        w += v != last
        last = v
    return h[:w]


# --- LessLeak's shingles: re.split("[^A-Za-z_0-9]") tokens, space-joined, sha1_hash32 ---------------------------

_K1 = np.uint64(0x5A827999)
_K2 = np.uint64(0x6ED9EBA1)
_K3 = np.uint64(0x8F1BBCDC)
_K4 = np.uint64(0xCA62C1D6)
_W32 = np.uint64(0xFFFFFFFF)
_FP_MULT = np.uint64(0x100000001B3)


@njit(cache=True, inline="always")
def _rotl32(x, n):  # pragma: no cover - compiled
    return ((x << np.uint64(n)) | (x >> np.uint64(32 - n))) & _W32


@njit(cache=True)
def _sha1_hash32(msg, length, w):  # pragma: no cover - compiled
    """datasketch's sha1_hash32 of msg[:length] (bytes as uint8): the first 4
    bytes of the SHA-1 digest read little-endian. ``msg`` must have room for
    the padding (length rounded up to 64 after 9 more bytes); ``w``: 80 uint64."""
    total = ((length + 8) // 64 + 1) * 64
    msg[length] = 0x80
    for i in range(length + 1, total - 8):
        msg[i] = 0
    bits = np.uint64(length) * np.uint64(8)
    for i in range(8):
        msg[total - 1 - i] = np.uint8((bits >> np.uint64(8 * i)) & np.uint64(0xFF))
    h0 = np.uint64(0x67452301)
    h1 = np.uint64(0xEFCDAB89)
    h2 = np.uint64(0x98BADCFE)
    h3 = np.uint64(0x10325476)
    h4 = np.uint64(0xC3D2E1F0)
    for block in range(0, total, 64):
        for i in range(16):
            j = block + 4 * i
            w[i] = (
                (np.uint64(msg[j]) << np.uint64(24))
                | (np.uint64(msg[j + 1]) << np.uint64(16))
                | (np.uint64(msg[j + 2]) << np.uint64(8))
                | np.uint64(msg[j + 3])
            )
        for i in range(16, 80):
            w[i] = _rotl32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1)
        a, b, c, d, e = h0, h1, h2, h3, h4
        for i in range(20):  # four loops of 20 rounds: no branch inside a round
            temp = (_rotl32(a, 5) + ((b & c) | ((b ^ _W32) & d)) + e + _K1 + w[i]) & _W32
            e, d, c, b, a = d, c, _rotl32(b, 30), a, temp
        for i in range(20, 40):
            temp = (_rotl32(a, 5) + (b ^ c ^ d) + e + _K2 + w[i]) & _W32
            e, d, c, b, a = d, c, _rotl32(b, 30), a, temp
        for i in range(40, 60):
            temp = (_rotl32(a, 5) + ((b & c) | (b & d) | (c & d)) + e + _K3 + w[i]) & _W32
            e, d, c, b, a = d, c, _rotl32(b, 30), a, temp
        for i in range(60, 80):
            temp = (_rotl32(a, 5) + (b ^ c ^ d) + e + _K4 + w[i]) & _W32
            e, d, c, b, a = d, c, _rotl32(b, 30), a, temp
        h0 = (h0 + a) & _W32
        h1 = (h1 + b) & _W32
        h2 = (h2 + c) & _W32
        h3 = (h3 + d) & _W32
        h4 = (h4 + e) & _W32
    # the digest's first 4 bytes are h0 big-endian; read little-endian they are h0 byte-swapped
    return np.uint32(
        ((h0 & np.uint64(0xFF)) << np.uint64(24))
        | ((h0 & np.uint64(0xFF00)) << np.uint64(8))
        | ((h0 >> np.uint64(8)) & np.uint64(0xFF00))
        | (h0 >> np.uint64(24))
    )


_LANES = 16


@njit(cache=True, inline="always")
def _sha1_round(a, b, c, d, e, q, f, wi):  # pragma: no cover - compiled
    al = a[q]
    temp = _U32(_U32((al << _U32(5)) | (al >> _U32(27))) + f + e[q] + wi)
    e[q] = d[q]
    d[q] = c[q]
    c[q] = _U32((b[q] << _U32(30)) | (b[q] >> _U32(2)))
    b[q] = al
    a[q] = temp


@njit(cache=True)
def _sha1_h0_lanes(blocks, slots, lanes, out):  # pragma: no cover - compiled
    """:func:`_sha1_hash32` of up to ``_LANES`` one-block messages at once, each
    round computed for all lanes in one loop (which LLVM vectorises):
    ``blocks[j, q]`` is word j of lane l's padded block; out[slots[q]] gets
    lane l's value. Only the digest's first word is kept, so the last round's
    other words are not added."""
    w = np.empty((80, _LANES), dtype=np.uint32)
    w[:16] = blocks
    for i in range(16, 80):
        for q in range(_LANES):
            x = w[i - 3, q] ^ w[i - 8, q] ^ w[i - 14, q] ^ w[i - 16, q]
            w[i, q] = _U32((x << _U32(1)) | (x >> _U32(31)))
    a = np.full(_LANES, 0x67452301, dtype=np.uint32)
    b = np.full(_LANES, 0xEFCDAB89, dtype=np.uint32)
    c = np.full(_LANES, 0x98BADCFE, dtype=np.uint32)
    d = np.full(_LANES, 0x10325476, dtype=np.uint32)
    e = np.full(_LANES, 0xC3D2E1F0, dtype=np.uint32)
    for i in range(80):  # the round's function chosen outside the lane loop, which stays branch-free
        if i < 20:
            for q in range(_LANES):
                f = _U32(((b[q] & c[q]) | (~b[q] & d[q])) + _U32(0x5A827999))
                _sha1_round(a, b, c, d, e, q, f, w[i, q])
        elif i < 40:
            for q in range(_LANES):
                _sha1_round(a, b, c, d, e, q, _U32((b[q] ^ c[q] ^ d[q]) + _U32(0x6ED9EBA1)), w[i, q])
        elif i < 60:
            for q in range(_LANES):
                f = _U32(((b[q] & c[q]) | (b[q] & d[q]) | (c[q] & d[q])) + _U32(0x8F1BBCDC))
                _sha1_round(a, b, c, d, e, q, f, w[i, q])
        else:
            for q in range(_LANES):
                _sha1_round(a, b, c, d, e, q, _U32((b[q] ^ c[q] ^ d[q]) + _U32(0xCA62C1D6)), w[i, q])
    for q in range(lanes):
        h0 = _U32(a[q] + _U32(0x67452301))
        # the digest's first 4 bytes are h0 big-endian; read little-endian they are h0 byte-swapped
        out[slots[q]] = _U32(
            ((h0 & _U32(0xFF)) << _U32(24))
            | ((h0 & _U32(0xFF00)) << _U32(8))
            | ((h0 >> _U32(8)) & _U32(0xFF00))
            | (h0 >> _U32(24))
        )


@njit(cache=True, inline="always")
def _is_word(c):  # pragma: no cover - compiled
    return (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c == 95


@njit(cache=True)
def lessleak_shingle_hashes(cp, n):  # pragma: no cover - compiled
    """(number of tokens, sha1_hash32 of every distinct shingle, unsorted) of
    the text whose code points are ``cp``: the tokens of
    ``re.split("[^A-Za-z_0-9]", text)`` (empty ones kept, so a text has one
    more token than separators), their n-grams joined by one space, none when
    there are fewer than n tokens. A shingle is the text from its first
    token's start to its last token's end with each separator read as a space
    (tokens are ASCII, so that is also its UTF-8); equal shingles are found
    through a hash table and compared character by character, so each distinct
    shingle is hashed once."""
    L = cp.shape[0]
    starts = np.empty(L + 1, dtype=np.int64)
    ends = np.empty(L + 1, dtype=np.int64)
    th = np.empty(L + 1, dtype=np.uint64)
    m = 0
    start = 0
    poly = _ZERO
    for i in range(L + 1):
        if i == L or not _is_word(cp[i]):
            starts[m] = start
            ends[m] = i
            th[m] = _fmix64(poly ^ _U64(i - start))
            m += 1
            start = i + 1
            poly = _ZERO
        else:
            poly = poly * _FP_MULT + _U64(cp[i])
    count = m - n + 1
    if count <= 0:
        return m, np.empty(0, dtype=np.uint32)
    size = 1
    while size < 2 * count:
        size *= 2
    mask = size - 1
    table = np.full(size, -1, dtype=np.int64)
    fps = np.empty(count, dtype=np.uint64)
    distinct = np.empty(count, dtype=np.int64)
    nd = 0
    longest = 0
    for i in range(count):
        fp = th[i]
        for j in range(1, n):
            fp = fp * _NGRAM_MULT + th[i + j]
        fps[i] = fp
        slot = np.int64(fp >> _S32) & mask
        while True:
            other = table[slot]
            if other < 0:
                table[slot] = i
                distinct[nd] = i
                nd += 1
                longest = max(longest, ends[i + n - 1] - starts[i])
                break
            if fps[other] == fp:
                s1, s2, e1 = starts[i], starts[other], ends[i + n - 1]
                same = e1 - s1 == ends[other + n - 1] - s2
                k = 0
                while same and k < e1 - s1:
                    c1, c2 = cp[s1 + k], cp[s2 + k]
                    same = c1 == c2 or not (_is_word(c1) or _is_word(c2))
                    k += 1
                if same:
                    break
            slot = (slot + 1) & mask
    msg = np.empty(longest + 72, dtype=np.uint8)
    w = np.empty(80, dtype=np.uint64)
    out = np.empty(nd, dtype=np.uint32)
    # one-block shingles (at most 55 bytes: nearly all) go through SHA-1 sixteen at a time, in SIMD lanes
    blocks = np.zeros((16, _LANES), dtype=np.uint32)
    slots = np.empty(_LANES, dtype=np.int64)
    lanes = 0
    for r in range(nd):
        i = distinct[r]
        s = starts[i]
        length = ends[i + n - 1] - s
        if length > 55:
            for k in range(length):
                c = cp[s + k]
                msg[k] = np.uint8(c) if _is_word(c) else np.uint8(32)
            out[r] = _sha1_hash32(msg, length, w)
            continue
        for j in range(16):
            blocks[j, lanes] = 0
        for k in range(length):  # big-endian words of the padded block
            c = cp[s + k]
            byte = c if _is_word(c) else 32
            blocks[k >> 2, lanes] |= _U32(byte) << _U32(24 - 8 * (k & 3))
        blocks[length >> 2, lanes] |= _U32(0x80) << _U32(24 - 8 * (length & 3))
        blocks[15, lanes] = _U32(length * 8)
        slots[lanes] = r
        lanes += 1
        if lanes == _LANES:
            _sha1_h0_lanes(blocks, slots, lanes, out)
            lanes = 0
    if lanes:
        _sha1_h0_lanes(blocks, slots, lanes, out)
    return m, out


# --- the renamed channel's Python stripping and name normalisation (leakage/renamed.py) ---------------------------

_QUOTE2 = np.uint8(34)  # "
_QUOTE1 = np.uint8(39)  # '
_HASH = np.uint8(35)  # #
_BACKSLASH = np.uint8(92)
_NEWLINE = np.uint8(10)
# string prefix letters: r R b B u U f F
STRING_PREFIX = np.zeros(256, dtype=np.bool_)
STRING_PREFIX[list(b"rRbBuUfF")] = True


@njit(cache=True)
def strip_python(b, prefix):  # pragma: no cover - compiled
    """The UTF-8 bytes of renamed.py's ``_PYTHON_SKIPPED.sub`` of the text ``b``
    (comments become " ", string literals " STR "), its regular expression
    followed step by step: a match is tried at each position in turn, a
    comment first, then a string of up to two prefix letters (the most that
    are there, as the greedy ``{0,2}``), its triple-quoted form first; an
    unclosed one runs to the end of the text (a final newline left out, as
    ``$``) or, single-quoted, to its line's end. Non-ASCII bytes are never
    quotes, backslashes or newlines, so bytes step as the pattern's
    characters do."""
    n = b.shape[0]
    out = np.empty(5 * n + 5, dtype=np.uint8)
    w = 0
    i = 0
    while i < n:
        c = b[i]
        if c == _HASH:
            while i < n and b[i] != _NEWLINE:
                i += 1
            out[w] = 32
            w += 1
            continue
        k = 0
        while k < 2 and i + k < n and prefix[b[i + k]]:
            k += 1
        s = i + k
        if s < n and (b[s] == _QUOTE2 or b[s] == _QUOTE1):
            q = b[s]
            if s + 2 < n and b[s + 1] == q and b[s + 2] == q:
                p = s + 3
                while True:
                    if p + 2 < n and b[p] == q and b[p + 1] == q and b[p + 2] == q:
                        p += 3
                        break
                    if p >= n or (p == n - 1 and b[p] == _NEWLINE):
                        break
                    p += 1
            else:
                p = s + 1
                while p < n:
                    x = b[p]
                    if x == _BACKSLASH:
                        if p + 1 < n and b[p + 1] != _NEWLINE:
                            p += 2
                            continue
                        break
                    if x == q or x == _NEWLINE:
                        break
                    p += 1
                if p < n and b[p] == q:
                    p += 1
            out[w] = 32
            out[w + 1] = 83  # S
            out[w + 2] = 84  # T
            out[w + 3] = 82  # R
            out[w + 4] = 32
            w += 5
            i = p
            continue
        out[w] = c
        w += 1
        i += 1
    return out[:w]


@njit(cache=True)
def normalise_names(b, th, starts, kept, first_name_byte, id_hash, dot_hash):  # pragma: no cover - compiled
    """``th`` (the token hashes of ``b``, tokens starting at ``starts``) with
    every name replaced by ``id_hash``, in place: a token whose first byte
    starts a name, whose hash is not in the sorted ``kept``, and that does not
    follow a ``.``."""
    m = th.shape[0]
    after_dot = False
    for t in range(m):
        h = th[t]
        dot = h == dot_hash
        if first_name_byte[b[starts[t]]] and not after_dot:
            j = np.searchsorted(kept, h)
            if j >= kept.shape[0] or kept[j] != h:
                th[t] = id_hash
        after_dot = dot
    return th


# --- the top-level definitions of a Python file that parses (leakage/units.py) -----------------------------------

IDENTIFIER_BYTE = np.zeros(256, dtype=np.bool_)  # a letter, digit, "_" or a non-ASCII byte
IDENTIFIER_BYTE[list(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")] = True
IDENTIFIER_BYTE[128:] = True
_DEF = np.frombuffer(b"def", dtype=np.uint8)
_CLASS = np.frombuffer(b"class", dtype=np.uint8)
_ASYNC = np.frombuffer(b"async", dtype=np.uint8)


@njit(cache=True, inline="always")
def _keyword_at(b, i, word, ident):  # pragma: no cover - compiled
    k = word.shape[0]
    if i + k > b.shape[0] or (i + k < b.shape[0] and ident[b[i + k]]):
        return False
    for t in range(k):
        if b[i + t] != word[t]:
            return False
    return True


@njit(cache=True, inline="always")
def _skip_blanks(b, i):  # pragma: no cover - compiled
    while i < b.shape[0] and (b[i] == 32 or b[i] == 9):
        i += 1
    return i


@njit(cache=True)
def python_top_level(b, ident):  # pragma: no cover - compiled
    """The top-level ``def``/``class`` statements of the UTF-8 bytes ``b`` of
    Python source that parses: (count, first lines (the first decorator's),
    last lines, the keyword's lines, the name's byte offsets [lo, hi), sure). A statement's last
    line is that of its last token (comments and blank lines are not
    tokens), as ``ast``'s ``end_lineno``. Strings, brackets and backslash
    continuations are followed as the tokeniser does, a logical line at
    column 0 starts a top-level statement; lines are counted on "\\n" alone
    (the caller sends text with "\\r", form feeds or a BOM to ``ast``).
    ``sure`` is False where the scan meets something it does not follow (a
    line opening with a backslash, an unclosed string, a name not on its
    keyword's line, a decorator opening with a parenthesis): ``ast`` decides."""
    n = b.shape[0]
    rows = 2
    for i in range(n):
        rows += b[i] == _NEWLINE
    first = np.empty(rows, dtype=np.int64)
    last = np.empty(rows, dtype=np.int64)
    lines = np.empty(rows, dtype=np.int64)
    name_lo = np.empty(rows, dtype=np.int64)
    name_hi = np.empty(rows, dtype=np.int64)
    m = 0
    line = 1
    depth = 0
    logical = True  # the next character opens a physical line that may open a logical line
    last_token = 0  # the line of the last token seen
    open_def = False
    decorated = 0  # the line of the first decorator of the definition to come
    i = 0
    while i < n:
        if logical:
            j = _skip_blanks(b, i)
            if j >= n:
                break
            c = b[j]
            if c == _NEWLINE:  # a blank line
                line += 1
                i = j + 1
                continue
            if c == _HASH:  # a comment alone on its line
                while j < n and b[j] != _NEWLINE:
                    j += 1
                i = j
                continue
            if c == _BACKSLASH:
                return m, first[:m], last[:m], lines[:m], name_lo[:m], name_hi[:m], False
            logical = False
            if j == i:  # column 0: a top-level statement
                if open_def:
                    last[m - 1] = last_token
                    open_def = False
                if c == 64:  # "@": a decorator; its expression's line is its own
                    k = _skip_blanks(b, j + 1)
                    if k >= n or b[k] == _NEWLINE or b[k] == _BACKSLASH or b[k] == 40:
                        return m, first[:m], last[:m], lines[:m], name_lo[:m], name_hi[:m], False
                    if decorated == 0:
                        decorated = line
                else:
                    k = -1
                    if _keyword_at(b, j, _DEF, ident):
                        k = j + 3
                    elif _keyword_at(b, j, _CLASS, ident):
                        k = j + 5
                    elif _keyword_at(b, j, _ASYNC, ident):
                        a = _skip_blanks(b, j + 5)
                        if a > j + 5 and _keyword_at(b, a, _DEF, ident):
                            k = a + 3
                    if k >= 0:
                        lo = _skip_blanks(b, k)
                        if lo == k or lo >= n or not ident[b[lo]] or (b[lo] >= 48 and b[lo] <= 57):
                            return m, first[:m], last[:m], lines[:m], name_lo[:m], name_hi[:m], False
                        hi = lo
                        while hi < n and ident[b[hi]]:
                            hi += 1
                        first[m] = decorated if decorated else line
                        lines[m] = line
                        name_lo[m] = lo
                        name_hi[m] = hi
                        m += 1
                        open_def = True
                        decorated = 0
                    elif decorated:  # decorators before something else: not what parses
                        return m, first[:m], last[:m], lines[:m], name_lo[:m], name_hi[:m], False
            i = j
        c = b[i]
        if c == _NEWLINE:
            line += 1
            logical = depth == 0
            i += 1
        elif c == 32 or c == 9:
            i += 1
        elif c == _HASH:
            while i < n and b[i] != _NEWLINE:
                i += 1
        elif c == _BACKSLASH:
            if i + 1 < n and b[i + 1] == _NEWLINE:  # a continuation: the next line opens no logical line
                line += 1
                i += 2
            else:
                return m, first[:m], last[:m], lines[:m], name_lo[:m], name_hi[:m], False
        elif c == _QUOTE2 or c == _QUOTE1:
            q = c
            triple = i + 2 < n and b[i + 1] == q and b[i + 2] == q
            k = i + 3 if triple else i + 1
            closed = False
            while k < n:
                x = b[k]
                if x == _BACKSLASH:
                    if k + 1 < n and b[k + 1] == _NEWLINE:
                        line += 1
                    k += 2
                    continue
                if x == _NEWLINE:
                    if not triple:
                        break
                    line += 1
                elif x == q and (not triple or (k + 2 < n and b[k + 1] == q and b[k + 2] == q)):
                    closed = True
                    break
                k += 1
            if not closed:
                return m, first[:m], last[:m], lines[:m], name_lo[:m], name_hi[:m], False
            last_token = line
            i = k + 3 if triple else k + 1
        else:
            if c == 40 or c == 91 or c == 123:
                depth += 1
            elif c == 41 or c == 93 or c == 125:
                depth -= 1
            last_token = line
            i += 1
    if open_def:
        last[m - 1] = last_token
    return m, first[:m], last[:m], lines[:m], name_lo[:m], name_hi[:m], True
