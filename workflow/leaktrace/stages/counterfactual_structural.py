"""counterfactual_structural: the structural similarity family of the
functional-memorization study (Sec. 3): CodeBLEU with equal weights, its
syntax-only and dataflow-only components, and TSED, of each model's
generated function against the ground-truth function.

Both functions are whole definitions, signature plus body, dedented (a
method's ``def`` at column 0): the paper's App. E values reproduce best that
way (CodeBLEU's dataflow match on 13 of 14; docs/methods/similarity.md, "App. E of the paper").
A metric needs a syntax tree, so a function that tree-sitter cannot parse
without error gets no score: the row's value is null and its outcome says
whose code failed
(``parse_error:ground_truth`` for both models, ``parse_error:generation`` for
one). CodeBLEU's dataflow component is null with outcome ``no_dataflow`` when
the ground truth has no dataflow edge; CodeBLEU itself is then the mean of
its other three components (``leaktrace.similarity.codebleu``).
"""

from __future__ import annotations

import logging
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from leaktrace.artifacts import read_records, write_table
from leaktrace.settings.counterfactual_structural import StructuralSettings
from leaktrace.similarity.structural import METRICS, structural_scores, whole_function
from leaktrace.similarity.table import OK, SIMILARITY_FAMILY_SCHEMA, family_row
from leaktrace.similarity.tsed import EditCosts, tsed

log = logging.getLogger(__name__)

MODELS = ("target", "reference")


def _sample_rows(job: tuple[str, str, dict[str, str], tuple[float, ...], EditCosts, bool, str]) -> list[dict]:
    sample_id, truth, generated, weights, costs, leaf_text, nodes = job
    scores = {
        model: structural_scores(truth, generated[model], weights, costs, leaf_text=leaf_text, nodes=nodes)
        for model in MODELS
    }
    return [family_row(sample_id, metric, scores["target"][metric], scores["reference"][metric]) for metric in METRICS]


def structural_similarity(
    generations: Path, functions: Path, settings: StructuralSettings, output: Path, processes: int = 1
) -> None:
    """Score every counterfactual generation (both models) against its ground-truth function:
    CodeBLEU, its syntax and dataflow components, and TSED.

    ``settings``: ``similarity.structural`` (CodeBLEU's weights, TSED's edit
    costs, whether its leaves are labelled by their text and which nodes its trees hold). Rows follow the
    order of the samples in ``generations``, then METRICS, whatever ``processes``.
    """
    generated: dict[str, dict[str, str]] = {}
    for g in read_records(generations, ["sample_id", "model", "function"]):
        generated.setdefault(g["sample_id"], {})[g["model"]] = g["function"]
    truth = {
        r["sample_id"]: r
        for r in read_records(functions, ["sample_id", "signature", "continuation"])
        if r["sample_id"] in generated
    }
    missing = sorted(set(generated) - set(truth))
    if missing:
        raise ValueError(f"{len(missing)} generated samples have no ground truth in {functions}: {missing[:5]}")
    weights = settings.codebleu_weights
    costs = EditCosts(settings.tsed_costs.delete, settings.tsed_costs.insert, settings.tsed_costs.rename)
    leaf_text, nodes = settings.tsed_leaf_text, settings.tsed_nodes
    jobs = []
    for sample_id, by_model in generated.items():
        signature = truth[sample_id]["signature"]
        jobs.append(
            (
                sample_id,
                whole_function(signature, truth[sample_id]["continuation"]),
                {model: whole_function(signature, by_model[model]) for model in MODELS},
                weights,
                costs,
                leaf_text,
                nodes,
            )
        )
    if processes > 1 and len(jobs) > 1:
        tsed("x = 1", "x = 1")  # compile the distance here, so the forked workers inherit it
        with ProcessPoolExecutor(processes) as pool:
            chunks = list(pool.map(_sample_rows, jobs, chunksize=max(1, len(jobs) // (4 * processes))))
    else:
        chunks = [_sample_rows(job) for job in jobs]
    rows = [row for chunk in chunks for row in chunk]
    write_table(rows, SIMILARITY_FAMILY_SCHEMA, output)
    outcomes = Counter((row["metric"], model, row[f"{model}_outcome"]) for row in rows for model in MODELS)
    for (metric, model, outcome), n in sorted(outcomes.items()):
        if outcome != OK:
            log.info("%s, %s: %d of %d samples %s", metric, model, n, len(jobs), outcome)
    log.info("counterfactual_structural: %d samples, %d rows", len(jobs), len(rows))
