"""Lowercase attack (Carlini et al. 2021): compare the model's loss on the text
with its loss on the lowercased text. A memorised surface form is much easier
than its lowercased copy.

Orientation: score = loss(x.lower()) / loss(x) (= LL(lower) / LL(x)); higher = member.
The public code differs in sign and direction between repositories; this is
the one definition used here."""

from leaktrace.detect.evidence import SampleEvidence, log_likelihood


def lowercase_score(evidence: SampleEvidence) -> float:
    if evidence.lowercase is None:
        raise ValueError(f"{evidence.sample_id}: the lowercase method needs the lowercased text scored")
    return log_likelihood(evidence.lowercase) / log_likelihood(evidence.original)
