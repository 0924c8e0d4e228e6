"""Min-K%++ (Zhang et al. 2025): each token's log-probability is standardised
by the mean and standard deviation of the log-probability under the model's
own next-token distribution at that position,
z_t = (log p(x_t) - mu_t) / sigma_t, and the lowest K% of z_t are averaged.
A memorised token sits at a local mode of the distribution (large z).

This uses the full next-token distribution (mu_t, sigma_t from the forward
pass); CodeSnitch's code instead z-scores the sequence's own log-probabilities,
which is not Min-K%++.

Orientation: higher = member."""

import numpy as np

from leaktrace.detect.evidence import SampleEvidence, lowest_k_mean

SIGMA_FLOOR = 1e-6


def min_k_plus_plus_score(evidence: SampleEvidence, ratio: float) -> float:
    stats = evidence.original
    if stats.mu is None or stats.sigma is None:
        raise ValueError(
            f"{evidence.sample_id}: Min-K%++ needs the next-token distribution's mu and sigma of the original"
        )
    z = (stats.logprobs.astype(np.float64) - stats.mu) / np.maximum(stats.sigma, SIGMA_FLOOR)
    return lowest_k_mean(z, ratio)
