"""The tree-sitter Python parser shared by the structural metrics.

CodeBLEU and TSED both read tree-sitter's concrete syntax tree of Python,
from tree-sitter 0.26 with the tree-sitter-python 0.21.0 grammar, both
pinned: node types are part of the scores, and 0.21.0 is the grammar the PyPI
codebleu package runs with (with grammar 0.25 the trees differ, e.g. ``not
in`` has become a node, and the syntax match no longer equals the package's
on several fixture pairs, by up to 0.01).

tree-sitter never refuses input: where the code is not valid Python it
inserts ERROR and MISSING nodes, and both metrics would score that broken
tree. ``parses`` is the test the structural family applies first, so a code
that does not parse is counted as a parse failure instead of scored.
"""

import warnings
from functools import cache

import tree_sitter_python
from tree_sitter import Language, Node, Parser


@cache
def _parser() -> Parser:
    with warnings.catch_warnings():
        # Grammar 0.21 hands over its language as an int pointer, which
        # tree-sitter 0.26 still accepts with a DeprecationWarning.
        warnings.simplefilter("ignore", DeprecationWarning)
        return Parser(Language(tree_sitter_python.language()))


def parse_tree(code: str) -> Node:
    """The root node of ``code``'s tree-sitter syntax tree (UTF-8)."""
    return _parser().parse(code.encode("utf-8")).root_node


def parses(code: str) -> bool:
    """Whether tree-sitter parses ``code`` without an ERROR or MISSING node."""
    return not parse_tree(code).has_error
