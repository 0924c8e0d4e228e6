"""MinHash signatures, batched, equal to datasketch's bit for bit.

A :class:`MinHashScheme` names everything a signature depends on (tokeniser,
shingle size, hash, permutation scheme, number of permutations, seed). The
permutation parameters are taken from ``datasketch.MinHash`` itself, and the
permutation step repeats its arithmetic (``affine32``: MurmurHash3 fmix32 of
the 32-bit input hash, then ``a*h + b`` in uint32; ``legacy``: ``(h*a + b) %
(2^61 - 1)`` in wrapping uint64, masked to 32 bits), so a signature from
:class:`Signer` equals ``datasketch.MinHash(num_perm, seed, scheme=...,
hashfunc=scheme.hashfunc())`` updated with :meth:`MinHashScheme.datasketch_values`
(tests/test_leakage.py checks it). The speed comes from compiled loops
(leakage/kernels.py): tokenising and hashing a document in one pass over its
bytes (``rolling64``), deduplicating shingle hashes (the minimum is
idempotent), and applying all permutations to a batch of documents in one
fused permute-and-minimum loop.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import xxhash
from datasketch import MinHash

from leaktrace.leakage import kernels
from leaktrace.leakage.tokens import (
    TOKENIZERS,
    ngram_spans,
    rolling64_shingle_hash,
    shingles,
    tokenize,
    tokenizer_shingles,
)

HASHES = ("rolling64", "sha1", "xxh32")
SCHEMES = ("affine32", "legacy")
_MERSENNE = np.uint64((1 << 61) - 1)
_MAX32 = np.uint64((1 << 32) - 1)


def _sha1_hash32(data: bytes) -> int:
    """datasketch.hashfunc.sha1_hash32 (first 4 bytes of SHA-1, little endian)."""
    return struct.unpack("<I", hashlib.sha1(data).digest()[:4])[0]


@dataclass(frozen=True)
class MinHashScheme:
    tokenizer: str = "code"
    ngram: int = 3
    num_perm: int = 128
    hash: str = "rolling64"
    scheme: str = "affine32"
    seed: int = 1

    def __post_init__(self) -> None:
        if self.tokenizer not in TOKENIZERS:
            raise ValueError(f"unknown tokenizer {self.tokenizer!r}; known: {', '.join(TOKENIZERS)}")
        if self.hash not in HASHES:
            raise ValueError(f"unknown hash {self.hash!r}; known: {', '.join(HASHES)}")
        if self.scheme not in SCHEMES:
            raise ValueError(f"unknown MinHash scheme {self.scheme!r}; known: {', '.join(SCHEMES)}")
        if self.hash == "rolling64" and self.tokenizer != "code":
            raise ValueError(
                "hash rolling64 is defined on the `code` tokenizer; use sha1 or xxh32 with tokenizer "
                f"{self.tokenizer!r}"
            )
        if self.ngram < 1 or self.num_perm < 2:
            raise ValueError(f"need ngram >= 1 and num_perm >= 2, got {self.ngram} and {self.num_perm}")

    def hashfunc(self) -> Callable:
        """The ``hashfunc`` that makes datasketch compute this scheme's
        signatures from :meth:`datasketch_values`."""
        return {"rolling64": rolling64_shingle_hash, "sha1": _sha1_hash32, "xxh32": xxhash.xxh32_intdigest}[self.hash]

    def datasketch_values(self, text: str) -> list:
        """What to feed ``MinHash.update_batch``: token tuples for ``rolling64``
        (its hash is defined on tokens), UTF-8 shingle strings otherwise
        (LessLeak: ``" ".join(ngram).encode("utf-8")`` hashed with sha1_hash32)."""
        if self.hash == "rolling64":
            tokens = tokenize(text, self.tokenizer)
            return [tuple(tokens[s:e]) for s, e in ngram_spans(len(tokens), self.ngram)]
        return [s.encode("utf-8") for s in tokenizer_shingles(text, self.tokenizer, self.ngram)]

    def datasketch_minhash(self, text: str) -> MinHash:
        """The reference: datasketch's own MinHash of ``text`` (slow; for tests
        and for the naive baseline of the speed benchmark)."""
        m = MinHash(num_perm=self.num_perm, seed=self.seed, scheme=self.scheme, hashfunc=self.hashfunc())
        m.update_batch(self.datasketch_values(text))
        return m

    def describe(self) -> str:
        return (
            f"{self.tokenizer} tokens, {self.ngram}-gram shingles, {self.hash}, {self.scheme}, "
            f"{self.num_perm} permutations, seed {self.seed}"
        )


class Signer:
    """Shingle hashes and signatures of many documents under one scheme."""

    CACHE_LIMIT = 1 << 20  # per-shingle hash cache entries (string hashes only)

    def __init__(self, scheme: MinHashScheme):
        self.scheme = scheme
        proto = MinHash(num_perm=scheme.num_perm, seed=scheme.seed, scheme=scheme.scheme)
        a, b = proto.permutations
        self.dtype = proto.hashvalues.dtype
        self.empty_value = proto.hashvalues[0]
        self._a = np.asarray(a, dtype=self.dtype)[:, None]
        self._b = np.asarray(b, dtype=self.dtype)[:, None]
        self._hashfunc = scheme.hashfunc()
        self._cache: dict[str, int] = {}

    def shingle_hashes(self, text: str) -> tuple[int, np.ndarray]:
        """(number of tokens, sorted unique 32-bit shingle hashes) of ``text``."""
        s = self.scheme
        if s.hash == "rolling64":
            th, _ = kernels.code_token_hashes(np.frombuffer(text.encode("utf-8"), dtype=np.uint8), kernels.BYTE_CLASS)
            hashes = kernels.shingle_hashes_rolling64(th, s.ngram)
            n_tokens = len(th)
        elif s.tokenizer == "lessleak" and s.hash == "sha1":
            cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
            n_tokens, hashes = kernels.lessleak_shingle_hashes(cp, s.ngram)
        else:
            tokens = tokenize(text, s.tokenizer)
            n_tokens = len(tokens)
            cache, fn = self._cache, self._hashfunc
            if len(cache) > self.CACHE_LIMIT:
                cache.clear()  # bounded: memory never grows with the corpus
            distinct = set(shingles(tokens, s.ngram, short=s.tokenizer != "lessleak"))
            values = list(map(cache.get, distinct))  # the lookups in C; misses hashed below
            if None in values:
                for i, (sh, h) in enumerate(zip(distinct, values, strict=True)):
                    if h is None:
                        values[i] = cache[sh] = fn(sh.encode("utf-8"))
            hashes = np.array(values, dtype=np.uint32)
        hashes.sort()  # NumPy's sort (SIMD) is several times faster than numba's
        return n_tokens, kernels.sorted_unique(hashes)

    def signatures(self, hash_sets: Sequence[np.ndarray]) -> np.ndarray:
        """Signatures (n_docs x num_perm) of documents given by their shingle
        hashes; a document without shingles gets datasketch's empty signature."""
        out = np.full((len(hash_sets), self.scheme.num_perm), self.empty_value, dtype=self.dtype)
        if not len(hash_sets):
            return out
        offsets = np.zeros(len(hash_sets) + 1, dtype=np.int64)
        np.cumsum([len(h) for h in hash_sets], out=offsets[1:])
        hashes = np.concatenate([np.asarray(h, dtype=np.uint32) for h in hash_sets])
        kernel = kernels.min_affine32 if self.scheme.scheme == "affine32" else kernels.min_legacy
        kernel(hashes, offsets, self._a[:, 0], self._b[:, 0], out)
        return out
