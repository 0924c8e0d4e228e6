"""Regression tests: the signature values of both presets pinned on fixed
inputs, recorded on main before the compiled signing path (leakage/kernels.py)
replaced the NumPy one. Any change to tokenising, shingle hashing or the
permutations changes these digests; the lessleak preset's values are also
checked against LessLeak's released script in test_verify_human.py, and both
presets against datasketch in test_leakage.py."""

import hashlib

import numpy as np
import pytest

from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.leakage.minhash import Signer
from leaktrace.leakage.settings import resolve, scan_slice


def _slice(scan: dict):
    """A scan's slice with the schema's defaults (the corpus unused)."""
    return scan_slice({"corpus": {"kind": "files", "root": "."}, **scan})


SMALL = 'def add(a, b):\n    """Sum of a and b."""\n    return a + b  # déjà €\n\nprint(add(1, 2))\n'

PINNED_SMALL = {
    # preset: (tokens, unique shingles, first 4 shingle hashes, first 6 signature values, sha256 of the signature)
    "default": (
        36,
        33,
        [13713559, 42729738, 68376063, 109830187],
        [122737557, 57849713, 147357356, 87767213, 66821100, 623807351],
        "ca5a48f4cf88e0616d5120b24eb55f15cf8697b65f795a642b7be1328d3eb395",
    ),
    "lessleak": (
        49,
        22,
        [310737618, 472139872, 684415160, 694991512],
        [130144141, 582677252, 544203806, 218488524, 227865980, 303816],
        "6a16ff3497b07e54975f141b51c3f83b51b432f2262fb1ef2f0a7793261a6320",
    ),
}

PINNED_BATCH = {
    # preset: (unique shingles of all of HumanEval in one text, sha256 of the signatures, sha256 of the hashes, tokens)
    "default": (
        14838,
        "45f038e897f2fc2edfa839c79acf6a4930aa0467ef915d0d250335510c6a9e9f",
        "7686ed6db6c5b247109e24f59301b108ef9c74c9ecb56ddfbe7e491f0753203e",
        33233,
    ),
    "lessleak": (
        6459,
        "c83f26bb23c55160d0ec083386b47e7edcc8b36f6c8fdbf791a0fc9aba57a3f2",
        "451326644d421bd98f5d395338ee3fa4f2a3f661fb19f1ae5fe7c799504cc1e8",
        51951,
    ),
}


def _digest(a: np.ndarray, dtype: str) -> str:
    return hashlib.sha256(a.astype(dtype).tobytes()).hexdigest()


@pytest.mark.parametrize("preset", ["default", "lessleak"])
def test_regression_signature_pinned_on_a_small_text(preset):
    signer = Signer(resolve(preset, _slice({"preset": preset})).minhash)
    n_tokens, hashes = signer.shingle_hashes(SMALL)
    sig = signer.signatures([hashes])[0]
    tokens, unique, first_hashes, first_values, digest = PINNED_SMALL[preset]
    assert (n_tokens, len(hashes)) == (tokens, unique)
    assert hashes[:4].tolist() == first_hashes
    assert sig[:6].tolist() == first_values
    assert _digest(sig, "<u8") == digest


@pytest.mark.parametrize("preset", ["default", "lessleak"])
def test_regression_signatures_pinned_on_a_batch(preset):
    """Forty HumanEval solutions, all 164 in one text (under the default
    scheme over 8,192 shingles, the NumPy path's block size: its large-document
    branch), an empty text, one token, two tokens."""
    bench = [s.code for s in load_humaneval(shipped_humaneval_path(), "humaneval")]
    texts = bench[:40] + ["\n".join(bench), "", "x", "a b"]
    signer = Signer(resolve(preset, _slice({"preset": preset})).minhash)
    pairs = [signer.shingle_hashes(t) for t in texts]
    sigs = signer.signatures([h for _, h in pairs])
    unique, sig_digest, hash_digest, tokens = PINNED_BATCH[preset]
    assert len(pairs[40][1]) == unique
    assert preset != "default" or unique > 8192
    assert _digest(sigs, "<u8") == sig_digest
    assert _digest(np.concatenate([h for _, h in pairs]), "<u4") == hash_digest
    assert sum(n for n, _ in pairs) == tokens
