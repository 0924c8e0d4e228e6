"""The mixed continued-pretraining corpus of the SrDetection testbed: member
samples mixed with general text at a code:text ratio counted in tokens
(1:5 by default, as in the paper), so code is a minority of what the model sees."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class MixItem:
    kind: str  # "member" or "text"
    source_id: str
    text: str
    n_tokens: int


def paragraph_chunks(text: str, count_tokens: Callable[[str], int], max_tokens: int) -> list[str]:
    """Split a document on blank lines and greedily regroup the paragraphs into
    chunks of at most ``max_tokens`` (a single longer paragraph stays whole and
    is truncated at training time)."""
    chunks, current, used = [], [], 0
    for para in (p for p in text.split("\n\n") if p.strip()):
        n = count_tokens(para)
        if current and used + n > max_tokens:
            chunks.append("\n\n".join(current))
            current, used = [], 0
        current.append(para)
        used += n
    if current:
        chunks.append("\n\n".join(current))
    return chunks


def build_mix(
    members: Sequence[tuple[str, str]],
    text_docs: Sequence[tuple[str, str]],
    *,
    text_per_code: float,
    count_tokens: Callable[[str], int],
    chunk_tokens: int,
    rng: random.Random,
) -> list[MixItem]:
    """Members as whole samples; general-text chunks drawn without replacement
    (reshuffled and reused only if the text runs out) until the text tokens
    reach ``text_per_code`` times the code tokens. Returned in shuffled order."""
    if not members:
        raise ValueError("the training mix needs at least one member sample")
    items = [MixItem("member", sid, text, count_tokens(text)) for sid, text in members]
    code_tokens = sum(i.n_tokens for i in items)
    pool = [
        MixItem("text", f"{doc_id}#{k}", chunk, count_tokens(chunk))
        for doc_id, text in text_docs
        for k, chunk in enumerate(paragraph_chunks(text, count_tokens, chunk_tokens))
    ]
    if text_per_code > 0 and not pool:
        raise ValueError("the training mix asks for general text but the text corpus is empty")
    goal, drawn = text_per_code * code_tokens, 0
    while drawn < goal:
        order = rng.sample(pool, len(pool))
        for chunk in order:
            if drawn >= goal:
                break
            items.append(chunk)
            drawn += chunk.n_tokens
    rng.shuffle(items)
    return items
