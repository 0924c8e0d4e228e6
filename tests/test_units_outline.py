"""A Python file's top-level definitions (leakage/units.py), found by the
symbol table and a compiled scan of the tokens instead of a whole AST: the
same units as ``ast``'s on hand-written files with what the scan must
follow (decorators, strings across lines, continuations, comments at column
0 inside a body, Unicode names), ``ast`` deciding what the scan does not
follow, and on files of the standard library (all of it and site-packages
in the slow test)."""

from __future__ import annotations

import ast
import sys
import sysconfig
import warnings
from pathlib import Path

import pytest

from leaktrace.leakage.units import Unit, _outline, _python_units


def _ast_units(text: str) -> list[Unit] | None:
    """The definition: top-level definitions from ``ast``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    lines = text.splitlines(keepends=True)
    return [
        Unit(
            "".join(lines[min([n.lineno] + [d.lineno for d in n.decorator_list]) - 1 : n.end_lineno]),
            n.name,
            min([n.lineno] + [d.lineno for d in n.decorator_list]),
            n.end_lineno,
        )
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]


FOLLOWED = [
    "def f(x):\n    return x\n",
    "import os\n\n\n@decorator\n# a comment\n@other(1,\n       2)\ndef f():\n    pass\n    # trailing\n\nx = 1\n",
    "class A(B,\n        C):\n    '''doc\n\ndef not_top():\n    '''\n# column 0 comment inside\n    y = 2\n\n\nasync  def g(): return [\n1,\n]  # end\n",
    'def f():\n    s = """\nclass X:\n"""\n    t = \'a\\\n    b\'\n    return s + \\\n  t\nif True:\n    def h(): pass\n',
    "def ﬁnd():\n    pass\nclass Ünï:\n    pass\ndefault = 1\nclass_ = 2\n",
    "def f(): pass; x = 1\nclass A: pass\n@d\nclass B:\n  x = f'{1}\"'\n  y = rb'\\''\n",
    "x = 1",
    "",
    "def f():\n    return 1",
]
AST_DECIDES = [
    "def f():\r\n    pass\r\n",  # \r line breaks
    "\ufeffdef f():\n    pass\n",  # a BOM
    "\x0cdef f():\n    pass\n",  # a form feed in the indentation
    "@ (d)\ndef f():\n    pass\n",  # a parenthesised decorator: its line is the expression's
    "def f(:\n    pass\n",  # no parse
    "nonlocal x\ndef f():\n    pass\n",  # the symbol table rejects what ast.parse accepts
    "print 'py2'\n",
]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="from 3.12 ast decides every file (f-strings hold code)")
@pytest.mark.parametrize("text", FOLLOWED)
def test_the_scan_follows_these_and_gives_asts_units(text):
    assert _outline(text) is not None
    assert _python_units(text) == _ast_units(text)


@pytest.mark.parametrize("text", AST_DECIDES)
def test_ast_decides_what_the_scan_does_not_follow(text):
    assert _outline(text) is None
    assert _python_units(text) == _ast_units(text)


def _files(root: Path, step: int = 1) -> list[str]:
    texts = []
    for path in sorted(root.rglob("*.py"))[::step]:
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError):
            continue
    return texts


def _check(texts: list[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes in the standard library's tests
        followed = 0
        for text in texts:
            assert _python_units(text) == _ast_units(text)
            followed += _outline(text) is not None
    assert followed >= (0.95 if sys.version_info < (3, 12) else 0) * len(texts)


def test_the_units_are_asts_on_a_sample_of_the_standard_library():
    _check(_files(Path(sysconfig.get_paths()["stdlib"]), step=25))


@pytest.mark.slow
def test_the_units_are_asts_on_every_installed_file():
    paths = sysconfig.get_paths()
    _check(_files(Path(paths["stdlib"])) + _files(Path(paths["purelib"])))
