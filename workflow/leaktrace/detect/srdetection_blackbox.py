"""SrDetection, black-box (SrDetection paper, Sec. 3.3, "Black-box Detection
via Generation Similarity"; N = 7 in its App. A): for each text x_i in
{x_0} ∪ V (the original and its n variants), the model greedily continues a
prefix of x_i, and the continuation c_i is compared with the true suffix s_i
by n-gram overlap

    NGO_i = |N-grams(c_i) ∩ N-grams(s_i)| / |N-grams(s_i)|   (sets of grams).

The sample is flagged leaked iff NGO_0 > max_{i>=1} NGO_i. Threshold-free.
For AUC the continuous score is NGO_0 - max_i NGO_i: positive exactly when
the sample is flagged. Orientation: higher = member.

Grams are over the model's tokens, as the paper defines them ("consecutive
N-token sequences"): the split into prefix and suffix is made on the same
tokens the model reads and writes, and a token n-gram is a unit of the
model's own output. To treat the continuation and the suffix alike, both are
tokenised on their own (the suffix is the decoded tail of the text's tokens,
the continuation the decoded generation), and both are cut to the generation
budget, min(suffix length, ``max_new_tokens``) tokens of the scored model's
tokenizer: a continuation never gains overlap by running past the text it is
compared with, and the suffix is never compared beyond what the model was
allowed to generate, so a model that continues with the exact true text
scores NGO = 1 whatever the suffix's length. A suffix (so cut) shorter than
N tokens has no grams: its NGO is undefined (NaN); such variants are left
out of the max, and a sample whose original has no NGO is not scored.

The prefix holds ``floor(prefix_fraction * n_tokens)`` tokens of the text,
at least one, leaving at least one for the suffix. A text is first cut to the
model's context (``max_length`` - 1 tokens after BOS), as the scoring passes
cut it, so prompt and continuation never run past the positions the model
was trained on."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from leaktrace.models.backend import LanguageModel


@dataclass(frozen=True)
class GenerationEvidence:
    """The n-gram overlaps of one sample: of its original and of its valid
    variants in variant-id order (NaN-free)."""

    sample_id: str
    original: float
    variants: tuple[float, ...]


def split_prefix_suffix(ids: Sequence[int], prefix_fraction: float) -> tuple[list[int], list[int]]:
    if not 0 < prefix_fraction < 1:
        raise ValueError(f"prefix_fraction must be in (0, 1), got {prefix_fraction}")
    if len(ids) < 2:
        raise ValueError(f"a text of {len(ids)} tokens cannot be split into a prefix and a suffix")
    cut = min(max(1, math.floor(prefix_fraction * len(ids))), len(ids) - 1)
    return list(ids[:cut]), list(ids[cut:])


def ngrams(ids: Sequence[int], n: int) -> set[tuple[int, ...]]:
    if n < 1:
        raise ValueError(f"n-gram length must be at least 1, got {n}")
    return {tuple(ids[i : i + n]) for i in range(len(ids) - n + 1)}


def ngram_overlap(generated: Sequence[int], suffix: Sequence[int], n: int) -> float:
    """NGO = |grams(generated) ∩ grams(suffix)| / |grams(suffix)|; NaN when
    the suffix has fewer than n tokens."""
    truth = ngrams(suffix, n)
    if not truth:
        return float("nan")
    return len(ngrams(generated, n) & truth) / len(truth)


class _TokenBudget:
    """Stop condition: the continuation has at least ``limit`` tokens."""

    def __init__(self, encode, limit: int):
        self.encode, self.limit = encode, limit

    def __call__(self, text: str) -> bool:
        return len(self.encode(text)) >= self.limit


def continuation_overlaps(
    lm: LanguageModel,
    texts: Sequence[tuple[str, int, str]],
    *,
    prefix_fraction: float = 0.5,
    ngram: int = 7,
    max_new_tokens: int = 256,
) -> list[dict]:
    """Greedy continuations of every text's prefix, generated in one batched
    call, and their n-gram overlap with the true suffix.

    ``texts`` holds (sample_id, variant_id, text) for the originals
    (variant 0) and their valid variants. Each returned row has sample_id,
    variant_id, prefix_tokens, suffix_tokens (the whole true suffix),
    generated (the continuation, cut to the budget), generated_ids,
    suffix_ids (the true suffix cut to the budget: what the overlap compares
    with) and ngo; the ids allow recomputing the overlap for another n
    without generating again. Continuations stop at the budget or at EOS."""
    splits = []
    for sample_id, variant_id, text in texts:
        try:
            splits.append(split_prefix_suffix(lm.encode(text)[: lm.max_length - 1], prefix_fraction))
        except ValueError as error:
            raise ValueError(f"{sample_id} variant {variant_id}: {error}") from None
    suffix_texts = [lm.decode(suffix) for _, suffix in splits]
    suffix_ids = [lm.encode(s) for s in suffix_texts]
    budgets = [min(len(s), max_new_tokens) for s in suffix_ids]
    generated = lm.generate(
        [prefix for prefix, _ in splits],
        max_new_tokens=max(budgets, default=1),
        stops=[_TokenBudget(lm.encode, b) for b in budgets],
    )
    rows = []
    for (sample_id, variant_id, _), (prefix, suffix), suffix_text_ids, budget, continuation in zip(
        texts, splits, suffix_ids, budgets, generated, strict=True
    ):
        truth = suffix_text_ids[:budget]
        generated_ids = lm.encode(continuation)[:budget]
        rows.append(
            {
                "sample_id": sample_id,
                "variant_id": variant_id,
                "prefix_tokens": len(prefix),
                "suffix_tokens": len(suffix),
                "generated": lm.decode(generated_ids),
                "generated_ids": generated_ids,
                "suffix_ids": truth,
                "ngo": ngram_overlap(generated_ids, truth, ngram),
            }
        )
    return rows


def generation_evidence(rows: Iterable[dict], ngram: int | None = None) -> tuple[list[GenerationEvidence], list[str]]:
    """Group per-text rows by sample: (evidence for every sample whose
    original has an NGO, sorted by sample id; the ids of the samples left
    out). With ``ngram`` the overlaps are recomputed from the stored ids for
    that n; otherwise the rows' ``ngo`` is used."""
    by_sample: dict[str, dict[int, float]] = defaultdict(dict)
    for row in rows:
        ngo = row["ngo"] if ngram is None else ngram_overlap(row["generated_ids"], row["suffix_ids"], ngram)
        if row["variant_id"] in by_sample[row["sample_id"]]:
            raise ValueError(f"{row['sample_id']}: variant {row['variant_id']} appears twice")
        by_sample[row["sample_id"]][row["variant_id"]] = ngo
    evidence, skipped = [], []
    for sample_id in sorted(by_sample):
        overlaps = by_sample[sample_id]
        original = overlaps.get(0, float("nan"))
        if math.isnan(original):
            skipped.append(sample_id)
            continue
        variants = tuple(v for vid, v in sorted(overlaps.items()) if vid > 0 and not math.isnan(v))
        evidence.append(GenerationEvidence(sample_id, original, variants))
    return evidence, skipped


def blackbox_gap(evidence: GenerationEvidence, n_variants: int) -> float:
    variants = evidence.variants[:n_variants]
    if not variants:
        raise ValueError(f"{evidence.sample_id}: SrDetection needs at least one valid variant")
    return evidence.original - max(variants)


def blackbox_flag(evidence: GenerationEvidence, n_variants: int) -> bool:
    return blackbox_gap(evidence, n_variants) > 0


def blackbox_decisions(rows: Iterable[dict], n_variants: int, ngram: int | None = None) -> list[dict]:
    """Per-sample results from per-text rows: sample_id, n_variants (used),
    ngo_original, ngo_max_variant, score (the gap, higher = member) and
    decision (leaked). Samples without an original NGO or without a variant
    NGO are left out; ``generation_evidence`` says which."""
    evidence, _ = generation_evidence(rows, ngram)
    out = []
    for e in evidence:
        used = e.variants[:n_variants]
        if not used:
            continue
        out.append(
            {
                "sample_id": e.sample_id,
                "n_variants": len(used),
                "ngo_original": e.original,
                "ngo_max_variant": max(used),
                "score": blackbox_gap(e, n_variants),
                "decision": blackbox_flag(e, n_variants),
            }
        )
    return out
