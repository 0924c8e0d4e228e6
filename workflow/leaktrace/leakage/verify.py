"""Verification of candidate pairs: exact shingle Jaccard and containment, and
the clone type, with the values behind each decision.

- Type-1: the layout streams are identical (modulo whitespace, layout,
  comments; in Python also imports);
- Type-2: the consistently renamed streams are identical (modulo identifiers
  and literals). A Type-2 pair is a duplicate when only identifiers differ
  (``literals_equal``); when literals differ too it must also overlap as text
  (shingle Jaccard or containment above its threshold): HumanEval/56 and /61
  are the same template with ``<>`` swapped for ``()``, a Type-2 pair that is
  not the same problem;
- Type-3: the blind-normalised streams are near-identical: Indel similarity
  (rapidfuzz; 1 - indel distance / total length) at least ``type3_similarity``,
  a duplicate only when the texts themselves overlap (shingle Jaccard or
  containment above its threshold), so two unrelated functions of the same
  shape are not called duplicates;
- otherwise not a duplicate.

When the corpus text is longer than the benchmark text (a benchmark function
inside a class or a long file), the comparison is made against the window of
the corpus tokens that aligns best with the benchmark (rapidfuzz
``partial_ratio_alignment`` on the blind streams); ``aligned`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz import fuzz
from rapidfuzz.distance import Indel

from leaktrace.leakage.lexer import Token, blind_stream, keywords_for, layout_stream, lex, renamed_stream
from leaktrace.leakage.tokens import shingle_set

CLONE_TYPES = ("type-1", "type-2", "type-3")
ALIGN_MARGIN = 1.1  # the corpus side is windowed when longer than this times the benchmark side


@dataclass(frozen=True)
class VerifySettings:
    tokenizer: str
    ngram: int
    jaccard: float = 0.7
    containment: float = 0.8
    type3_similarity: float = 0.8


@dataclass
class Side:
    """What verification needs of one text, computed once."""

    shingles: set[str]
    tokens: list[Token]
    language: str | None

    @property
    def keywords(self) -> frozenset[str]:
        return keywords_for(self.language)


@dataclass(frozen=True)
class Verdict:
    jaccard: float
    containment: float
    similarity: float
    layout_equal: bool
    renamed_equal: bool
    aligned: bool
    literals_equal: bool
    flagged: bool  # LessLeak's automated criterion: exact Jaccard (or containment) above threshold
    clone_type: str  # type-1, type-2, type-3 or none
    duplicate: bool


def _as_text(*streams: list[str]) -> list[str]:
    """Map tokens to single characters (one vocabulary for all streams) so that
    rapidfuzz compares token sequences at C speed."""
    vocab: dict[str, str] = {}
    return ["".join(vocab.setdefault(t, chr(0x10000 + len(vocab))) for t in s) for s in streams]


class Verifier:
    def __init__(self, settings: VerifySettings):
        self.s = settings

    def side(self, text: str, language: str | None, code: str | None = None) -> Side:
        """``text``'s shingles; the tokens of ``code`` when given (a benchmark
        sample's problem text and code are shingled together, its clone type
        judged on its code), else of ``text``."""
        return Side(shingle_set(text, self.s.tokenizer, self.s.ngram), lex(text if code is None else code, language), language)

    def verify(self, bench: Side, corpus: Side) -> Verdict:
        inter = len(bench.shingles & corpus.shingles)
        union = len(bench.shingles | corpus.shingles)
        jaccard = inter / union if union else 0.0
        containment = inter / len(bench.shingles) if bench.shingles else 0.0
        flagged = jaccard >= self.s.jaccard or containment >= self.s.containment
        kw = bench.keywords
        b_tokens, c_tokens = bench.tokens, corpus.tokens
        b_blind = blind_stream(b_tokens, kw)
        aligned = False
        if b_tokens and len(c_tokens) > ALIGN_MARGIN * len(b_tokens):
            b_text, c_text = _as_text(b_blind, blind_stream(c_tokens, kw))
            al = fuzz.partial_ratio_alignment(b_text, c_text)
            if al is not None and al.dest_end > al.dest_start:
                c_tokens = c_tokens[al.dest_start : al.dest_end]
                aligned = True
        c_blind = blind_stream(c_tokens, kw)
        b_text, c_text = _as_text(b_blind, c_blind)
        similarity = Indel.normalized_similarity(b_text, c_text) if b_tokens or c_tokens else 0.0
        layout_equal = bool(b_tokens) and layout_stream(b_tokens) == layout_stream(c_tokens)
        renamed_equal = bool(b_tokens) and renamed_stream(b_tokens, kw) == renamed_stream(c_tokens, kw)
        literals_equal = [t.text for t in b_tokens if t.kind in ("string", "number")] == [
            t.text for t in c_tokens if t.kind in ("string", "number")]
        if layout_equal:
            clone, duplicate = "type-1", True
        elif renamed_equal:
            clone, duplicate = "type-2", literals_equal or flagged
        elif similarity >= self.s.type3_similarity:
            clone, duplicate = "type-3", flagged
        else:
            clone, duplicate = "none", False
        return Verdict(jaccard, containment, similarity, layout_equal, renamed_equal, aligned, literals_equal, flagged,
                       clone, duplicate)
