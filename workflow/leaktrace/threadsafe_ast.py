"""`ast.parse` behind one lock, for code that parses on worker threads.

CPython 3.11 counts the AST constructor's recursion depth in state that threads
share, so two threads parsing at once can fail with ``SystemError: AST
constructor recursion depth mismatch`` (python/cpython#106905; it failed this
project's CI once, in variant validation's thread pool). Parsing is quick next to
the sandbox runs those threads wait on, so serialising it costs nothing.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str) -> ast.Module:
    """`ast.parse(source)`, one thread at a time."""
    with _LOCK:
        return ast.parse(source)
