"""Neighbourhood comparison (Mattern et al., Findings of ACL 2023; CodeSnitch
Sec. 2.2): a member's loss is markedly lower than that of slightly modified
neighbours of it, a non-member's is not.

score = LL(x) - (1/k) sum_{i<=k} LL(neighbour_i), LL = mean token
log-probability, over the mean of the k neighbours as in the paper (MIMIR's
code uses the max neighbour loss instead). The neighbours here are the
sample's validated semantics-preserving variants (the first k by variant id),
which for code are more plausible neighbours than the paper's masked-LM
rewrites; that choice is CodeSnitch's critique of the original.

Orientation: higher = member."""

from __future__ import annotations

import numpy as np

from leaktrace.detect.evidence import SampleEvidence, log_likelihood


def neighbor_score(evidence: SampleEvidence, n_neighbors: int) -> float:
    neighbours = evidence.variants[:n_neighbors]
    if not neighbours:
        raise ValueError(f"{evidence.sample_id}: the neighbor method needs at least one valid variant")
    return log_likelihood(evidence.original) - float(np.mean([log_likelihood(v) for v in neighbours]))
