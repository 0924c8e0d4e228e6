"""CodeBLEU (Ren et al., 2020) of a generated Python function against the ground truth, pair by pair.

The functional-memorization paper reports CodeBLEU with equal weights
(0.25 x BLEU + 0.25 x keyword-weighted BLEU + 0.25 x syntax match + 0.25 x
dataflow match) and the syntax and dataflow components on their own. The
reference implementation is the PyPI package ``codebleu`` 0.7.0, which cannot
run here: it pins tree-sitter 0.22 (with newer grammars every language
fails), and this project uses tree-sitter 0.26. This module re-implements its
Python path on tree-sitter 0.26 with the grammar the package works with
(tree-sitter-python 0.21.0, see ``python_tree``), step for step:

- inputs are stripped and split on whitespace for both BLEU terms;
- BLEU is nltk's corpus BLEU-4 with Chen & Cherry method 1 (the package
  vendors that same nltk code); the weighted term counts the ground truth's
  n-grams (a recall), unigrams weighted 1 for the package's 38 Python keywords
  and 0.2 for any other token, with the package's brevity penalty, which
  takes 2 for the reference's length (see ``weighted_ngram_match``);
- syntax match: comments and docstrings removed (the package's tokenizer
  pass), then the share of the ground truth's subtrees (the S-expression of
  the root and of every node with children) that also occur in the generation;
- dataflow match: the package's ``DFG_python`` graph, variables renamed in
  order of appearance, and the share of the ground truth's edges matched
  one-to-one in the generation.

Every component of the package is corpus-level (sums over all pairs before
dividing); here each pair is its own corpus, as the paper scores per function.
``tests/data/codebleu_fixtures.json`` holds the package's values on a fixture
set (made by ``tests/data/make_codebleu_fixtures.py`` in a throwaway
environment with the package) and ``tests/test_similarity_structural.py``
checks that these functions reproduce them.

Two deliberate departures, both where the package is silent or random:

- No dataflow. When the ground truth yields no dataflow edge the package
  returns a dataflow match of 0 (with a logged warning) and its total then
  uses ``dataflow or 1``, i.e. 1 - and because of the ``or`` also turns a real
  dataflow match of 0 into 1. Here the dataflow match is ``None`` when the
  ground truth has no edge (the structural family reports it as null with the
  outcome ``no_dataflow``), a real 0 stays 0, and the total is then the
  other three components with their weights rescaled to sum to 1 (with equal
  weights: their mean).
- Merge order. The package merges the parents of a variable with
  ``list(set(...))``, whose order depends on the interpreter's string hash
  seed and changes the renaming of variables (11 of the 72 fixture pairs
  vary across five seeds, by up to 0.085); here the merge keeps first-seen
  order, so results are identical across runs.
"""

from __future__ import annotations

import io
import math
import tokenize
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu
from nltk.util import ngrams
from tree_sitter import Node

from leaktrace.similarity.python_tree import parse_tree

# The package's keywords/python.txt (Python's keywords and its soft keywords
# match, case and type).
PYTHON_KEYWORDS = frozenset(
    "False None True and as assert async await break class continue def del elif else except finally for "
    "from global if import in is lambda nonlocal not or pass raise return try while with yield "
    "match case type".split()
)
_KEYWORD_WEIGHT, _OTHER_WEIGHT = 1.0, 0.2
_EPSILON = 0.1  # Chen & Cherry method 1, as in the package
_SMOOTHING = SmoothingFunction(epsilon=_EPSILON).method1
_ORDERS = (1, 2, 3, 4)
_WEIGHT = 0.25  # BLEU's uniform weight of each n-gram order
_WEIGHTED_REFERENCE_LENGTH = 2


EQUAL_WEIGHTS = (0.25, 0.25, 0.25, 0.25)


@dataclass(frozen=True)
class CodeBLEU:
    """The four components, each in [0, 1]; ``dataflow`` is None when the ground truth has no dataflow edge."""

    ngram: float
    weighted_ngram: float
    syntax: float
    dataflow: float | None

    def total(self, weights: tuple[float, float, float, float] = EQUAL_WEIGHTS) -> float:
        """The weighted sum of the components (n-gram, weighted n-gram, syntax, dataflow);
        without dataflow, the other three with their weights rescaled to sum to 1."""
        parts = [self.ngram, self.weighted_ngram, self.syntax, self.dataflow]
        used = [(w, part) for w, part in zip(weights, parts, strict=True) if part is not None]
        return math.fsum(w * part for w, part in used) / math.fsum(w for w, _ in used)


# --- n-gram terms ----------------------------------------------------------


def ngram_match(reference: list[str], hypothesis: list[str]) -> float:
    """BLEU-4 of the hypothesis tokens against the reference tokens (the package's ``bleu.corpus_bleu``)."""
    return float(corpus_bleu([[reference]], [hypothesis], smoothing_function=_SMOOTHING))


def weighted_ngram_match(reference: list[str], hypothesis: list[str]) -> float:
    """The package's ``weighted_ngram_match.corpus_bleu`` for one pair.

    Per order n: the reference's n-gram counts clipped by the hypothesis's,
    over the reference's counts (unigrams weighted by token: keywords 1,
    others 0.2; every denominator at least 1), and the package's brevity
    penalty (see below).
    """
    weights = {token: _KEYWORD_WEIGHT if token in PYTHON_KEYWORDS else _OTHER_WEIGHT for token in reference}
    fractions = []
    for n in _ORDERS:
        ref_counts = Counter(ngrams(reference, n)) if len(reference) >= n else Counter()
        hyp_counts = Counter(ngrams(hypothesis, n)) if len(hypothesis) >= n else Counter()
        clipped = {gram: min(count, hyp_counts[gram]) for gram, count in ref_counts.items()}
        weight = (lambda gram: weights[gram[0]]) if n == 1 else (lambda gram: 1)
        numerator = sum(count * weight(gram) for gram, count in clipped.items())
        denominator = max(1, sum(count * weight(gram) for gram, count in ref_counts.items()))
        fractions.append((numerator, denominator))
    if fractions[0][0] == 0:
        return 0.0
    # The package's brevity penalty takes the length of its [tokens, weights]
    # pair, 2, for the reference's length: a penalty only for 1- or 2-token
    # hypotheses.
    penalty = _brevity_penalty(_WEIGHTED_REFERENCE_LENGTH, len(hypothesis))
    return penalty * math.exp(
        math.fsum(_WEIGHT * math.log((numerator or _EPSILON) / denominator) for numerator, denominator in fractions)
    )


def _brevity_penalty(ref_len: int, hyp_len: int) -> float:
    if hyp_len > ref_len:
        return 1.0
    if hyp_len == 0:
        return 0.0
    return math.exp(1 - ref_len / hyp_len)


# --- comments and docstrings -----------------------------------------------


def remove_comments_and_docstrings(source: str) -> str:
    """The package's ``remove_comments_and_docstrings`` for Python.

    Drops comments, blank lines and every string token that follows an
    INDENT or NEWLINE token or starts at column 0 (docstrings, and with them
    any other string statement). Raises what ``tokenize`` raises on code it
    cannot tokenize; the callers then keep the code as it is, as the package does.
    """
    out = []
    prev_type = tokenize.INDENT
    last_line, last_col = -1, 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        (start_line, start_col), (end_line, end_col) = token.start, token.end
        if start_line > last_line:
            last_col = 0
        if start_col > last_col:
            out.append(" " * (start_col - last_col))
        if token.type == tokenize.COMMENT:
            pass
        elif token.type == tokenize.STRING:
            if prev_type != tokenize.INDENT and prev_type != tokenize.NEWLINE and start_col > 0:
                out.append(token.string)
        else:
            out.append(token.string)
        prev_type = token.type
        last_col, last_line = end_col, end_line
    return "\n".join(line for line in "".join(out).split("\n") if line.strip())


@lru_cache(maxsize=1024)  # a ground truth is compared with two generations
def _without_comments(code: str) -> str:
    try:
        return remove_comments_and_docstrings(code)
    except Exception:  # noqa: BLE001 - the package keeps the code on any tokenizer failure
        return code


# --- syntax match ------------------------------------------------------------


def _subtrees(root: Node) -> list[str]:
    """S-expressions of the root and of every node below it that has children."""
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        out.append(str(node))
        stack.extend(child for child in node.children if child.child_count)
    return out


@lru_cache(maxsize=1024)
def _code_subtrees(code: str) -> tuple[str, ...]:
    return tuple(_subtrees(parse_tree(_without_comments(code))))


def syntax_match(reference: str, candidate: str) -> float:
    """Share of the reference's subtrees that occur (anywhere) in the candidate's tree."""
    ref = _code_subtrees(reference)
    cand = set(_code_subtrees(candidate))
    return sum(subtree in cand for subtree in ref) / len(ref)


# --- dataflow match ----------------------------------------------------------

_Index = tuple[tuple[int, int], tuple[int, int]]
_Edge = tuple[str, int, str, list[str], list[int]]


def _is_token(node: Node) -> bool:
    return (
        node.child_count == 0 or node.type in ("string_literal", "string", "character_literal")
    ) and node.type != "comment"


def _span(node: Node) -> _Index:
    return (tuple(node.start_point), tuple(node.end_point))


def _token_index(node: Node) -> list[_Index]:
    if _is_token(node):
        return [_span(node)]
    return [index for child in node.children for index in _token_index(child)]


def _variable_index(node: Node, index_to_code: dict) -> list[_Index]:
    """Spans of the tokens under ``node`` whose text differs from their node type (names, literals)."""
    if _is_token(node):
        _, code = index_to_code[_span(node)]
        return [_span(node)] if node.type != code else []
    return [index for child in node.children for index in _variable_index(child, index_to_code)]


def _span_text(index: _Index, lines: list[str]) -> str:
    (start_row, start_col), (end_row, end_col) = index
    if start_row == end_row:
        return lines[start_row][start_col:end_col]
    return lines[start_row][start_col:] + "".join(lines[start_row + 1 : end_row]) + lines[end_row][:end_col]


def _union(first: list, second: list) -> list:
    """The package's ``list(set(first + second))`` in first-seen order (see the module docstring)."""
    return list(dict.fromkeys(first + second))


def _merge_by_key(edges: list[_Edge]) -> list[_Edge]:
    merged: dict[tuple, list] = {}
    for name, idx, relation, parents, parent_idx in edges:
        key = (name, idx, relation)
        if key not in merged:
            merged[key] = [parents, parent_idx]
        else:
            merged[key][0] = _union(merged[key][0], parents)
            merged[key][1] = sorted(set(merged[key][1] + parent_idx))
    return [(*key, value[0], value[1]) for key, value in sorted(merged.items(), key=lambda t: t[0][1])]


def _pairs(node: Node) -> tuple[list[Node], list[Node]]:
    """Left and right sides of an assignment or for statement, element-wise where both have as many elements."""
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    right_nodes = [x for x in right.children if x.type != ","]
    left_nodes = [x for x in left.children if x.type != ","]
    if len(right_nodes) != len(left_nodes):
        left_nodes, right_nodes = [left], [right]
    if not left_nodes:
        left_nodes = [left]
    if not right_nodes:
        right_nodes = [right]
    return left_nodes, right_nodes


def _computed_from(left_nodes, right_nodes, index_to_code, states) -> list[_Edge]:
    edges = []
    for left, right in zip(left_nodes, right_nodes, strict=False):
        right_tokens = _variable_index(right, index_to_code)
        for index in _variable_index(left, index_to_code):
            idx, code = index_to_code[index]
            edges.append(
                (
                    code,
                    idx,
                    "computedFrom",
                    [index_to_code[x][1] for x in right_tokens],
                    [index_to_code[x][0] for x in right_tokens],
                )
            )
            states[code] = [idx]
    return edges


def dfg_python(node: Node, index_to_code: dict, states: dict) -> tuple[list[_Edge], dict]:
    """The package's ``DFG_python`` (CodeBLEU's dataflow graph of Python), ported to tree-sitter 0.26."""
    states = states.copy()
    if _is_token(node):
        idx, code = index_to_code[_span(node)]
        if node.type == code:
            return [], states
        if code in states:
            return [(code, idx, "comesFrom", [code], states[code].copy())], states
        if node.type == "identifier":
            states[code] = [idx]
        return [(code, idx, "comesFrom", [], [])], states
    if node.type == "default_parameter":
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        edges = []
        if value is None:
            for index in _variable_index(name, index_to_code):
                idx, code = index_to_code[index]
                edges.append((code, idx, "comesFrom", [], []))
                states[code] = [idx]
            return sorted(edges, key=lambda x: x[1]), states
        value_tokens = _variable_index(value, index_to_code)
        edges, states = dfg_python(value, index_to_code, states)
        for index1 in _variable_index(name, index_to_code):
            idx1, code1 = index_to_code[index1]
            for index2 in value_tokens:
                idx2, code2 = index_to_code[index2]
                edges.append((code1, idx1, "comesFrom", [code2], [idx2]))
            states[code1] = [idx1]
        return sorted(edges, key=lambda x: x[1]), states
    if node.type in ("assignment", "augmented_assignment", "for_in_clause"):
        if node.type == "for_in_clause":
            right_nodes, left_nodes = [node.children[-1]], [node.child_by_field_name("left")]
        else:
            if node.child_by_field_name("right") is None:
                return [], states
            left_nodes, right_nodes = _pairs(node)
        edges = []
        for right in right_nodes:
            temp, states = dfg_python(right, index_to_code, states)
            edges += temp
        edges += _computed_from(left_nodes, right_nodes, index_to_code, states)
        return sorted(edges, key=lambda x: x[1]), states
    if node.type == "if_statement":
        edges, current, others = [], states.copy(), []
        has_else = False
        for child in node.children:
            if "else" in child.type:
                has_else = True
            if child.type not in ("elif_clause", "else_clause"):
                temp, current = dfg_python(child, index_to_code, current)
            else:
                temp, branch = dfg_python(child, index_to_code, states)
                others.append(branch)
            edges += temp
        others.append(current)
        if not has_else:
            others.append(states)
        merged: dict[str, list[int]] = {}
        for branch in others:
            for key, value in branch.items():
                merged[key] = merged[key] + value if key in merged else value.copy()
        return sorted(edges, key=lambda x: x[1]), {key: sorted(set(value)) for key, value in merged.items()}
    if node.type == "for_statement":
        edges = []
        for _ in range(2):
            left_nodes, right_nodes = _pairs(node)
            for right in right_nodes:
                temp, states = dfg_python(right, index_to_code, states)
                edges += temp
            edges += _computed_from(left_nodes, right_nodes, index_to_code, states)
            if node.children[-1].type == "block":
                temp, states = dfg_python(node.children[-1], index_to_code, states)
                edges += temp
        return sorted(_merge_by_key(edges), key=lambda x: x[1]), states
    if node.type == "while_statement":
        edges = []
        for _ in range(2):
            for child in node.children:
                temp, states = dfg_python(child, index_to_code, states)
                edges += temp
        return sorted(_merge_by_key(edges), key=lambda x: x[1]), states
    edges = []
    first = [child for child in node.children if child.type == "for_in_clause"]
    rest = [child for child in node.children if child.type != "for_in_clause"]
    for child in first + rest:
        temp, states = dfg_python(child, index_to_code, states)
        edges += temp
    return sorted(edges, key=lambda x: x[1]), states


def data_flow(code: str) -> list[_Edge]:
    """The package's ``get_data_flow``: the graph's edges, keeping only variables that take part in a flow,
    merged per token. Any failure while building the graph (deep recursion) gives no edges, as in the package."""
    try:
        root = parse_tree(code)
        indexes = _token_index(root)
        lines = code.split("\n")
        index_to_code = {index: (i, _span_text(index, lines)) for i, index in enumerate(indexes)}
        try:
            edges, _ = dfg_python(root, index_to_code, {})
        except Exception:  # noqa: BLE001 - the package's fallback
            edges = []
        edges = sorted(edges, key=lambda x: x[1])
        linked = set()
        for edge in edges:
            if edge[-1]:
                linked.add(edge[1])
            linked.update(edge[-1])
        edges = [edge for edge in edges if edge[1] in linked]
    except Exception:  # noqa: BLE001 - the package's fallback
        edges = []
    merged: dict[int, _Edge] = {}
    for edge in edges:
        if edge[1] not in merged:
            merged[edge[1]] = edge
        else:
            old = merged[edge[1]]
            merged[edge[1]] = (edge[0], edge[1], edge[2], _union(old[3], edge[3]), _union(old[4], edge[4]))
    return list(merged.values())


def normalize_dataflow(edges: list[_Edge]) -> list[tuple[str, str, list[str]]]:
    """Rename variables var_0, var_1, ... in order of first appearance (parents before the variable)."""
    names: dict[str, str] = {}
    out = []
    for name, _, relation, parents, _ in edges:
        for variable in (*parents, name):
            names.setdefault(variable, f"var_{len(names)}")
        out.append((names[name], relation, [names[x] for x in parents]))
    return out


@lru_cache(maxsize=1024)
def _code_dataflow(code: str) -> tuple[tuple[str, str, list[str]], ...]:
    return tuple(normalize_dataflow(data_flow(_without_comments(code))))


def dataflow_match(reference: str, candidate: str) -> float | None:
    """Share of the reference's normalised dataflow edges matched one-to-one in the candidate's;
    None when the reference has none."""
    ref = _code_dataflow(reference)
    if not ref:
        return None
    cand = list(_code_dataflow(candidate))
    matched = 0
    for edge in ref:
        if edge in cand:
            matched += 1
            cand.remove(edge)
    return matched / len(ref)


# --- CodeBLEU ----------------------------------------------------------------


def codebleu(reference: str, candidate: str) -> CodeBLEU:
    """CodeBLEU components of ``candidate`` (the generation) against ``reference`` (the ground truth).

    Both are whole Python functions, dedented (a method's ``def`` at column 0).
    """
    reference, candidate = reference.strip(), candidate.strip()
    ref_tokens, cand_tokens = reference.split(), candidate.split()
    return CodeBLEU(
        ngram=ngram_match(ref_tokens, cand_tokens),
        weighted_ngram=weighted_ngram_match(ref_tokens, cand_tokens),
        syntax=syntax_match(reference, candidate),
        dataflow=dataflow_match(reference, candidate),
    )
