"""The programming languages the project reads, as token patterns and
keyword sets: Python's, the C family's (Java, JavaScript, C, C++, Go, Rust,
C#, ...) and plain problem text's. The scan's lexer (``leakage/lexer.py``)
and the C-family mutations and renamers (``mutate/``) share them, so a
keyword is one the whole project treats as such."""

from __future__ import annotations

import keyword
import re

_NUMBER = r"0[xXoObB][0-9a-fA-F_]+[lLuU]*|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?[jJlLfFdDuU]*"

PYTHON = re.compile(
    r"(?P<comment>\#[^\n]*)"
    r"|(?P<string>[rRbBuUfF]{0,2}(?:\"\"\"[\s\S]*?(?:\"\"\"|$)|'''[\s\S]*?(?:'''|$)|\"(?:\\.|[^\"\\\n])*\"?|'(?:\\.|[^'\\\n])*'?))"
    rf"|(?P<number>{_NUMBER})"
    r"|(?P<name>[^\W\d]\w*)"
    r"|(?P<op>\*\*=?|//=?|>>=?|<<=?|->|:=|[-+*/%@&|^<>=!]=|[^\w\s])"
)
C_LIKE = re.compile(
    r"(?P<comment>//[^\n]*|/\*[\s\S]*?(?:\*/|$))"
    r"|(?P<string>\"(?:\\.|[^\"\\\n])*\"?|'(?:\\.|[^'\\\n])*'?|`(?:\\.|[^`\\])*`?)"
    rf"|(?P<number>{_NUMBER})"
    r"|(?P<name>[^\W\d][\w$]*)"
    r"|(?P<op>>>>=?|===|!==|\+\+|--|&&|\|\||->|=>|::|<<=?|>>=?|[-+*/%&|^<>=!]=|[^\w\s])"
)
TEXT = re.compile(r"(?P<word>\w+)|(?P<op>[^\w\s])")
PYTHON_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]+(?:\([^)]*\)|[^\n]*)|import[ \t]+[^\n]*)", re.MULTILINE
)

C_KEYWORDS = frozenset(
    "abstract assert boolean break byte case catch char class const continue default do double else enum extends "
    "final finally float for goto if implements import instanceof int interface long native new package private "
    "protected public return short static strictfp super switch synchronized this throw throws transient try void "
    "volatile while true false null var let function async await yield typeof delete in of export from debugger "
    "with undefined record sealed permits struct union unsigned signed sizeof typedef extern register auto inline "
    "namespace template typename using virtual override nullptr bool fn pub mut impl trait match loop func go "
    "chan defer map range type select fallthrough package".split()
)
PYTHON_KEYWORDS = frozenset(keyword.kwlist)

LANGUAGES = ("text", "python", "java", "javascript", "c", "cpp", "go", "rust", "typescript", "csharp")
