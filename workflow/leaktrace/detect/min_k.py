"""Min-K% Prob (Shi et al. 2024): the mean log-probability of the K% least
likely tokens; non-members contain outlier tokens with very low probability.

Orientation: higher mean of the lowest log-probabilities = member."""

from leaktrace.detect.evidence import SampleEvidence, lowest_k_mean


def min_k_score(evidence: SampleEvidence, ratio: float) -> float:
    return lowest_k_mean(evidence.original.logprobs, ratio)
