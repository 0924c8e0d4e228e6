"""The structural similarity family of the functional-memorization study
(Sec. 3): CodeBLEU with given weights, its syntax-only and dataflow-only
components, and TSED, of one generated function against the ground-truth
function, both whole definitions (:func:`whole_function`).

A metric needs a syntax tree, so a function that tree-sitter cannot parse
without error gets no score: the value is None and its outcome says whose
code failed (``parse_error:ground_truth``, ``parse_error:generation``).
CodeBLEU's dataflow component is None with outcome ``no_dataflow`` when the
ground truth has no dataflow edge; CodeBLEU itself is then the mean of its
other three components (:mod:`leaktrace.similarity.codebleu`)."""

from __future__ import annotations

import textwrap

from leaktrace.similarity.codebleu import codebleu
from leaktrace.similarity.python_tree import parses
from leaktrace.similarity.table import Score
from leaktrace.similarity.tsed import EditCosts, tsed

METRICS = ("codebleu", "codebleu_syntax", "codebleu_dataflow", "tsed")
PARSE_ERROR_GROUND_TRUTH = "parse_error:ground_truth"
PARSE_ERROR_GENERATION = "parse_error:generation"
NO_DATAFLOW = "no_dataflow"


def whole_function(signature: str, body: str) -> str:
    """The definition the metrics compare: signature and body, dedented (a method's ``def`` at column 0)."""
    return textwrap.dedent(signature + body)


def structural_scores(
    truth: str,
    generated: str,
    weights: tuple[float, ...],
    costs: EditCosts,
    *,
    leaf_text: bool = False,
    nodes: str = "all",
) -> dict[str, Score]:
    """Every structural metric of one generation against the ground truth, both whole functions;
    ``leaf_text``: TSED's stricter trees, ``nodes``: which of tree-sitter's nodes TSED's trees hold
    (``leaktrace.similarity.tsed``)."""
    if not parses(truth):
        return {metric: Score(None, PARSE_ERROR_GROUND_TRUTH) for metric in METRICS}
    if not parses(generated):
        return {metric: Score(None, PARSE_ERROR_GENERATION) for metric in METRICS}
    components = codebleu(truth, generated)
    dataflow = Score(None, NO_DATAFLOW) if components.dataflow is None else Score(components.dataflow)
    return {
        "codebleu": Score(components.total(weights)),
        "codebleu_syntax": Score(components.syntax),
        "codebleu_dataflow": dataflow,
        "tsed": Score(tsed(truth, generated, costs, leaf_text=leaf_text, nodes=nodes)),
    }
