"""Structure-aware similarity of two code fragments, blind to names and literals.

- ``alignment``: the normalised token alignment (Indel similarity,
  2 * LCS / (|a| + |b|)) of the blind token streams, the corpus side cut to
  the window that aligns with the benchmark side when it is longer: the
  window rapidfuzz's ``partial_ratio_alignment`` finds, widened by
  ``WIDEN`` of the benchmark's length on each side (so lines inserted or
  deleted inside the copy stay in it), then tightened to the first and last
  aligned token.
- ``shape``: the Indel similarity of the pre-order sequences of Python AST
  node types (no names, no contexts, docstrings dropped); None where either
  side does not parse (a fragment, another language).
"""

from __future__ import annotations

import ast
import textwrap
from itertools import chain

from rapidfuzz import fuzz
from rapidfuzz.distance import Indel, LCSseq

from leaktrace.leakage.units import parse_python

ALIGN_MARGIN = 1.1  # the corpus side is windowed when longer than this times the benchmark side
WIDEN = 0.25
_SKIP = (ast.expr_context, ast.Load, ast.Store, ast.Del)


def as_text(*streams: list[str]) -> list[str]:
    """Map tokens to single characters (one vocabulary for all streams) so that
    rapidfuzz compares token sequences at C speed."""
    vocab = {t: chr(0x10000 + i) for i, t in enumerate(dict.fromkeys(chain.from_iterable(streams)))}
    return ["".join(map(vocab.__getitem__, s)) for s in streams]


def best_window(bench: str, corpus: str) -> tuple[int, int] | None:
    """[start, end) of the corpus window aligned with ``bench`` (as :func:`as_text` strings), or None."""
    al = fuzz.partial_ratio_alignment(bench, corpus)
    if al is None or al.dest_end <= al.dest_start:
        return None
    return al.dest_start, al.dest_end


def alignment(bench: list[str], corpus: list[str], texts: tuple[str, str] | None = None) -> float:
    """``texts``: ``as_text(bench, corpus)`` when the caller has it already."""
    if not bench or not corpus:
        return 0.0
    b, c = texts if texts is not None else as_text(bench, corpus)
    if len(c) > ALIGN_MARGIN * len(b):
        window = best_window(b, c)
        if window is not None:
            pad = int(WIDEN * len(b))
            c = c[max(0, window[0] - pad) : window[1] + pad]
        equal = [op for op in LCSseq.opcodes(b, c) if op.tag == "equal"]
        if equal:
            c = c[equal[0].dest_start : equal[-1].dest_end]
    return Indel.normalized_similarity(b, c)


def _parse(code: str) -> ast.AST | None:
    for text in (code, textwrap.dedent(code)):
        try:
            return parse_python(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
    return None


def _docstring(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def ast_shape(code: str) -> list[str] | None:
    """Pre-order AST node types of Python ``code`` (imports and docstrings dropped), or None."""
    tree = _parse(code)
    if tree is None:
        return None
    out: list[str] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, _SKIP) or _docstring(node) or isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        out.append(type(node).__name__)
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return out


def shape_similarity(a: list[str] | None, b: list[str] | None) -> float | None:
    if a is None or b is None or len(a) <= 1 or len(b) <= 1:
        return None
    x, y = as_text(a, b)
    if len(y) > ALIGN_MARGIN * len(x):  # a function inside a longer unit: its best window
        window = best_window(x, y)
        if window is not None:
            y = y[window[0] : window[1]]
    return Indel.normalized_similarity(x, y)
