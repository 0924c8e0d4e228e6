"""The values the learned verifier decides on: a few, each for something
LessLeak-Bench's annotators look at, all measured after boilerplate is
removed (:mod:`~leaktrace.leakage.boilerplate`) and the same way for Python,
Java, C and text.

- ``tokens``: how much is left to compare (log 1 + the benchmark side's
  tokens): a sample that is a licence header, a coding line or one
  ``input().split()`` line has nothing of its own to be a copy of;
- ``containment``: the code of one side inside the other, either way (the
  larger of ``code_containment`` and ``code_containment_corpus``, token
  3-grams): a function inside a file, or a file inside a sample that holds a
  bugged and a fixed version of it;
- ``lines``: edits, either way. The longest common subsequence of the two
  sides' lines (whitespace removed, lines of punctuation alone dropped;
  C-family code also cut after ``;``, ``{`` and ``}``, so that a function
  stored on one line has its statements as lines) over the lines of one
  side, the larger of the two (``lines``, ``lines_corpus`` in a verdict): an
  edited or bugged version of a body differs by a few lines and keeps the
  rest in order;
- ``alignment``: the structure, names and literals blinded (Indel
  similarity of the blind token streams on the best window): the same code
  renamed. Beside ``lines`` it tells the same code from the same task
  solved again (students' solutions of one assignment share a shape, not
  their lines);
- ``statement``, ``statement_words``: the benchmark's problem text (comments,
  docstrings, prose) found in the corpus side, and how much of it there is
  (log 1 + words).

Both directions enter as one value on purpose: the annotators call a pair a
duplicate whichever side holds the other, and LessLeak's candidates (whole
files of similar size) never show a short sample inside a long file, so a
model given the two directions apart would learn nothing about that case.
"""

from __future__ import annotations

import math
import re

from rapidfuzz.distance import LCSseq

from leaktrace.leakage.structure import as_text

FEATURES = ("tokens", "containment", "lines", "alignment", "statement", "statement_words")

_INLINE_SPACE = re.compile(r"[^\S\n]+")  # whitespace but the line breaks
_C_PIECES = re.compile(r"\n|(?<=[;{}])")  # a line break, or after ; { }
_WORD = re.compile(r"\w")


def lines(text: str, language: str | None) -> list[str]:
    """The lines of ``text`` that carry something (a word character), whitespace
    removed (cut after ``;``, ``{``, ``}`` unless ``language`` is Python or
    text). Whole-text passes: whitespace inside lines out first, then one
    split at the line breaks (and the cuts)."""
    text = _INLINE_SPACE.sub("", text)
    pieces = text.split("\n") if language in ("python", "text") else _C_PIECES.split(text)
    return [piece for piece in pieces if _WORD.search(piece)]


def line_overlap(bench: list[str], corpus: list[str]) -> tuple[float, float]:
    """(LCS / bench lines, LCS / corpus lines) of two line lists."""
    if not bench or not corpus:
        return 0.0, 0.0
    b, c = as_text(bench, corpus)
    common = LCSseq.similarity(b, c)
    return common / len(b), common / len(c)


def vector(values: dict) -> list[float]:
    """The features of a verdict's values (``Verdict.as_row()`` or the verdict
    fields), in :data:`FEATURES` order."""
    return [
        math.log1p(values["tokens"]),
        max(values["code_containment"], values["code_containment_corpus"]),
        max(values["lines"], values["lines_corpus"]),
        values["alignment"],
        values["statement"],
        math.log1p(values["statement_words"]),
    ]
