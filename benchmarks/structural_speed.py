"""Speed of the structural similarity family (CodeBLEU x3 and TSED) on function pairs.

Functions are the standard library's that pass the paper's App. B filter
(10-50 body lines, at least 500 characters, no ``__init__``), the first
``--pairs`` of them in file order. Each is paired with a "generation" under its
own signature: for half, the body of the next function (unrelated code); for
the other half, its own body with its names changed and its last third cut
(similar code; then cut further to its longest prefix that parses, as the
counterfactual stage does), so both cheap and expensive alignments are timed. Prints, in
one run:

- per-metric milliseconds per pair (one process; CodeBLEU's three metrics are
  one computation), and TSED's distance with the pure-Python ``apted`` package
  on the first ``--apted-pairs`` pairs, for comparison;
- the ``counterfactual-structural`` command itself on the pairs (as samples of
  one generation each for target and reference: ``--pairs`` comparisons), with
  1 and 2 processes, in a fresh interpreter (imports, the compiled distance's
  load, the parquet written): wall-clock and CPU seconds, and whether both
  tables are identical.

    .venv/bin/python benchmarks/structural_speed.py [--pairs 1000] [--apted-pairs 20]
"""

from __future__ import annotations

import argparse
import ast
import json
import keyword
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from apted import APTED, PerEditOperationConfig

from leaktrace.artifacts import write_table
from leaktrace.data.corpora import iter_stdlib_code
from leaktrace.similarity.codebleu import codebleu
from leaktrace.similarity.function_parse import parse_generated_function
from leaktrace.similarity.generations import GENERATIONS_SCHEMA
from leaktrace.similarity.python_tree import parse_tree
from leaktrace.similarity.structural import whole_function
from leaktrace.similarity.tsed import PAPER_COSTS, tsed

SETTINGS = {
    "codebleu_weights": [0.25] * 4,
    "tsed_costs": PAPER_COSTS._asdict(),
    "tsed_leaf_text": False,
    "tsed_nodes": "all",
}
FUNCTIONS_SCHEMA = pa.schema([("sample_id", pa.string()), ("signature", pa.string()), ("continuation", pa.string())])


def stdlib_functions(n: int) -> list[tuple[str, str]]:
    """(signature, continuation) of the first n module-level stdlib functions with 10-50 non-blank
    body lines, at least 500 characters and another name than ``__init__`` (App. B's filter, the
    docstring counted as body here: one parse per file keeps the set-up fast)."""
    out = []
    for document in iter_stdlib_code():
        try:
            tree = ast.parse(document.text)
        except (SyntaxError, ValueError):
            continue
        lines = document.text.splitlines(keepends=True)
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name == "__init__":
                continue
            first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            body_start = node.body[0].lineno - 1
            if body_start < node.lineno:  # a one-line def
                continue
            signature, continuation = "".join(lines[first:body_start]), "".join(lines[body_start : node.end_lineno])
            body_lines = sum(1 for line in lines[body_start : node.end_lineno] if line.strip())
            if 10 <= body_lines <= 50 and len(signature + continuation) >= 500:
                out.append((signature, continuation))
                if len(out) == n:
                    return out
    return out


def _similar(signature: str, body: str) -> str:
    """The body with its names (not keywords, not calls) changed, cut to its first two thirds and then
    to its longest prefix that parses (what the counterfactual stage keeps of a generation)."""
    lines = body.splitlines(keepends=True)
    kept = "".join(lines[: max(1, 2 * len(lines) // 3)])
    renamed = re.sub(
        r"\b([a-z_][a-z_0-9]{2,})\b(?!\s*\()",
        lambda m: m.group(1) if keyword.iskeyword(m.group(1)) else m.group(1) + "_x",
        kept,
    )
    return parse_generated_function(signature, renamed).body


def pairs(n: int) -> list[tuple[str, str, str]]:
    """(signature, ground-truth body, generated body)."""
    functions = stdlib_functions(n + 1)
    return [
        (signature, body, functions[i + 1][1] if i % 2 else _similar(signature, body))
        for i, (signature, body) in enumerate(functions[:n])
    ]


class _Node:
    def __init__(self, node):
        self.name = node.type if node.named_child_count else f"{node.type}:{node.text.decode()}"
        self.children = [_Node(child) for child in node.named_children]


def _children_cpu() -> float:
    """CPU seconds of the finished child processes (and theirs): on a shared machine wall time
    measures the other tenants as much as this code."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--apted-pairs", type=int, default=20)
    args = parser.parse_args()
    data = pairs(args.pairs)
    functions = [(whole_function(s, t), whole_function(s, g)) for s, t, g in data]
    print(
        f"{len(data)} stdlib function pairs (App. B filter); mean ground truth {sum(len(t) for t, _ in functions) / len(functions):.0f} chars"
    )

    tsed("x = 1", "x = 1")  # compile
    for name, metric in (("CodeBLEU (all three metrics)", codebleu), ("TSED", tsed)):
        start, cpu = time.perf_counter(), time.process_time()
        for truth, generated in functions:
            metric(truth, generated)
        print(
            f"{name}: {1000 * (time.perf_counter() - start) / len(functions):.1f} ms wall, "
            f"{1000 * (time.process_time() - cpu) / len(functions):.1f} ms CPU per pair (1 process)"
        )
    sample = functions[: args.apted_pairs]
    cpu = time.process_time()
    for truth, generated in sample:
        tsed(truth, generated)
    ours, cpu = time.process_time() - cpu, time.process_time()
    for truth, generated in sample:
        APTED(
            _Node(parse_tree(truth)), _Node(parse_tree(generated)), PerEditOperationConfig(*PAPER_COSTS)
        ).compute_edit_distance()
    print(
        f"TSED on the first {len(sample)} pairs: {1000 * ours / len(sample):.1f} ms CPU per pair here, "
        f"{1000 * (time.process_time() - cpu) / len(sample):.0f} ms with the apted package"
    )

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        half = len(data) // 2  # each sample has a target and a reference generation: len(data) comparisons
        write_table(
            [{"sample_id": f"s{i}", "signature": s, "continuation": t} for i, (s, t, _) in enumerate(data[:half])],
            FUNCTIONS_SCHEMA,
            tmp / "functions.parquet",
        )
        write_table(
            [
                {
                    "sample_id": f"s{i}",
                    "model": model,
                    "prompt_tokens": 0,
                    "generated": body,
                    "function": body,
                    "parsed": True,
                }
                for i, (_, _, generated) in enumerate(data[:half])
                for model, body in (("target", generated), ("reference", data[i + half][2]))
            ],
            GENERATIONS_SCHEMA,
            tmp / "generations.parquet",
        )
        for processes in (1, 2):  # a fresh interpreter each: no warm cache, imports included
            start, cpu = time.perf_counter(), _children_cpu()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "leaktrace",
                    "counterfactual-structural",
                    "--generations",
                    str(tmp / "generations.parquet"),
                    "--functions",
                    str(tmp / "functions.parquet"),
                    "--settings",
                    json.dumps(SETTINGS),
                    "--processes",
                    str(processes),
                    "--output",
                    str(tmp / f"out-{processes}.parquet"),
                ],
                check=True,
            )
            print(
                f"stage (python -m leaktrace counterfactual-structural), {half} samples x 2 models = {2 * half} "
                f"pairs, {processes} process(es): {time.perf_counter() - start:.1f} s wall, "
                f"{_children_cpu() - cpu:.1f} s CPU"
            )
        same = (tmp / "out-1.parquet").read_bytes() == (tmp / "out-2.parquet").read_bytes()
        print(f"1 and 2 processes wrote {'identical' if same else 'DIFFERENT'} tables")


if __name__ == "__main__":
    main()
