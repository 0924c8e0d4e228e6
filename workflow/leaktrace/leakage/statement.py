"""Problem text and code of one side of a pair, told apart.

LessLeak's samples mix a problem statement with its solution, and a corpus
file may hold the same statement as a docstring, a comment or Markdown above
different code. A text's *prose* is its comments and its string literals of
at least ``PROSE_MIN_WORDS`` words (docstrings, messages); its *code* is every
other token. Prose is compared as lowercased word 3-grams, code as token
n-grams, so "same statement, other solution" and "same code, other words"
are seen separately. A "word" is a run of word characters or one punctuation
character: HumanEval/56 and /61 share every word of their docstrings and
differ only in ``<>`` against ``()``.
"""

from __future__ import annotations

import re
from itertools import compress, count

PROSE_MIN_WORDS = 4
WORD_NGRAM = 3
_WORD = re.compile(r"\w+|[^\w\s]")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def word_shingles(tokens: list[str], n: int = WORD_NGRAM) -> set[str]:
    if len(tokens) < n:
        return {" ".join(tokens)} if tokens else set()
    return set(map(" ".join, zip(*(tokens[i:] for i in range(n)), strict=False)))


def is_prose(kind: str, text: str) -> bool:
    return kind == "comment" or (kind == "string" and len(text.split()) >= PROSE_MIN_WORDS)


def problem_words(text: str, code: str, prose: list[str], language: str | None, text_language: str) -> list[str]:
    """The words of a text's problem statement: ``prose``, the words of the
    prose tokens of ``code`` (:func:`split_prose`), and the words of ``text``
    outside ``code`` (a statement before the solution); every word of a
    text-only sample (``language`` is ``text_language``)."""
    if language == text_language:
        return words(code)
    return words(text.replace(code, " ")) + prose if code != text else prose


def split_prose(kinds: list[str], texts: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(the words of the prose tokens, in order; the kinds and the texts of
    the code tokens, comments and prose strings removed) of a lexed text's
    columns (:func:`~leaktrace.leakage.lexer.lex_columns`). Only comments and
    strings are looked at one by one; the code between them is copied in
    slices (the input lists are returned when nothing is removed)."""
    prose: list[str] = []
    candidates = list(compress(count(), map(_MAYBE_PROSE.__contains__, kinds)))
    cut = [i for i in candidates if is_prose(kinds[i], texts[i])]
    if not cut:
        return prose, kinds, texts
    code_kinds: list[str] = []
    code_texts: list[str] = []
    start = 0
    for i in cut:
        code_kinds += kinds[start:i]
        code_texts += texts[start:i]
        prose += words(texts[i])
        start = i + 1
    code_kinds += kinds[start:]
    code_texts += texts[start:]
    return prose, code_kinds, code_texts


_MAYBE_PROSE = frozenset(("comment", "string"))
