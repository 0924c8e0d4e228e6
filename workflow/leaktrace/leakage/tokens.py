"""Tokenisers and shingles.

Two tokenisers:

- ``code`` (the default): maximal runs of word bytes (ASCII letters, digits,
  ``_`` and every non-ASCII character) and every other non-whitespace
  character on its own; whitespace separates. It is defined on UTF-8 bytes so
  that :func:`token_hashes_rolling64` can tokenise and hash a whole document
  with a few NumPy passes and no Python work per token; :func:`code_tokens`
  is the same tokeniser on ``str`` (a regular expression), used for shingle
  strings and as the reference the vectorised path is tested against.
- ``lessleak``: LessLeak-Bench's ``re.split("[^A-Za-z_0-9]", text)``, empty
  strings kept (so runs of punctuation give empty tokens, as in their code).

Shingles are n-grams of consecutive tokens joined by one space (LessLeak:
2-grams). A document with fewer than n (but at least one) tokens has one
shingle made of all its tokens, except under the ``lessleak`` tokenizer,
where it has none (LessLeak's script drops documents shorter than its
``min_ngram_size``, which its runs set to the n-gram size); an empty
document has none.

The ``rolling64`` shingle hash (the default) is defined on token hashes so it
can be vectorised: a token's hash is the MurmurHash3 64-bit finaliser of
(polynomial hash of its UTF-8 bytes mod 2^64, base ``POLY_BASE``) XOR its byte
length; an n-gram's hash is the Horner combination x = x * ``NGRAM_MULT`` +
token_hash (mod 2^64) over its tokens, and the shingle hash is the top 32 bits
of x. :func:`rolling64_shingle_hash` is the pure-Python definition.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

MASK64 = (1 << 64) - 1
POLY_BASE = 0x100000001B3  # FNV-1 64-bit prime (odd, so invertible mod 2^64)
NGRAM_MULT = 0x9E3779B97F4A7C15  # 2^64 / golden ratio

_WORD = "A-Za-z0-9_\u0080-\U0010ffff"
_SPACE = " \t\n\r\x0b\x0c"
CODE_TOKEN = re.compile(f"[{_WORD}]+|[^{_WORD}{_SPACE}]")
LESSLEAK_SPLIT = re.compile("[^A-Za-z_0-9]")

TOKENIZERS = ("code", "lessleak")


def code_tokens(text: str) -> list[str]:
    return CODE_TOKEN.findall(text)


def lessleak_tokens(text: str) -> list[str]:
    """LessLeak-Bench's tokenisation: split on every character that is not an
    ASCII letter, digit or underscore, keeping the empty strings."""
    return LESSLEAK_SPLIT.split(text)


def tokenize(text: str, tokenizer: str) -> list[str]:
    if tokenizer == "code":
        return code_tokens(text)
    if tokenizer == "lessleak":
        return lessleak_tokens(text)
    raise ValueError(f"unknown tokenizer {tokenizer!r}; known: {', '.join(TOKENIZERS)}")


def ngram_spans(n_tokens: int, n: int, *, short: bool = True) -> list[tuple[int, int]]:
    """[start, end) token spans of the shingles of a document of ``n_tokens``
    (one of all its tokens when it has fewer than n, unless ``short`` is False)."""
    if n_tokens == 0:
        return []
    if n_tokens < n:
        return [(0, n_tokens)] if short else []
    return [(i, i + n) for i in range(n_tokens - n + 1)]


def shingles(tokens: Sequence[str], n: int, *, short: bool = True) -> list[str]:
    """Space-joined n-grams, in document order (duplicates kept)."""
    if n < 1:
        raise ValueError(f"shingle size must be at least 1, got {n}")
    if len(tokens) < n:
        return [" ".join(tokens)] if tokens and short else []
    return list(map(" ".join, zip(*(tokens[i:] for i in range(n)), strict=False)))


def tokenizer_shingles(text: str, tokenizer: str, n: int) -> list[str]:
    """The shingles of ``text`` under ``tokenizer``'s rule for short documents (see above)."""
    return shingles(tokenize(text, tokenizer), n, short=tokenizer != "lessleak")


def shingle_set(text: str, tokenizer: str, n: int) -> set[str]:
    return set(tokenizer_shingles(text, tokenizer, n))


def token_set(text: str, tokenizer: str) -> set[str]:
    """The distinct non-blank tokens of ``text``: what LessLeak's script
    compares (``jaccard_similarity``) to confirm a MinHash candidate."""
    return {t for t in tokenize(text, tokenizer) if t.strip()}


# --- the rolling64 hash, pure Python (the definition) -----------------------


def _fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK64
    return h ^ (h >> 33)


def rolling64_token_hash(token: str) -> int:
    data = token.encode("utf-8")
    poly, power = 0, 1
    for byte in data:
        poly = (poly + byte * power) & MASK64
        power = (power * POLY_BASE) & MASK64
    return _fmix64(poly ^ len(data))


def rolling64_shingle_hash(ngram: Sequence[str]) -> int:
    """The 32-bit ``rolling64`` hash of one n-gram (a sequence of tokens)."""
    x = 0
    for token in ngram:
        x = (x * NGRAM_MULT + rolling64_token_hash(token)) & MASK64
    return x >> 32


# --- the rolling64 hash, vectorised -----------------------------------------

_BYTE_CLASS = np.full(256, 2, dtype=np.uint8)  # 0 whitespace, 1 word, 2 other
_BYTE_CLASS[list(_SPACE.encode())] = 0
_BYTE_CLASS[list(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")] = 1
_BYTE_CLASS[128:] = 1

_U64 = np.uint64


class _Powers:
    """POLY_BASE^j and its inverse^j mod 2^64 for j < capacity, grown on demand
    (NumPy's cumulative product wraps modulo 2^64, as the definition asks)."""

    def __init__(self) -> None:
        self.capacity = 0
        self.fwd = np.ones(1, dtype=np.uint64)
        self.inv = np.ones(1, dtype=np.uint64)

    def ensure(self, n: int) -> None:
        if n < self.capacity:
            return
        cap = max(1 << 16, 1 << int(n).bit_length())
        with np.errstate(over="ignore"):
            for name, base in (("fwd", POLY_BASE), ("inv", pow(POLY_BASE, -1, 1 << 64))):
                arr = np.empty(cap + 1, dtype=np.uint64)
                arr[0] = 1
                arr[1:] = _U64(base)
                setattr(self, name, np.cumprod(arr, dtype=np.uint64))
        self.capacity = cap


_POWERS = _Powers()


def _fmix64_np(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _U64(33))
    h = h * _U64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> _U64(33))
    h = h * _U64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> _U64(33))


def code_token_spans(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[start, end) byte offsets of every ``code`` token of the UTF-8 bytes ``b``."""
    n = len(b)
    cls = _BYTE_CLASS[b]
    word = cls == 1
    other = cls == 2
    prev_word = np.zeros(n, dtype=bool)
    prev_word[1:] = word[:-1]
    next_word = np.zeros(n, dtype=bool)
    next_word[:-1] = word[1:]
    starts = np.flatnonzero((word & ~prev_word) | other)
    ends = np.flatnonzero((word & ~next_word) | other) + 1
    return starts, ends


def token_hashes_rolling64(data: bytes, spans: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """``rolling64_token_hash`` of every ``code`` token of UTF-8 ``data``, in order,
    computed with prefix sums instead of a loop over tokens (``spans``: the
    tokens' :func:`code_token_spans`, when the caller has them)."""
    b = np.frombuffer(data, dtype=np.uint8)
    n = len(b)
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    _POWERS.ensure(n + 1)
    starts, ends = spans if spans is not None else code_token_spans(b)
    prefix = np.zeros(n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        np.cumsum(b.astype(np.uint64) * _POWERS.fwd[:n], out=prefix[1:])
        poly = (prefix[ends] - prefix[starts]) * _POWERS.inv[starts]
        return _fmix64_np(poly ^ (ends - starts).astype(np.uint64))


def rolling64_shingle_hashes(token_hashes: np.ndarray, n: int) -> np.ndarray:
    """Vectorised :func:`rolling64_shingle_hash` over all n-grams (uint32, in order)."""
    m = len(token_hashes)
    if m == 0:
        return np.empty(0, dtype=np.uint32)
    k = min(n, m)
    count = m - k + 1
    with np.errstate(over="ignore"):
        x = token_hashes[:count].copy()
        for j in range(1, k):
            x *= _U64(NGRAM_MULT)
            x += token_hashes[j : j + count]
    return (x >> _U64(32)).astype(np.uint32)
