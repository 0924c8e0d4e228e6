"""Checks the Snakefile runs while it plans (``snakemake -n`` included), so
a benchmark the audit or the testbed cannot run says so before any job
starts, naming the sample and what it lacks, instead of failing in the
variants stage minutes later."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from leaktrace.data.benchmarks import benchmark_entry, load_benchmark
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.data.samples import not_runnable

# A file larger than this is checked when its jobs run, not at every planning (APPS's test split is 1.3 GB).
PLANNING_MAX_BYTES = 64 << 20


def unrunnable_samples(name: str, settings: dict) -> tuple[int, list[tuple[str, str]]] | None:
    """(number of samples, [(sample id, why it cannot run)]) of a configured
    benchmark, or None when it is not checked at planning (a hub dataset, or
    a file above :data:`PLANNING_MAX_BYTES`). Bad input raises the ingest's
    :class:`~leaktrace.errors.InputError`."""
    fmt = settings.get("format", "humaneval")
    if fmt == "huggingface":
        return None
    path = Path(settings.get("path") or (shipped_humaneval_path() if fmt == "humaneval" else ""))
    if not path.is_file() or path.stat().st_size > PLANNING_MAX_BYTES:
        return None
    limit = settings.get("limit")
    if fmt == "humaneval":
        rows = [{**asdict(s), "code": s.code} for s in load_humaneval(path, name)][:limit]
    else:
        entry = benchmark_entry(settings, f"benchmarks.{name}")
        rows = [{**asdict(s), "code": s.code} for s in load_benchmark(entry, name, limit)]
    reasons = [(row["sample_id"], not_runnable(row, str(path))) for row in rows]
    return len(rows), [(sid, why) for sid, why in reasons if why]


def runnability_message(name: str, settings: dict, purpose: str) -> tuple[str | None, str | None]:
    """(error, warning) for a benchmark that ``purpose`` (the audit, the
    testbed) runs: an error when none of its samples can run, a warning
    naming the first that cannot when some cannot; (None, None) when all can
    or it is not checked here."""
    found = unrunnable_samples(name, settings)
    if found is None:
        return None, None
    total, bad = found
    if not bad:
        return None, None
    first, why = bad[0]
    more = f" (and {len(bad) - 1} more samples)" if len(bad) > 1 else ""
    if len(bad) == total:
        return (
            f"benchmarks.{name}: {purpose} runs each sample's tests, and no sample can run: {first}: {why}{more}; "
            "scan such a benchmark for leakage only (leave it out of audit.benchmarks and set testbed: false)"
        ), None
    return None, (
        f"benchmarks.{name}: {len(bad)} of {total} samples cannot run and are left out of {purpose}; "
        f"first: {first}: {why}"
    )
