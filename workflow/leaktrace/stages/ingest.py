"""ingest: benchmarks and corpora into Parquet."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import write_table
from leaktrace.config_slice import SliceError
from leaktrace.configuration import schema_node
from leaktrace.data.benchmarks import benchmark_format, load_benchmark, source_name
from leaktrace.data.corpora import corpus_documents, shard
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.sandbox import SandboxUnavailable
from leaktrace.sandbox.sample_runs import solution_failures

log = logging.getLogger(__name__)

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

# Any other format (leaktrace/data/benchmarks.py): the HumanEval columns, plus
# the problem text, the sample's kind (code, text, both), its language and how
# its tests are written (check or io: leaktrace/data/io_tests.py). A
# ``humaneval``-format table keeps exactly the columns above (its rows read as
# Python code with check tests: leaktrace/data/samples.py).
GENERIC_BENCHMARK_SCHEMA = pa.schema(
    list(BENCHMARK_SCHEMA)
    + [("text", pa.string()), ("kind", pa.string()), ("language", pa.string()), ("test_format", pa.string())]
)

CORPUS_SCHEMA = pa.schema([("doc_id", pa.string()), ("source", pa.string()), ("text", pa.string())])


def check_solutions(name: str, rows: list[dict], source: str) -> None:
    """The ingest's report of the benchmark's own solutions: each sample the
    sandbox can run is run against its own tests, and every solution that
    fails them is logged with the reason (a preset read wrongly, or a
    release's broken sample, shows here before any stage depends on it).
    Where the sandbox cannot run (no namespaces or cgroup), that is logged
    and nothing is checked."""
    try:
        checked, failures = solution_failures(rows, source)
    except SandboxUnavailable as error:
        log.warning("benchmark %s: canonical solutions not checked: %s", name, error)
        return
    log.info(
        "benchmark %s: %d of %d canonical solutions pass their own tests in the sandbox (%d samples not run: "
        "text only, no tests, or tests no sandbox path runs)",
        name,
        checked - len(failures),
        checked,
        len(rows) - checked,
    )
    for sample_id, why in failures:
        log.warning("benchmark %s: %s: the canonical solution fails its own tests: %s", name, sample_id, why)


def _check_solutions(name: str, settings: dict) -> bool:
    """``benchmarks.<name>.check_solutions``; a slice without it (the randomized publication's release,
    rules/watermark.smk) gets the schema's default, which is written there only."""
    value = settings.get("check_solutions")
    if value is None:
        value = schema_node("benchmarks", "*", "check_solutions")["default"]
    if not isinstance(value, bool):
        raise SliceError(f"config benchmarks.{name}.check_solutions: expected a boolean, got {value!r}")
    return value


def ingest_benchmark(name: str, settings: dict, output: Path) -> None:
    check = _check_solutions(name, settings)
    fmt = benchmark_format(settings)  # a preset implies it where the config leaves it out
    if fmt != "humaneval":
        samples = load_benchmark(settings, name, settings.get("limit"))
        rows = [{**vars(s), "code": s.code} for s in samples]
        write_table(rows, GENERIC_BENCHMARK_SCHEMA, output)
        kinds = {k: sum(s.kind == k for s in samples) for k in ("code", "text", "both")}
        log.info(
            "benchmark %s: %d samples (%s) from %s",
            name,
            len(rows),
            ", ".join(f"{k} {n}" for k, n in kinds.items() if n),
            source_name(settings),
        )
        if check:
            check_solutions(name, rows, source_name(settings))
        return
    path = settings.get("path") or shipped_humaneval_path()
    samples = load_humaneval(path, name)
    limit = settings.get("limit")
    if limit:
        samples = samples[:limit]
    rows = [
        {
            "sample_id": s.sample_id,
            "benchmark": s.benchmark,
            "task_id": s.task_id,
            "prompt": s.prompt,
            "solution": s.solution,
            "code": s.code,
            "test": s.test,
            "entry_point": s.entry_point,
        }
        for s in samples
    ]
    write_table(rows, BENCHMARK_SCHEMA, output)
    log.info("benchmark %s: %d samples from %s", name, len(rows), path)
    if check:
        check_solutions(name, rows, str(path))


def ingest_corpus(name: str, settings: dict, part: int, output: Path) -> None:
    """Write shard ``part`` of the corpus (one job per shard: a scatter)."""
    documents = corpus_documents(name, settings)
    docs = shard(documents, settings["shards"])[part]
    write_table([{"doc_id": d.doc_id, "source": d.source, "text": d.text} for d in docs], CORPUS_SCHEMA, output)
    log.info("corpus %s: part %d holds %d of %d documents", name, part, len(docs), len(documents))
