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

from leaktrace.leakage.lexer import Token

PROSE_MIN_WORDS = 4
WORD_NGRAM = 3
_WORD = re.compile(r"\w+|[^\w\s]")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def word_shingles(tokens: list[str], n: int = WORD_NGRAM) -> set[str]:
    if len(tokens) < n:
        return {" ".join(tokens)} if tokens else set()
    return set(map(" ".join, zip(*(tokens[i:] for i in range(n)), strict=False)))


def is_prose(token: Token) -> bool:
    return token.kind == "comment" or (token.kind == "string" and len(token.text.split()) >= PROSE_MIN_WORDS)


def problem_words(text: str, code: str, tokens: list[Token], language: str | None, text_language: str) -> list[str]:
    """The words of a text's problem statement: its prose tokens (``tokens``,
    lexed from ``code`` with comments), and the words of ``text`` outside
    ``code`` (a statement before the solution); every word of a text-only
    sample (``language`` is ``text_language``)."""
    if language == text_language:
        return words(code)
    prose, _ = split_prose(tokens)
    return words(text.replace(code, " ")) + prose if code != text else prose


def split_prose(tokens: list[Token]) -> tuple[list[str], list[Token]]:
    """(the words of the prose tokens, in order; the code tokens, comments and prose strings removed)."""
    prose: list[str] = []
    code: list[Token] = []
    for t in tokens:
        if is_prose(t):
            prose += words(t.text)
        elif t.kind != "comment":
            code.append(t)
    return prose, code
