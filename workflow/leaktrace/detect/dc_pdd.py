"""DC-PDD, divergence-based calibration (Zhang et al., EMNLP 2024, "Pretraining
Data Detection for Large Language Models: A Divergence-based Calibration
Method", Sec. 3): the model's token probabilities are calibrated by the
tokens' frequencies in a reference corpus, so that common tokens, easy for
every model, stop dominating the score.

For the token ids x_1..x_n of a text, keep only the first occurrence of each
id (the paper's FOS(x)); for each kept position

    alpha_t = p_t * log(1 / f_t),   alpha_t <- min(alpha_t, a)

with p_t = p(x_t | x_<t) a probability (not a log-probability), f the
Laplace-smoothed reference frequency f = (c + 1) / (sum c + V) (see
``TokenCounts.frequencies``) and a the clipping bound (0.01 in the paper);
the score is the mean of alpha_t over the kept positions.

Orientation: a member's tokens, rare ones especially, get high probability,
so a higher mean alpha = member; the score is used as is. (The paper's
released code negates it to fit a lower-is-member convention.)"""

from __future__ import annotations

import numpy as np

from leaktrace.detect.evidence import SampleEvidence


def first_occurrences(token_ids: np.ndarray) -> np.ndarray:
    """Positions where each token id occurs for the first time, in order."""
    _, first = np.unique(np.asarray(token_ids), return_index=True)
    return np.sort(first)


def dc_pdd_score(evidence: SampleEvidence, frequencies: np.ndarray, clip: float) -> float:
    stats = evidence.original
    if stats.n_tokens == 0:
        raise ValueError(f"{evidence.sample_id}: cannot score an empty text")
    if int(stats.token_ids.max()) >= len(frequencies):
        raise ValueError(
            f"{evidence.sample_id}: token id {int(stats.token_ids.max())} is outside the {len(frequencies)} counted ids: "
            "the token counts were made with another tokenizer"
        )
    keep = first_occurrences(stats.token_ids)
    p = np.exp(stats.logprobs[keep].astype(np.float64))
    alpha = -p * np.log(frequencies[stats.token_ids[keep]])
    return float(np.mean(np.minimum(alpha, clip)))
