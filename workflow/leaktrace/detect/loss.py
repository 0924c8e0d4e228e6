"""PPL / loss attack (Carlini et al. 2021; SrDetection's "PPL" baseline).

Orientation: score = LL = -loss, so higher (lower perplexity) = more likely member."""

from leaktrace.detect.evidence import SampleEvidence, log_likelihood


def loss_score(evidence: SampleEvidence) -> float:
    return log_likelihood(evidence.original)
