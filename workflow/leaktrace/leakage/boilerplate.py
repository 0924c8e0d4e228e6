"""Boilerplate that annotators look past, removed from both sides of a pair
before anything is compared.

LessLeak-Bench's annotators did not call a benchmark sample a duplicate of a
file because both carry the Apache licence header, import the same modules
or start with ``# -*- coding: utf-8 -*-``. What is removed:

- StarCoder's metadata (``<reponame>...``, ``<filename>...``,
  ``<gh_stars>...``, ``<issue_start>``, ...): the corpus side's wrapping;
- licence and copyright headers and generated-file banners: a comment block
  (a run of ``#`` or ``//`` lines, a ``/* */`` block or a triple-quoted
  string block, each line optionally behind a diff's ``+``/``-``) that names
  a licence or says it was generated is dropped whole;
- import blocks, package lines, ``#include``, ``using namespace``,
  ``#pragma once``: which libraries a file uses is not what it does;
- shebang, coding and editor mode lines;
- HTML comments (``<!-- -->``): GitHub's issue and pull-request templates
  live in them and are not shown to a reader.
"""

from __future__ import annotations

import re

from leaktrace.leakage.lexer import PYTHON_IMPORT

_TAGS = re.compile(
    r"<(?:reponame|filename|gh_stars)>[^\n<]*"
    r"|<(?:issue_start|issue_comment|issue_closed|jupyter_start|jupyter_text|jupyter_code|jupyter_output|"
    r"empty_output|commit_before|commit_msg|commit_after)>"
)
_HTML_COMMENT = re.compile(r"<!--[\s\S]*?(?:-->|$)")
_DECLARATION = re.compile(
    r"^[ \t]*(?:package[ \t]+[\w.]+[ \t]*;?|import[ \t]+static[ \t]+[\w.*]+[ \t]*;|#[ \t]*include\b[^\n]*"
    r"|using[ \t]+namespace[ \t]+[\w:]+[ \t]*;|#[ \t]*pragma[ \t]+once)[ \t]*$",
    re.MULTILINE,
)
LICENCE = re.compile(
    r"licen[cs]ed\s+under|under\s+the\s+terms\s+of|licen[cs]e,?\s+version|spdx-license-identifier|copyright|©"
    r"|all\s+rights\s+reserved|permission\s+is\s+hereby\s+granted|general\s+public\s+licen[cs]e"
    r"|without\s+(?:any\s+)?warrant|merchantability|(?:apache\.org|opensource\.org|gnu\.org)/licen[cs]es"
    r"|redistribution\s+and\s+use|you\s+may\s+not\s+use\s+this\s+file|(?:mit|bsd|apache)\s+licen[cs]e",
    re.IGNORECASE,
)
GENERATED = re.compile(
    r"auto-?generated|@generated|do\s+not\s+(?:edit|modify)\b|code\s+generated\s+by"
    r"|this\s+file\s+(?:is|was|has\s+been)\s+(?:automatically\s+)?generated",
    re.IGNORECASE,
)
_MODE_LINE = re.compile(r"^[ \t]*#!|^[ \t]*#.*(?:-\*-.*-\*-|coding[:=]|\bvim?:)")
_DIFF = r"[ \t]*(?:[+-][ \t]?)?[ \t]*"
_LINE_COMMENT = re.compile(
    rf"^{_DIFF}(?://|#(?![ \t]*(?:include|define|if|ifdef|ifndef|endif|else|elif|pragma|undef|error)\b))"
)
_BLOCK_OPEN = re.compile(rf"^{_DIFF}(/\*|\"\"\"|''')")
_BLOCK_CLOSE = {"/*": "*/", '"""': '"""', "'''": "'''"}


def _comment_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """[start, end) line spans of comment blocks: runs of line comments, and
    ``/* */`` or triple-quoted blocks (from a line that opens one to the line
    that closes it)."""
    blocks = []
    i = 0
    while i < len(lines):
        line = lines[i]
        opened = _BLOCK_OPEN.match(line)
        if opened:
            close = _BLOCK_CLOSE[opened.group(1)]
            rest = line[opened.end() :]
            j = i
            while close not in rest and j + 1 < len(lines):
                j += 1
                rest = lines[j]
            blocks.append((i, j + 1))
            i = j + 1
        elif _LINE_COMMENT.match(line):
            j = i
            while j < len(lines) and _LINE_COMMENT.match(lines[j]):
                j += 1
            blocks.append((i, j))
            i = j
        else:
            i += 1
    return blocks


def strip_boilerplate(text: str) -> str:
    """``text`` without its boilerplate (the lines that remain, in order)."""
    text = _HTML_COMMENT.sub("", _TAGS.sub("", text))
    text = _DECLARATION.sub("", PYTHON_IMPORT.sub("", text))
    lines = text.split("\n")
    drop = [False] * len(lines)
    for start, end in _comment_blocks(lines):
        block = "\n".join(lines[start:end])
        if LICENCE.search(block) or GENERATED.search(block):
            drop[start:end] = [True] * (end - start)
    return "\n".join(
        line for line, d in zip(lines, drop, strict=True) if not d and line.strip() and not _MODE_LINE.match(line)
    )
