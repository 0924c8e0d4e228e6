"""A small lexer for clone classification: comments and whitespace dropped,
strings, numbers, names and operators kept with their kind, for Python and
C-family languages (Java, JavaScript, C, C++, Go, Rust, ...). Regex-based on
purpose: it must accept fragments (a function cut out of a file, a window of a
huge file) that a real parser would reject.

Three token streams come out of it, all aligned with the token list:

- ``layout``: the tokens themselves, whitespace inside string literals
  collapsed (Type-1: identical modulo whitespace, layout and comments);
- ``renamed``: identifiers renamed consistently by first occurrence
  (``$0``, ``$1``, ...), strings to ``STR``, numbers to ``NUM`` (Type-2);
- ``blind``: every identifier ``ID``, strings ``STR``, numbers ``NUM`` (the
  normalised sequence Type-3 similarity is measured on).

The streams take (kind, text) pairs: :class:`Token` lists, or the two
columns of :func:`lex_columns` zipped. The verifier lexes both sides of every
pair, so it reads the columns (the kinds and the texts as two lists, built by
C loops over the matches, no object per token beyond its text).

Problem text (``language`` ``text``: a text-only benchmark sample, and the
corpus text it is compared with) lexes as words and punctuation; a word is
never renamed or blinded, so two texts are Type-1 only when their words agree
and their Type-3 similarity is measured on the words themselves.

In Python, import statements are not part of a function's code and are
removed before lexing, so a function copied into a file with other imports
still reads as the same code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import partial
from itertools import compress
from operator import attrgetter
from typing import NamedTuple

from leaktrace.languages import C_KEYWORDS, C_LIKE, LANGUAGES, PYTHON, PYTHON_IMPORT, PYTHON_KEYWORDS, TEXT


class Token(NamedTuple):  # a tuple: a file's tokens are made by the hundred thousand
    kind: str  # string, number, name, op; word in text
    text: str


def lex(text: str, language: str | None, *, comments: bool = False) -> list[Token]:
    """Tokens of ``text``, without comments unless ``comments`` (kind
    ``comment``); ``language`` None or unknown lexes as Python if the text has
    no C-style comment markers, else as C-like."""
    return list(map(_token, zip(*lex_columns(text, language, comments=comments), strict=True)))


def lex_columns(text: str, language: str | None, *, comments: bool = False) -> tuple[list[str], list[str]]:
    """:func:`lex` as two parallel lists, the kinds and the texts of the
    tokens: no object per token beyond its text, every loop over the tokens
    in C (the verifier lexes both sides of every pair)."""
    if language is None or language not in LANGUAGES:
        language = "python" if "/*" not in text and "//" not in text else "c"
    if language == "text":
        pattern = TEXT
    elif language == "python":
        text = PYTHON_IMPORT.sub("", text)
        pattern = PYTHON
    else:
        pattern = C_LIKE
    matches = list(pattern.finditer(text))
    kinds = list(map(_KIND, matches))
    texts = list(map(_TEXT, matches))
    if not comments and "comment" in kinds:
        keep = list(map("comment".__ne__, kinds))
        kinds, texts = list(compress(kinds, keep)), list(compress(texts, keep))
    return kinds, texts


_KIND = attrgetter("lastgroup")
_TEXT = re.Match.group  # group 0: the token's text
_token = partial(tuple.__new__, Token)  # Token from a (kind, text) pair without the constructor's call overhead


def keywords_for(language: str | None) -> frozenset[str]:
    return PYTHON_KEYWORDS if language in (None, "python") else C_KEYWORDS


def layout_stream(tokens: Iterable[tuple[str, str]]) -> list[str]:
    return [" ".join(text.split()) if kind == "string" else text for kind, text in tokens]


def renamed_stream(tokens: Iterable[tuple[str, str]], keywords: frozenset[str]) -> list[str]:
    names: dict[str, str] = {}
    out = []
    append = out.append
    for kind, text in tokens:
        if kind == "name":
            if text in keywords:
                append(text)
            else:
                renamed = names.get(text)
                if renamed is None:
                    renamed = names[text] = f"${len(names)}"
                append(renamed)
        else:
            append(_LITERAL.get(kind, text))
    return out


_LITERAL = {"string": "STR", "number": "NUM"}


def blind_stream(tokens: Iterable[tuple[str, str]], keywords: frozenset[str]) -> list[str]:
    # one comprehension, no method calls: the verifier computes this stream for both sides of every pair
    return [
        ("ID" if text not in keywords else text)
        if kind == "name"
        else "STR"
        if kind == "string"
        else "NUM"
        if kind == "number"
        else text
        for kind, text in tokens
    ]
