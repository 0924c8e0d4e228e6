"""leakage rephrase: a scan's rephrase channel (``leakage.scans.<name>.rephrase``,
off unless ``enabled``), for copies no shingle channel can see.

Two stages. Per corpus shard (after the scan's own shard job, whose pairs it
reads): embed every benchmark sample and every corpus unit the scan compares
(the same units: its granularity, ``min_tokens``, ``max_bytes``) and keep each
sample's ``top_k`` units by cosine similarity, leaving out the units the other
channels already call duplicates of that sample
(:mod:`leaktrace.leakage.rephrase`). Then once: merge the shards' candidates
into each sample's global top ``top_k`` and, when the scan names a judge
(``leakage.scans.<name>.judge.model``) and ``rephrase.judge`` is on, ask it
about each; its duplicate labels make "rephrase" leaks. Without a judge the
candidates are reported unverified with their similarity and never counted
as leaks. Writes ``rephrase.parquet`` and the Markdown that joins the scan's
report."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.samples import clone_text, document, language_of_sample
from leaktrace.leakage.judge import open_judge
from leaktrace.leakage.minhash import Signer
from leaktrace.leakage.rephrase import (
    TopK,
    judge_candidates,
    make_embedder,
    merge,
    unit_key,
    unverified,
)
from leaktrace.leakage.settings import resolved
from leaktrace.leakage.sources import check_document, iter_source
from leaktrace.leakage.units import document_units, language_of
from leaktrace.report.tables import markdown_table
from leaktrace.settings.leakage import ScanSlice

log = logging.getLogger(__name__)

PART_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("doc_id", pa.string()),
        ("location", pa.string()),
        ("unit", pa.string()),
        ("start_line", pa.int64()),
        ("end_line", pa.int64()),
        ("language", pa.string()),
        ("part", pa.int32()),
        ("channel", pa.string()),  # "rephrase"
        ("embedder", pa.string()),
        ("similarity", pa.float64()),  # cosine of the two embeddings, rounded to 6 places
        ("rank", pa.int32()),  # 1: the sample's nearest unit (in its shard; in rephrase.parquet, over the corpus)
        ("text", pa.string()),
    ]
)
SCHEMA = pa.schema(
    [
        *PART_SCHEMA,
        ("judge_label", pa.string()),  # LessLeak's four labels, "unparsed", or null (no judge)
        ("duplicate", pa.bool_()),  # the judge's verdict; null: no judge saw it (or its answer was unparsed)
        ("leak", pa.string()),  # "rephrase" when the judge calls it a duplicate, else null
    ]
)


def _samples(benchmarks: list[Path]) -> list[dict]:
    return [r for path in benchmarks for r in read_records(path)]


def _excluded(pairs: Path | None) -> dict[str, list[tuple[str, int, int]]]:
    """Per document, (sample id, first line, last line) of the duplicates the scan's other channels found."""
    out: dict[str, list] = defaultdict(list)
    if pairs is not None:
        for p in read_records(pairs, ["sample_id", "doc_id", "start_line", "end_line", "duplicate"]):
            if p["duplicate"]:
                out[p["doc_id"]].append((p["sample_id"], p["start_line"], p["end_line"]))
    return out


def rephrase_shard(
    scan: str,
    benchmark: tuple[Path, ...],
    scan_settings: ScanSlice,
    part: int,
    parts: int,
    output: Path,
    input: tuple[Path, ...] = (),
    pairs: Path | None = None,
) -> None:
    """One shard's rephrase candidates: each benchmark sample's ``top_k``
    nearest units in corpus shard ``part`` of ``parts``, leaving out the units
    the scan's shard job (its ``pairs``) calls duplicates of the sample.
    ``input``: the pipeline artifacts the corpus source reads."""
    name = scan
    s = resolved(scan, scan_settings)
    r = s.rephrase
    k = r.top_k
    samples = _samples(benchmark)
    ids = [row["sample_id"] for row in samples]
    texts = [clone_text(row) for row in samples]
    langs = [language_of_sample(row, s.language) for row in samples]
    embedder = make_embedder(r)
    embedder.fit(texts, langs)
    top = TopK(ids, embedder.embed(texts, langs), k)
    found = _excluded(pairs)
    signer = Signer(s.minhash)
    skips: Counter = Counter()
    counts: Counter = Counter()
    batch: list[tuple] = []  # (key, info, text, language, excluded sample ids)

    def flush() -> None:
        if not batch:
            return
        vectors = embedder.embed([b[2] for b in batch], [b[3] for b in batch])
        excluded = {(sid, b[0]) for b in batch for sid in b[4]}
        top.add(vectors, [b[0] for b in batch], [b[1] for b in batch], excluded)
        batch.clear()

    for doc in iter_source(
        dict(scan_settings.corpus), part, parts, list(input), skips, max_bytes=s.max_bytes, huge=s.huge
    ):
        counts["documents"] += 1
        text, reason = check_document(doc.data, s.max_bytes, s.huge)
        if reason:
            skips[reason] += 1
            continue
        lang = language_of(doc.location, s.language)
        units = document_units(text, lang, s.granularity, s.max_bytes)[0]
        for unit in units:
            if signer.shingle_hashes(unit.text)[0] < s.min_tokens:
                continue
            counts["units"] += 1
            key = unit_key(doc.doc_id, unit.start_line, unit.end_line, unit.name)
            excluded = {sid for sid, a, b in found.get(doc.doc_id, ()) if a <= unit.end_line and unit.start_line <= b}
            info = {
                "doc_id": doc.doc_id,
                "location": doc.location,
                "unit": unit.name,
                "start_line": unit.start_line,
                "end_line": unit.end_line,
                "language": lang,
                "part": part,
                "channel": "rephrase",
                "embedder": embedder.name,
                "text": unit.text,
            }
            batch.append((key, info, unit.text, lang, excluded))
            if len(batch) >= s.batch_size:
                flush()
    flush()
    rows = top.rows()
    write_table(rows, PART_SCHEMA, output)
    log.info(
        "rephrase %s part %d: %d documents, %d units embedded (%s), %d candidates; skipped %s",
        name,
        part,
        counts["documents"],
        counts["units"],
        embedder.name,
        len(rows),
        dict(skips),
    )


def rephrase_gather(
    scan: str,
    benchmark: tuple[Path, ...],
    parts: tuple[Path, ...],
    scan_settings: ScanSlice,
    output: Path,
    markdown: Path,
) -> None:
    """Merge a scan's rephrase candidates over every shard (``parts``) into
    each sample's top ``top_k``, judged when the scan names a judge and
    ``rephrase.judge`` is on; writes the table and its Markdown."""
    judge = scan_settings.judge
    on = scan_settings.rephrase.judge and bool(judge.model)
    gather_candidates(
        scan, benchmark, parts, scan_settings, output, markdown, open_judge(asdict(judge)) if on else None
    )


def gather_candidates(
    scan: str,
    benchmark: tuple[Path, ...],
    parts: tuple[Path, ...],
    scan_settings: ScanSlice,
    output: Path,
    markdown: Path,
    judge_model=None,
) -> None:
    """:func:`rephrase_gather` with ``judge_model`` (a chat model, or None: no judge) as the judge."""
    from leaktrace.leakage.judge import load_template

    name = scan
    r = resolved(scan, scan_settings).rephrase
    rows = merge([row for path in parts for row in read_records(path)], r.top_k)
    judged = r.judge and judge_model is not None
    if judged:
        bench_text = {row["sample_id"]: document(row) for row in _samples(benchmark)}
        rows = judge_candidates(rows, judge_model, load_template(), bench_text, scan_settings.judge.max_new_tokens)
    else:
        rows = unverified(rows)
    write_table(rows, SCHEMA, output)
    markdown.parent.mkdir(parents=True, exist_ok=True)
    markdown.write_text(report(name, r, rows, judged, len(_samples(benchmark))), encoding="utf-8")
    log.info(
        "rephrase %s: %d candidates of %d samples, %s",
        name,
        len(rows),
        len({row["sample_id"] for row in rows}),
        f"{sum(bool(row['leak']) for row in rows)} rephrase leaks by the judge" if judged else "no judge: unverified",
    )


def report(name: str, r, rows: list[dict], judged: bool, size: int) -> str:
    """The Markdown that joins the scan's report."""
    lines = [
        f"#### Rephrase candidates, scan `{name}` (embedder {r.embedder}, top {r.top_k} a sample)",
        "",
    ]
    samples = {row["sample_id"] for row in rows}
    if judged:
        leaks = sorted({row["sample_id"] for row in rows if row["leak"]})
        labels = Counter(row["judge_label"] for row in rows)
        lines.append(
            f"{len(rows)} candidates of {len(samples)} of {size} samples, each judged: "
            + ", ".join(f"{k} {v}" for k, v in sorted(labels.items()))
            + f". Rephrase leaks (a duplicate label): {len(leaks)} samples."
        )
    else:
        lines.append(
            f"{len(rows)} candidates of {len(samples)} of {size} samples. No judge is configured: these are "
            "unverified nearest neighbours, not leaks (none is counted)."
        )
    shown = sorted((row for row in rows if row["rank"] == 1), key=lambda row: (-row["similarity"], row["sample_id"]))
    if shown:
        table = [
            {
                "sample": row["sample_id"],
                "nearest unit": f"`{row['location']}` lines {row['start_line']}-{row['end_line']}",
                "similarity": f"{row['similarity']:.3f}",
                "judge": row["judge_label"] or "-",
            }
            for row in shown[:10]
        ]
        lines += ["", markdown_table(table, list(table[0])).rstrip("\n")]
    return "\n".join(lines) + "\n"
