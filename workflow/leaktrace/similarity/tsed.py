"""TSED, the tree similarity of edit distance (Song et al., 2024), of a generated Python function.

TSED = max(0, (M - d) / M) with d the tree edit distance between the two
syntax trees (delete 1.0, insert 0.8, rename 1.0, the weights of the paper
and of the functional-memorization study) and M the number of nodes of the
larger tree. The paper's M = 0 case (1.0) cannot arise: every tree has at
least its ``module`` node.

Trees. By default (``nodes="all"``) every node of tree-sitter's tree, the
anonymous keyword and punctuation tokens included (``def``, ``(``, ``=``),
each labelled by its type (an anonymous token's type is its text): on the
functional-memorization paper's App. E this reproduces 9 of its 14 printed
TSED values within 0.02, against 5 with named nodes alone, and it is the
tree TSED's paper describes (tree-sitter's parse tree). ``nodes="named"``
keeps the named nodes only, as Song et al.'s public code (Etamin/TSED, also the PyPI ``tsed`` 0.1.0
package), which rebuilds the tree from tree-sitter's S-expression, where the
text of identifiers and literals is absent: renaming a variable or changing
a constant costs nothing. The functional-memorization paper relies on that
(its Table 3 calls TSED robust to variable renaming, and its App. E scores
Example 3's target 1.00 against a ground truth with other names and another
URL). That code also relabels a node that has fields by the name of its last
field (``body:``), a side effect of how it reads the S-expression; this
module keeps node types (on the App. E pairs the two differ by at most 0.03).
``leaf_text=True`` labels each leaf (an identifier, a number, a string's
text, a comment) by its type and text as well, so ``x = 1`` and ``y = 2``
differ by two renames: a stricter variant, not the paper's.

Distance. The paper computes d with APTED (the ``apted`` package in the
public code). APTED and Zhang & Shasha (1989) both compute the exact ordered
tree edit distance; they differ only in how fast. The pure-Python ``apted``
takes 0.1-3 s per pair of 100-200-node functions, over the study's budget
(1,000 pairs of functions in well under two minutes), so d is Zhang & Shasha's
dynamic programme compiled with numba; the test checks that it equals
``apted``'s distance on the fixture pairs.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit
from tree_sitter import Node

from leaktrace.similarity.python_tree import parse_tree


class EditCosts(NamedTuple):
    delete: float
    insert: float
    rename: float


PAPER_COSTS = EditCosts(delete=1.0, insert=0.8, rename=1.0)


@njit(cache=True)  # compiled once per machine (about 5 s), then loaded from __pycache__
def _zhang_shasha(
    labels1, lld1, keyroots1, labels2, lld2, keyroots2, delete, insert, rename
):  # pragma: no cover - compiled
    """Tree edit distance of two trees given in postorder: node labels (ints),
    leftmost-leaf descendants and keyroots (Zhang & Shasha, 1989)."""
    n1, n2 = labels1.shape[0], labels2.shape[0]
    tree = np.zeros((n1, n2))
    forest = np.zeros((n1 + 1, n2 + 1))
    for i in keyroots1:
        for j in keyroots2:
            a, b = lld1[i], lld2[j]
            forest[a, b] = 0.0  # row/column a, b stand for the empty forest (offset by one below)
            for x in range(a, i + 1):
                forest[x + 1, b] = forest[x, b] + delete
            for y in range(b, j + 1):
                forest[a, y + 1] = forest[a, y] + insert
            for x in range(a, i + 1):
                for y in range(b, j + 1):
                    remove = forest[x, y + 1] + delete
                    add = forest[x + 1, y] + insert
                    if lld1[x] == a and lld2[y] == b:
                        cost = 0.0 if labels1[x] == labels2[y] else rename
                        best = min(remove, add, forest[x, y] + cost)
                        forest[x + 1, y + 1] = best
                        tree[x, y] = best
                    else:
                        forest[x + 1, y + 1] = min(remove, add, forest[lld1[x], lld2[y]] + tree[x, y])
    return tree[n1 - 1, n2 - 1]


NODE_SETS = ("named", "all")


def _children(node: Node, nodes: str) -> list[Node]:
    return node.named_children if nodes == "named" else node.children


def _postorder(
    root: Node, ids: dict[str, int], leaf_text: bool, nodes: str = "named"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels (as ids shared by both trees), leftmost-leaf descendants and keyroots of the
    tree of ``nodes`` (named nodes, or every node, anonymous tokens included), in postorder
    (iterative: deeply nested code does not recurse)."""
    if nodes not in NODE_SETS:
        raise ValueError(f"TSED nodes must be one of {NODE_SETS}, got {nodes!r}")
    labels: list[int] = []
    lld: list[int] = []
    # [node, its children, next child to visit, postorder index of its first child]
    stack = [[root, _children(root, nodes), 0, -1]]
    while stack:
        top = stack[-1]
        node, children, position, first_child = top
        if position < len(children):
            top[2] += 1
            child = children[position]
            stack.append([child, _children(child, nodes), 0, -1])
            continue
        stack.pop()
        index = len(labels)
        labels.append(ids.setdefault(_label(node, leaf_text, bool(children)), len(ids)))
        lld.append(lld[first_child] if children else index)
        if stack and stack[-1][3] == -1:
            stack[-1][3] = index
    # keyroots: for each leftmost leaf, the highest node that has it
    keyroots = sorted({leaf: node for node, leaf in enumerate(lld)}.values())
    return np.array(labels, dtype=np.int64), np.array(lld, dtype=np.int64), np.array(keyroots, dtype=np.int64)


def _label(node: Node, leaf_text: bool, inner: bool) -> str:
    if inner or not leaf_text:
        return node.type
    return f"{node.type}:{node.text.decode('utf-8', errors='replace')}"


def tree_edit_distance(
    reference: str, candidate: str, costs: EditCosts = PAPER_COSTS, *, leaf_text: bool = False, nodes: str = "all"
) -> tuple[float, int]:
    """d from the reference's tree to the candidate's, and M, the larger tree's number of nodes."""
    ids: dict[str, int] = {}
    first = _postorder(parse_tree(reference), ids, leaf_text, nodes)
    second = _postorder(parse_tree(candidate), ids, leaf_text, nodes)
    distance = _zhang_shasha(*first, *second, costs.delete, costs.insert, costs.rename)
    return float(distance), max(first[0].shape[0], second[0].shape[0])


def tsed(
    reference: str, candidate: str, costs: EditCosts = PAPER_COSTS, *, leaf_text: bool = False, nodes: str = "all"
) -> float:
    """TSED of ``candidate`` (the generation) against ``reference`` (the ground truth); both dedented."""
    distance, largest = tree_edit_distance(reference, candidate, costs, leaf_text=leaf_text, nodes=nodes)
    return max(0.0, (largest - distance) / largest)
