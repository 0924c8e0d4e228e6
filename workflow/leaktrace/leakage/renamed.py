"""The scan's second candidate channel: MinHash over identifier-normalised
token shingles, so a renamed copy is a candidate.

Renaming a short function's names changes most of its raw shingles: a
5-line function copied with new names has a raw 3-gram Jaccard near 0.05
with its original, far below any LSH threshold that does not compare nearly
every pair. Type-2 clone detectors compare code with its identifiers
normalised instead (CCFinder's parameterised tokens, NiCad's blind
renaming). Here, on the scan's ``code`` tokens (leakage/tokens.py) after
comments are removed and every string literal is replaced by ``STR`` (a
docstring is one token), every word token that starts like a name and is
not a keyword, a builtin or an attribute (a name after a ``.``: an API the
copy still calls) becomes ``ID``; numbers stay. A renamed copy is then the
same token sequence as its original. The channel's signatures go through
the scan's MinHash scheme and LSH bands; a unit is a candidate of a sample
when either channel says so, and the verifier decides as before.

:func:`normalised_code` is the definition (a string of tokens);
:func:`normalised_shingle_hashes` computes the same shingle hashes for the
``rolling64`` hash with the raw channel's compiled tokeniser
(leakage/kernels.py) and NumPy (tests check the two agree). Only code is
normalised: problem text would become a run of ``ID``."""

from __future__ import annotations

import builtins
import re

import numpy as np

from leaktrace.data.samples import TEXT
from leaktrace.languages import C_KEYWORDS, PYTHON_KEYWORDS
from leaktrace.leakage import kernels
from leaktrace.leakage.minhash import Signer
from leaktrace.leakage.tokens import code_tokens, rolling64_token_hash

KEPT_NAMES = PYTHON_KEYWORDS | C_KEYWORDS | frozenset(dir(builtins)) | {"ID", "STR"}
_KEPT_HASHES = np.array(sorted(rolling64_token_hash(name) for name in KEPT_NAMES), dtype=np.uint64)
_ID_HASH = np.uint64(rolling64_token_hash("ID"))
_DOT_HASH = np.uint64(rolling64_token_hash("."))

# Comments and string literals, as the verifier's lexer reads them (leakage/lexer.py): Python, and C-like
# languages (Java, JavaScript, C, C++, Go, Rust, ...). Whichever starts first wins, so a # or // inside a
# string stays in the string.
_PYTHON_SKIPPED = re.compile(
    r"(?P<comment>\#[^\n]*)"
    r"|(?P<string>[rRbBuUfF]{0,2}(?:\"\"\"[\s\S]*?(?:\"\"\"|$)|'''[\s\S]*?(?:'''|$)|\"(?:\\.|[^\"\\\n])*\"?|'(?:\\.|[^'\\\n])*'?))"
)
_C_SKIPPED = re.compile(
    r"(?P<comment>//[^\n]*|/\*[\s\S]*?(?:\*/|$))"
    r"|(?P<string>\"(?:\\.|[^\"\\\n])*\"?|'(?:\\.|[^'\\\n])*'?|`(?:\\.|[^`\\])*`?)"
)
_FIRST_NAME_BYTE = np.zeros(256, dtype=bool)  # a letter, "_" or a non-ASCII byte: a name, not a number
_FIRST_NAME_BYTE[list(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")] = True
_FIRST_NAME_BYTE[128:] = True


def _is_python(code: str, language: str | None) -> bool:
    """Whether ``code``'s comments and strings are read as Python's."""
    return language == "python" or language is None and "/*" not in code and "//" not in code


def _strip(code: str, language: str | None) -> str:
    """Comments removed, each string literal replaced by `` STR ``."""
    pattern = _PYTHON_SKIPPED if _is_python(code, language) else _C_SKIPPED
    return pattern.sub(lambda m: " STR " if m.lastgroup == "string" else " ", code)


def normalised_code(code: str, language: str | None) -> str:
    """The definition: ``code``'s tokens as the channel shingles them, joined by spaces."""
    if language == TEXT:
        return ""
    out: list[str] = []
    previous = ""
    for token in code_tokens(_strip(code, language)):
        is_name = (token[0].isalpha() or token[0] == "_" or ord(token[0]) > 127) and token not in KEPT_NAMES
        out.append("ID" if is_name and previous != "." else token)
        previous = token
    return " ".join(out)


def normalised_shingle_hashes(signer: Signer, code: str, language: str | None) -> tuple[int, np.ndarray]:
    """(number of tokens, sorted unique shingle hashes) of ``normalised_code``
    under ``signer``'s scheme: vectorised for ``rolling64``, through the
    definition for the other hashes."""
    if signer.scheme.hash != "rolling64":
        return signer.shingle_hashes(normalised_code(code, language))
    if language == TEXT:
        return 0, np.empty(0, dtype=np.uint32)
    if _is_python(code, language):  # the compiled form of the same pattern (tests check they agree)
        b = kernels.strip_python(np.frombuffer(code.encode("utf-8"), dtype=np.uint8), kernels.STRING_PREFIX)
    else:
        b = np.frombuffer(_strip(code, language).encode("utf-8"), dtype=np.uint8)
    if len(b) == 0:
        return 0, np.empty(0, dtype=np.uint32)
    th, starts = kernels.code_token_hashes(b, kernels.BYTE_CLASS)
    th = kernels.normalise_names(b, th, starts, _KEPT_HASHES, _FIRST_NAME_BYTE, _ID_HASH, _DOT_HASH)
    hashes = kernels.shingle_hashes_rolling64(th, signer.scheme.ngram)
    hashes.sort()
    return len(th), kernels.sorted_unique(hashes)
