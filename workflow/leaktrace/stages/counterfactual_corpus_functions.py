"""corpus_functions: the counterfactual stage's sample source (b), functions
drawn from a code corpus as the functional-memorisation paper draws them from
CraneCode (Sec. 3, App. B).

Every Python function of every document of a corpus source (any leakage-scan
source kind: files, JSONL, Parquet, a Hugging Face dataset streamed) is
parsed; the App. B filters keep bodies of 10 to 50 lines, functions of at
least 500 characters and no ``__init__``; a seeded sample of N of those is
the functions table, each with its file, the preceding context and the
signature. A function's place in the sample depends on the seed and its own
id alone (the N smallest seeded hashes), so neither the order a source
streams in nor ``max_documents`` reorders the sample, and memory stays O(N).

There is no member / non-member split in a corpus: ``split`` is null. The
accounting table counts every document skipped and every function dropped,
by reason, so "parsed 100k, kept 7,422" is read off the artifact."""

from __future__ import annotations

import heapq
import logging
import re
from collections import Counter
from pathlib import Path, PurePosixPath

import pyarrow as pa

from leaktrace.artifacts import write_table
from leaktrace.data.functions import FUNCTIONS_SCHEMA, FunctionFilter, all_function_anatomies
from leaktrace.errors import InputError
from leaktrace.leakage.sources import check_document, iter_source
from leaktrace.leakage.units import language_of
from leaktrace.seeding import derive_seed
from leaktrace.settings.counterfactual_corpus_functions import CorpusSampling, CorpusSource

log = logging.getLogger(__name__)

CORPUS_FUNCTIONS_SCHEMA = pa.schema(
    list(FUNCTIONS_SCHEMA)
    + [
        ("path", pa.string()),  # the function's file: its path, or the record's location column
        ("name", pa.string()),
        ("start_line", pa.int32()),  # of the first decorator or the ``def``
        ("split", pa.string()),  # null: a corpus has no member / non-member split
    ]
)

ACCOUNTING_SCHEMA = pa.schema([("stage", pa.string()), ("reason", pa.string()), ("count", pa.int64())])


def _source_name(source: dict) -> str:
    return source.get("dataset") or source.get("root") or ", ".join(source.get("paths", [])) or source["kind"]


def _is_python(source: dict, location: str) -> bool:
    """A file by its extension; a record by its location column's extension
    where it has a known one, else taken for Python (a CraneCode-like
    corpus is Python only)."""
    if source["kind"] == "files":
        return PurePosixPath(location).suffix.lower() in (".py", ".pyi")
    return language_of(location, "python") == "python"


def sample_corpus_functions(
    name: str,
    source: CorpusSource,
    sampling: CorpusSampling,
    seed: int,
    functions: Path,
    accounting: Path,
    inputs: tuple[Path, ...] = (),
) -> None:
    """Sample functions of a corpus source that pass App. B's filters, for the counterfactual stage;
    the accounting table counts every document skipped and every function dropped, by reason.

    ``name``: the counterfactual source's name (it keys the seed); ``sampling``: n, min_body_lines,
    max_body_lines, min_chars, exclude_init, max_documents, max_bytes; ``inputs``: the ingested
    corpus's shards (kind corpus)."""
    rule = FunctionFilter(
        min_body_lines=sampling.min_body_lines,
        max_body_lines=sampling.max_body_lines,
        min_chars=sampling.min_chars,
        exclude_init=sampling.exclude_init,
    )
    n, max_documents, max_bytes = sampling.n, sampling.max_documents, sampling.max_bytes
    source = source.as_config()
    skips: Counter = Counter()
    dropped: Counter = Counter()
    documents = parsed = eligible = 0
    heap: list[tuple[int, str, dict]] = []  # (-priority, sample_id, row): the n smallest priorities
    for doc in iter_source(source, 0, 1, list(inputs), skips, max_bytes=max_bytes, huge="skip"):
        if max_documents is not None and documents >= max_documents:
            break
        documents += 1
        text, problem = check_document(doc.data, max_bytes, "skip")
        if problem is None and not _is_python(source, doc.location):
            problem = "not_python"
        if problem is not None:
            skips[problem] += 1
            continue
        try:
            anatomies = all_function_anatomies(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):  # the last two: nested deeper than ast follows
            skips["parse_error"] += 1
            continue
        for anatomy in anatomies:
            parsed += 1
            reason = rule.reason_to_drop(anatomy)
            if reason is not None:
                dropped[re.sub(r"\d+", "N", reason)] += 1
                continue
            eligible += 1
            sample_id = f"{doc.doc_id}::{anatomy.name}:{anatomy.start_line}"
            priority = derive_seed(seed, "corpus-functions", name, sample_id)
            if len(heap) == n and -heap[0][0] <= priority:
                continue
            row = {
                "sample_id": sample_id,
                "kept": True,
                "reason": None,
                "body_lines": anatomy.body_lines,
                "n_chars": len(anatomy.function),
                "context": anatomy.context,
                "signature": anatomy.signature,
                "continuation": anatomy.continuation,
                "path": doc.location,
                "name": anatomy.name,
                "start_line": anatomy.start_line,
                "split": None,
            }
            (heapq.heapreplace if len(heap) == n else heapq.heappush)(heap, (-priority, sample_id, row))
    counts = (
        [{"stage": "document", "reason": "read", "count": documents}]
        + [{"stage": "document", "reason": r, "count": c} for r, c in sorted(skips.items())]
        + [{"stage": "function", "reason": "parsed", "count": parsed}]
        + [{"stage": "function", "reason": r, "count": c} for r, c in sorted(dropped.items())]
        + [
            {"stage": "function", "reason": "eligible", "count": eligible},
            {"stage": "function", "reason": "sampled", "count": len(heap)},
        ]
    )
    summary = (
        f"{documents} documents read (skipped: {dict(skips) or 'none'}), {parsed} functions parsed "
        f"(dropped: {dict(dropped) or 'none'})"
    )
    if not heap:
        raise InputError(
            _source_name(source), None, f"counterfactual source {name!r}: no function passes the filters; {summary}"
        )
    rows = sorted((row for *_, row in heap), key=lambda r: r["sample_id"])
    ids = Counter(r["sample_id"] for r in rows)
    if max(ids.values()) > 1:
        repeated = next(i for i, c in ids.items() if c > 1)
        raise InputError(
            _source_name(source),
            None,
            f"counterfactual source {name!r}: two documents share the id "
            f"behind {repeated!r}; name a unique `id` column",
        )
    if len(rows) < n:
        log.warning("%s: only %d eligible functions, fewer than n = %d: all are kept", name, len(rows), n)
    write_table(rows, CORPUS_FUNCTIONS_SCHEMA, functions)
    write_table(counts, ACCOUNTING_SCHEMA, accounting)
    log.info("%s: %s; %d eligible, %d sampled", name, summary, eligible, len(rows))
