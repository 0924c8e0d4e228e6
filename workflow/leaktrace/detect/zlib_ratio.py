"""zlib attack (Carlini et al. 2021): the model's loss relative to the text's
zlib entropy (compressed length in bytes), normalising for how predictable
the text is in general.

Orientation: score = LL / zlib_bytes = -loss / zlib_bytes; higher = member."""

import zlib

from leaktrace.detect.evidence import SampleEvidence, log_likelihood


def zlib_entropy(text: str) -> int:
    return len(zlib.compress(text.encode("utf-8")))


def zlib_score(evidence: SampleEvidence) -> float:
    return log_likelihood(evidence.original) / zlib_entropy(evidence.text)
