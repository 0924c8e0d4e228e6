"""ingest: benchmarks and corpora into Parquet."""

from __future__ import annotations

import logging
from pathlib import Path

from leaktrace.artifacts import write_table
from leaktrace.config_slice import SliceError
from leaktrace.configuration import schema_node
from leaktrace.data.benchmarks import (
    BENCHMARK_SCHEMA,
    GENERIC_BENCHMARK_SCHEMA,
    benchmark_format,
    load_benchmark,
    source_name,
)
from leaktrace.data.corpora import CORPUS_SCHEMA, corpus_documents, shard
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.sandbox import SandboxUnavailable
from leaktrace.sandbox.sample_runs import solution_failures
from leaktrace.settings.ingest import BenchmarkEntry, CorpusEntry

log = logging.getLogger(__name__)


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


def _check_solutions(settings: BenchmarkEntry) -> bool:
    """``benchmarks.<name>.check_solutions``; a slice without it (the randomized publication's release,
    rules/watermark.smk) gets the schema's default, which is written there only."""
    if settings.check_solutions is None:
        return schema_node("benchmarks", "*", "check_solutions")["default"]
    return settings.check_solutions


def ingest_benchmark(name: str, settings: BenchmarkEntry, output: Path) -> None:
    """Read a configured benchmark (``benchmarks.<name>``) into its Parquet table, and check its own solutions.

    The HumanEval format keeps HumanEval's columns; any other reader adds the problem text, the sample's kind,
    language and test format."""
    check = _check_solutions(settings)
    fmt = benchmark_format(settings)  # a preset implies it where the config leaves it out
    if fmt != "humaneval":
        samples = load_benchmark(settings, name, settings.limit)
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
    path = settings.path or shipped_humaneval_path()
    samples = load_humaneval(path, name)
    if settings.limit:
        samples = samples[: settings.limit]
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


def ingest_corpus(name: str, settings: CorpusEntry, part: int, output: Path) -> None:
    """Write shard ``part`` of a configured corpus (``corpora.<name>``): one job per shard, a scatter."""
    if settings.shards is None:
        raise SliceError(f"config corpora.{name}.shards: missing (its default is in config/schema.yaml)")
    documents = corpus_documents(name, settings)
    docs = shard(documents, settings.shards)[part]
    write_table([{"doc_id": d.doc_id, "source": d.source, "text": d.text} for d in docs], CORPUS_SCHEMA, output)
    log.info("corpus %s: part %d holds %d of %d documents", name, part, len(docs), len(documents))
