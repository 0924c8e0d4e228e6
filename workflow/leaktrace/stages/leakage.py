"""leakage: LessLeak-style near-duplicate scan of benchmarks against a corpus.

A scan reads one benchmark or several (``benchmarks``): their samples go into
one index, so each corpus shard is streamed once for all of them, and the
gather writes a row per benchmark (LessLeak's Table 2) with averages per
language. Three stages: index the benchmarks once (signatures of every sample); scan one
corpus shard (a scatter job: stream its documents through the index, verify
every candidate pair, write the pairs and the accounting of what was skipped);
gather (merged pairs, LessLeak Table 2 summary, the sources behind most
duplicates, skip counts, the cleaned benchmark, and, for a scan against the
testbed's training mix, recall and precision of "leaked" against the member
split). Memory in a scan job is bounded by ``max_bytes`` (one document, or
one window of a huge file) plus one batch of units plus the pairs it finds:
the batch holds units, never the documents they came from, and is flushed
as it fills, even inside one huge document. A bad corpus document or file is
a counted skip, never a crash (see :mod:`leaktrace.leakage.sources`)."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa

from leaktrace.artifacts import read_records, read_table, write_table
from leaktrace.data.samples import clone_text, document, language_of_sample
from leaktrace.leakage.minhash import Signer
from leaktrace.leakage.scan import renamed_hashes, scan_documents
from leaktrace.leakage.settings import resolved
from leaktrace.leakage.sources import check_document, iter_source
from leaktrace.report.tables import markdown_table
from leaktrace.sandbox import SandboxLimits
from leaktrace.settings.leakage import JudgeSlice, ScanSlice

log = logging.getLogger(__name__)

INDEX_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("n_tokens", pa.int64()),
        ("n_shingles", pa.int64()),
        ("indexed", pa.bool_()),
        ("skip_reason", pa.string()),
        ("signature", pa.list_(pa.uint64())),
        # the identifier-normalised channel's signature of the sample's code (null: the channel is off, or no code)
        ("renamed_signature", pa.list_(pa.uint64())),
    ]
)
PAIR_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("doc_id", pa.string()),
        ("location", pa.string()),
        ("unit", pa.string()),
        ("start_line", pa.int64()),
        ("end_line", pa.int64()),
        ("language", pa.string()),
        ("part", pa.int32()),
        ("jaccard", pa.float64()),
        ("containment", pa.float64()),
        ("similarity", pa.float64()),
        ("layout_equal", pa.bool_()),
        ("renamed_equal", pa.bool_()),
        ("literals_equal", pa.bool_()),
        ("aligned", pa.bool_()),
        ("flagged", pa.bool_()),
        ("clone_type", pa.string()),
        ("rule_duplicate", pa.bool_()),
        ("judge_label", pa.string()),
        ("duplicate", pa.bool_()),
        ("text", pa.string()),
        # the values behind the verifier's other rules (leaktrace.leakage.verify), and the rule that decided
        ("containment_corpus", pa.float64()),
        ("code_containment", pa.float64()),
        ("code_containment_corpus", pa.float64()),
        ("statement", pa.float64()),
        ("statement_words", pa.int64()),
        ("alignment", pa.float64()),
        ("shape", pa.float64()),
        ("execution", pa.string()),
        ("execution_note", pa.string()),
        ("decided_by", pa.string()),
        # the learned verifier's own values (leaktrace.leakage.features) and its probability of a duplicate
        ("tokens", pa.int64()),
        ("lines", pa.float64()),
        ("lines_corpus", pa.float64()),
        ("score", pa.float64()),
        # what leaked (code: a duplicate of the solution; input: its problem text only), the channel that made the pair a
        # candidate (lsh, containment, statement), and the part of the sample compared (null: its whole solution)
        ("leak", pa.string()),
        ("channel", pa.string()),
        ("bench_part", pa.string()),
    ]
)
ACCOUNTING_SCHEMA = pa.schema(
    [("part", pa.int32()), ("kind", pa.string()), ("reason", pa.string()), ("count", pa.int64())]
)
SUMMARY_SCHEMA = pa.schema(
    [
        ("scan", pa.string()),
        ("benchmark", pa.string()),
        ("language", pa.string()),
        ("corpus", pa.string()),
        ("scheme", pa.string()),
        ("size", pa.int64()),
        ("indexed", pa.int64()),
        ("documents", pa.int64()),
        ("units", pa.int64()),
        ("skipped", pa.int64()),
        ("lsh_candidates", pa.int64()),
        ("candidates", pa.int64()),
        ("verified_duplicates", pa.int64()),
        ("type1", pa.int64()),
        ("type2", pa.int64()),
        ("type3", pa.int64()),
        ("leaked_count", pa.int64()),
        ("leaked_ratio", pa.float64()),
        ("type4", pa.int64()),
        ("input_leaks", pa.int64()),  # duplicates that are the problem text only (leak "input"), not among type1..type4
    ]
)
SOURCES_SCHEMA = pa.schema([("location", pa.string()), ("duplicates", pa.int64()), ("samples", pa.int64())])
MEMBERSHIP_SCHEMA = pa.schema(
    [
        ("scan", pa.string()),
        ("members", pa.int64()),
        ("non_members", pa.int64()),
        ("not_in_split", pa.int64()),
        ("found_members", pa.int64()),
        ("found_non_members", pa.int64()),
        ("found_not_in_split", pa.int64()),
        ("recall", pa.float64()),
        ("precision", pa.float64()),
    ]
)


def _tables(benchmarks: Path | Sequence[Path]) -> list[Path]:
    return [benchmarks] if isinstance(benchmarks, Path) else list(benchmarks)


def _samples(benchmarks: Path | Sequence[Path]) -> list[dict]:
    """Every sample of every benchmark table (sample ids carry their benchmark's name)."""
    return [r for path in _tables(benchmarks) for r in read_records(path)]


def build_index(scan: str, benchmark: tuple[Path, ...], scan_settings: ScanSlice, output: Path) -> None:
    """Index a scan's benchmarks: the signatures of every benchmark sample
    (its full code, its problem text, or both:
    :func:`~leaktrace.data.samples.document`); samples that cannot be indexed
    stay in the table with the reason."""
    s = resolved(scan, scan_settings)
    signer = Signer(s.minhash)
    samples = _samples(benchmark)
    rows, hashes = [], []
    for sample in samples:
        text, reason = check_document(document(sample), max(s.max_bytes, 1 << 30), "chunk")
        n_tokens, h = signer.shingle_hashes(text) if text is not None else (0, np.empty(0, np.uint32))
        if reason is None and n_tokens < s.min_tokens:
            reason = "too_short"
        rows.append(
            {
                "sample_id": sample["sample_id"],
                "n_tokens": n_tokens,
                "n_shingles": len(h),
                "indexed": reason is None,
                "skip_reason": reason,
            }
        )
        hashes.append(h)
    sigs = signer.signatures(hashes)
    for row, sig in zip(rows, sigs, strict=True):
        row["signature"] = sig.astype(np.uint64).tolist() if row["indexed"] else None
        row["renamed_signature"] = None
    if s.renamed:
        hashes = [
            renamed_hashes(signer, clone_text(sample), language_of_sample(sample, s.language), s) for sample in samples
        ]
        for row, h, sig in zip(
            rows,
            hashes,
            signer.signatures([h if h is not None else np.empty(0, np.uint32) for h in hashes]),
            strict=True,
        ):
            row["renamed_signature"] = sig.astype(np.uint64).tolist() if row["indexed"] and h is not None else None
    write_table(rows, INDEX_SCHEMA, output)
    log.info(
        "index %s: %d of %d samples indexed (%s)", s.name, sum(r["indexed"] for r in rows), len(rows), s.describe()
    )
    for r in rows:
        if not r["indexed"]:
            log.warning("benchmark sample %s not indexed: %s", r["sample_id"], r["skip_reason"])


def scan_shard(
    scan: str,
    index: Path,
    benchmark: tuple[Path, ...],
    scan_settings: ScanSlice,
    part: int,
    parts: int,
    pairs: Path,
    accounting: Path,
    input: tuple[Path, ...] = (),
) -> None:
    """Scan corpus shard ``part`` of ``parts`` against a scan's index: every
    candidate pair verified, written to ``pairs``, and the accounting of what
    was read and skipped to ``accounting``. ``input``: the pipeline artifacts
    the corpus source reads (an ingested corpus shard, the training mix)."""
    s = resolved(scan, scan_settings)
    skips: Counter = Counter()
    documents = iter_source(
        dict(scan_settings.corpus), part, parts, list(input), skips, max_bytes=s.max_bytes, huge=s.huge
    )
    sandbox = SandboxLimits(**scan_settings.verify.sandbox)
    found = scan_documents(s, read_records(index), _samples(benchmark), documents, part, skips, sandbox, str(index))
    write_table(found.pairs, PAIR_SCHEMA, pairs)
    write_table(found.accounting, ACCOUNTING_SCHEMA, accounting)


def _judge(pairs: list[dict], judge: JudgeSlice, bench_text: dict[str, str]) -> None:
    """Ask the judge about every pair the rules call a Type-2/Type-3 clone or the
    texts flag; its label replaces the rule decision unless unparsed."""
    from leaktrace.leakage.judge import judge_pair, load_template, open_judge

    model = open_judge(asdict(judge))
    template = load_template()
    for p in pairs:
        if p["clone_type"] in ("type-2", "type-3") or p["flagged"]:
            verdict = judge_pair(
                model,
                template,
                bench_text[p["sample_id"]],
                p["text"],
                p["location"],
                max_new_tokens=judge.max_new_tokens,
            )
            p["judge_label"] = verdict.label
            if verdict.duplicate is not None:
                p["duplicate"] = verdict.duplicate


def membership(scan: str, leaked: set[str], split_rows: list[dict], all_ids: list[str]) -> dict:
    """Recall and precision of "leaked" against the testbed split: members are
    in the training mix and must all be found; anything else found is a false
    positive (non-members, and samples the filter dropped)."""
    split = {r["sample_id"]: r["split"] for r in split_rows}
    members = {i for i in all_ids if split.get(i) == "member"}
    non_members = {i for i in all_ids if split.get(i) == "non-member"}
    other = set(all_ids) - members - non_members
    found_m, found_n, found_o = len(leaked & members), len(leaked & non_members), len(leaked & other)
    return {
        "scan": scan,
        "members": len(members),
        "non_members": len(non_members),
        "not_in_split": len(other),
        "found_members": found_m,
        "found_non_members": found_n,
        "found_not_in_split": found_o,
        "recall": found_m / len(members) if members else float("nan"),
        "precision": found_m / len(leaked) if leaked else float("nan"),
    }


def _table2_row(summary: dict) -> dict:
    return {
        "benchmark": summary["benchmark"],
        "language": summary["language"] or "",
        "size": summary["size"],
        "#candidates (LSH)": summary["lsh_candidates"],
        "#auto (exact Jaccard/containment)": summary["candidates"],
        "verified duplicates": summary["verified_duplicates"],
        "leaked count": summary["leaked_count"],
        "leaked ratio": f"{100 * summary['leaked_ratio']:.1f}%",
    }


def language_averages(summaries: list[dict]) -> list[dict]:
    """LessLeak's RQ1 answer: per language, the mean of the benchmarks' leaked
    ratios (how they average), and the pooled ratio (leaked / size) beside it."""
    by_language: dict[str, list[dict]] = defaultdict(list)
    for row in summaries:
        by_language[row["language"] or "unknown"].append(row)
    return [
        {
            "language": lang,
            "benchmarks": len(rows),
            "size": sum(r["size"] for r in rows),
            "leaked count": sum(r["leaked_count"] for r in rows),
            "mean leaked ratio": f"{100 * float(np.mean([r['leaked_ratio'] for r in rows])):.1f}%",
            "pooled leaked ratio": f"{100 * sum(r['leaked_count'] for r in rows) / max(1, sum(r['size'] for r in rows)):.1f}%",
        }
        for lang, rows in sorted(by_language.items())
    ]


def _markdown(
    summaries: list[dict], types: Counter, sources: list[dict], accounting: list[dict], member: dict | None
) -> str:
    first = summaries[0]
    names = first["benchmark"] if len(summaries) == 1 else f"{len(summaries)} benchmarks"
    rows = [_table2_row(r) for r in summaries]
    lines = [
        f"### Leakage scan `{first['scan']}`: {names} vs {first['corpus']}",
        "",
        f"Scheme: {first['scheme']}.",
        "",
        markdown_table(rows, list(rows[0])),
    ]
    if len(summaries) > 1:
        averages = language_averages(summaries)
        lines += [
            "Per language (LessLeak's RQ1: the mean of the benchmarks' leaked ratios; pooled: leaked / size):",
            "",
            markdown_table(averages, list(averages[0])),
        ]
    lines += [
        "Duplicates by clone type (an input leak: the problem text without its solution): "
        + (", ".join(f"{k} {v}" for k, v in sorted(types.items())) or "none")
        + ".",
        "",
    ]
    if sources:
        lines.append(
            markdown_table(
                [{**r, "source": f"`{r['location']}`"} for r in sources[:10]], ["source", "duplicates", "samples"]
            )
        )
    skipped = [r for r in accounting if r["kind"] in ("skip", "whole_file") and r["count"]]
    lines.append(
        f"Documents: {first['documents']}, units compared: {first['units']}; "
        + (
            "; ".join(f"{r['kind'].replace('_', ' ')} {r['reason']}: {r['count']}" for r in skipped)
            or "nothing skipped"
        )
        + "."
    )
    if member:
        check = {
            "members": member["members"],
            "found": member["found_members"],
            "non-members found": member["found_non_members"],
            "other samples found": member["found_not_in_split"],
            "recall": f"{100 * member['recall']:.1f}%",
            "precision": f"{100 * member['precision']:.1f}%",
        }
        lines += [
            "",
            "Check against the training mix (every member must be found, nothing else):",
            "",
            markdown_table([check], list(check)).rstrip("\n"),
        ]
    return "\n".join(lines) + "\n"


def _language(rows: list[dict], default: str) -> str:
    """A benchmark's language: the most common among its samples (a tie: the first by name)."""
    counts = Counter(r.get("language") or default for r in rows)
    return max(sorted(counts), key=counts.__getitem__) if counts else default


def _write_clean(tables: list[pa.Table], leaked: set[str], output: Path) -> None:
    """The benchmark without its leaked samples, in its own schema; for a
    scan of several, their samples in one table (``benchmark`` tells them
    apart; columns one benchmark lacks are null for its rows)."""
    kept = [
        t.filter(pa.array([i not in leaked for i in t.column("sample_id").to_pylist()], pa.bool_())) for t in tables
    ]
    table = kept[0] if len(kept) == 1 else pa.concat_tables(kept, promote_options="default")
    write_table(table.to_pylist(), table.schema, output)


def gather(
    scan: str,
    index: Path,
    benchmark: Mapping[str, Path],
    pairs: tuple[Path, ...],
    accounting: tuple[Path, ...],
    scan_settings: ScanSlice,
    output_dir: Path,
    samples: Path | None = None,
) -> None:
    """Gather a scan's shards: the merged pairs (judged when the scan names a
    judge), LessLeak's Table 2 summary a row per benchmark (``benchmark``:
    name -> its table, in the scan's order), the sources behind most
    duplicates, the skip counts, the cleaned benchmark and the report
    fragment; with ``samples`` (a scan of the testbed's training mix), recall
    and precision of "leaked" against the member split."""
    s = resolved(scan, scan_settings)
    names = list(benchmark)
    tables = [read_table(path) for path in benchmark.values()]
    bench_rows = [t.to_pylist() for t in tables]
    pair_parts, accounting_parts = pairs, accounting
    pairs = [p for path in pair_parts for p in read_records(path)]
    pairs.sort(key=lambda p: (p["sample_id"], p["doc_id"], p["start_line"], p["part"]))
    judge = scan_settings.judge
    if judge.model:
        _judge(pairs, judge, {r["sample_id"]: document(r) for rows in bench_rows for r in rows})
    accounting_rows = [r for path in accounting_parts for r in read_records(path)]
    totals: Counter = Counter()
    for r in accounting_rows:
        totals[(r["kind"], r["reason"])] += r["count"]
    accounting = [{"part": -1, "kind": k, "reason": reason, "count": c} for (k, reason), c in sorted(totals.items())]
    index_rows = read_records(index, ["sample_id", "indexed", "skip_reason"])
    accounting += [
        {"part": -1, "kind": "benchmark_skip", "reason": r["skip_reason"], "count": 1}
        for r in index_rows
        if not r["indexed"]
    ]
    indexed = {r["sample_id"] for r in index_rows if r["indexed"]}
    dups = [p for p in pairs if p["duplicate"]]
    leaked = {p["sample_id"] for p in dups}
    per_source: dict[str, set] = defaultdict(set)
    dup_count: Counter = Counter()
    for p in dups:
        per_source[p["location"]].add(p["sample_id"])
        dup_count[p["location"]] += 1
    sources = sorted(
        ({"location": loc, "duplicates": dup_count[loc], "samples": len(ids)} for loc, ids in per_source.items()),
        key=lambda r: (-r["duplicates"], r["location"]),
    )
    types = Counter("input leak" if p.get("leak") == "input" else p["clone_type"] for p in dups)
    corpus = scan_settings.corpus
    corpus_name = (
        corpus.get("name")
        or corpus.get("dataset")
        or corpus.get("root")
        or ", ".join(corpus.get("paths") or [])
        or corpus["kind"].replace("_", " ")
    )
    summaries = []
    for name, rows in zip(names, bench_rows, strict=True):
        ids = {r["sample_id"] for r in rows}
        mine = [p for p in pairs if p["sample_id"] in ids]
        found = [p for p in mine if p["duplicate"]]
        kinds = Counter("input" if p.get("leak") == "input" else p["clone_type"] for p in found)
        summaries.append(
            {
                "scan": s.name,
                "benchmark": name,
                "language": _language(rows, s.language),
                "corpus": corpus_name,
                "scheme": s.describe(),
                "size": len(rows),
                "indexed": len(ids & indexed),
                "documents": totals[("count", "documents")],
                "units": totals[("count", "units")],
                "skipped": sum(c for (k, _), c in totals.items() if k == "skip"),
                "lsh_candidates": len(mine),
                "candidates": sum(p["flagged"] for p in mine),
                "verified_duplicates": len(found),
                "type1": kinds["type-1"],
                "type2": kinds["type-2"],
                "type3": kinds["type-3"],
                "leaked_count": len(ids & leaked),
                "leaked_ratio": len(ids & leaked) / len(rows) if rows else 0.0,
                "type4": kinds["type-4"],
                "input_leaks": kinds["input"],
            }
        )
    member = None
    if samples is not None:
        member = membership(
            s.name, leaked, read_records(samples, ["sample_id", "split"]), [r["sample_id"] for r in bench_rows[0]]
        )
    output_dir.mkdir(parents=True, exist_ok=True)
    write_table(pairs, PAIR_SCHEMA, output_dir / "pairs.parquet")
    write_table(summaries, SUMMARY_SCHEMA, output_dir / "summary.parquet")
    write_table(sources, SOURCES_SCHEMA, output_dir / "sources.parquet")
    write_table(accounting, ACCOUNTING_SCHEMA, output_dir / "accounting.parquet")
    write_table([member] if member else [], MEMBERSHIP_SCHEMA, output_dir / "membership.parquet")
    _write_clean(tables, leaked, output_dir / "clean.parquet")
    (output_dir / "report.md").write_text(_markdown(summaries, types, sources, accounting, member), encoding="utf-8")
    log.info(
        "gather %s: %d candidate pairs, %d duplicates; %s%s",
        s.name,
        len(pairs),
        len(dups),
        ", ".join(f"{r['benchmark']} {r['leaked_count']} of {r['size']} leaked" for r in summaries),
        f"; recall {member['recall']:.3f}, precision {member['precision']:.3f}" if member else "",
    )
