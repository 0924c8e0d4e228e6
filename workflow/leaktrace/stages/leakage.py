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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from tqdm import tqdm

from leaktrace.artifacts import read_records, read_table, write_table
from leaktrace.data.samples import TEXT, check_test, clone_text, document, language_of_sample
from leaktrace.errors import InputError
from leaktrace.leakage.containment import NGRAM as CONTAINMENT_NGRAM
from leaktrace.leakage.containment import (
    SLACK,
    WINDOW,
    ContainmentIndex,
    best_span,
    cut,
    hash_set,
    positional,
    shingle_set,
)
from leaktrace.leakage.execution import Executor
from leaktrace.leakage.lsh import BandIndex
from leaktrace.leakage.minhash import Signer
from leaktrace.leakage.renamed import normalised_shingle_hashes
from leaktrace.leakage.settings import ScanSettings, resolve
from leaktrace.leakage.sources import check_document, iter_source
from leaktrace.leakage.units import Unit, benchmark_parts, document_units, language_of
from leaktrace.leakage.verify import Side, Verdict, Verifier, VerifySettings, leak_kind, supersede
from leaktrace.report.tables import markdown_table
from leaktrace.sandbox import SandboxLimits

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


def _scan_settings(settings: dict) -> ScanSettings:
    return resolve(settings.get("name", "scan"), settings)


def scan_benchmarks(settings: dict) -> list[str]:
    """The names of the benchmarks a scan reads, in the order of its inputs."""
    return list(settings.get("benchmarks") or [settings["benchmark"]])


def _tables(benchmarks: Path | list[Path]) -> list[Path]:
    return [benchmarks] if isinstance(benchmarks, Path) else list(benchmarks)


def _samples(benchmarks: Path | list[Path]) -> list[dict]:
    """Every sample of every benchmark table (sample ids carry their benchmark's name)."""
    return [r for path in _tables(benchmarks) for r in read_records(path)]


def build_index(benchmark: Path | list[Path], settings: dict, output: Path) -> None:
    """Signatures of every benchmark sample (its full code, its problem text,
    or both: :func:`~leaktrace.data.samples.document`); samples that cannot
    be indexed stay in the table with the reason."""
    s = _scan_settings(settings)
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
            _renamed_hashes(signer, clone_text(sample), language_of_sample(sample, s.language), s) for sample in samples
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


def _renamed_hashes(signer: Signer, code: str, language: str | None, s: ScanSettings) -> np.ndarray | None:
    """The shingle hashes of the identifier-normalised channel, None when the
    text is not code or is shorter than ``min_tokens`` tokens."""
    n_tokens, h = normalised_shingle_hashes(signer, code, language)
    return h if n_tokens and n_tokens >= s.min_tokens else None


def _load_index(index: Path, s: ScanSettings, signer: Signer, column: str = "signature") -> BandIndex:
    """The LSH bands of one channel's signatures (``signature``, or ``renamed_signature``)."""
    table = read_records(index)
    if table and column not in table[0]:
        raise InputError(str(index), None, f"index has no {column} column: rebuild it (rule leakage_index)")
    keep = [r for r in table if r["indexed"] and r[column] is not None]
    bands = BandIndex(s.bands, s.rows)
    if keep:
        sigs = np.array([r[column] for r in keep], dtype=np.uint64).astype(signer.dtype)
        if sigs.shape[1] != s.minhash.num_perm:
            raise InputError(
                str(index), None, f"index has {sigs.shape[1]} permutations, settings ask for {s.minhash.num_perm}"
            )
        bands.insert([r["sample_id"] for r in keep], sigs)
    return bands


def _sandbox_limits(settings: dict) -> SandboxLimits:
    """The sandbox a scan's execution check runs in: ``verify.sandbox`` of the scan (SandboxLimits' fields)."""
    return SandboxLimits(**((settings.get("verify") or {}).get("sandbox") or {}))


@dataclass
class _Entry:
    """One thing a scan compares: a corpus unit (its code channels' hashes
    set) or, for the problem-text channel, a whole document (``hashes`` None)."""

    doc_id: str
    location: str
    unit: Unit
    lang: str | None
    hashes: np.ndarray | None = None  # the preset's shingle hashes (the MinHash channels)
    renamed: np.ndarray | None = None  # the identifier-normalised channel's
    contained: np.ndarray | None = None  # the containment channel's shingle set
    prose: np.ndarray | None = None  # the problem-text channel's (lowercased) shingle set
    n_tokens: int = 0  # the unit's tokens: a candidate in a unit longer than its sample is verified on its span


def _channels(s: ScanSettings, bench_rows: list[dict], bench_lang: dict, bench_clone: dict, side_of) -> tuple:
    """The containment channel's index over every sample's whole solution and
    its definitions (:func:`~leaktrace.leakage.units.benchmark_parts`), keyed
    (sample id, part name; "" for the whole), with the parts; and the
    problem-text channel's index over the samples with a problem text of at
    least ``statement_min_words`` words, keyed (sample id, "")."""
    parts: dict[tuple[str, str], Unit] = {}
    contained = statements = None
    if s.containment_channel is not None:
        keys, sets = [], []
        for r in bench_rows:
            sid = r["sample_id"]
            for u in (
                benchmark_parts(bench_clone[sid], bench_lang[sid])
                if bench_lang[sid] != TEXT
                else [Unit(bench_clone[sid], None, 1, 1)]
            ):
                hashes, starts, _, _ = positional(u.text)
                if len(starts) < s.min_tokens:
                    continue
                key = (sid, "" if u.name is None and u.text == bench_clone[sid] else u.name or f"line {u.start_line}")
                parts[key] = u
                keys.append(key)
                sets.append(np.unique(hashes))
        contained = ContainmentIndex(keys, sets, s.containment_channel)
    if s.statement_channel:
        keys, sets = [], []
        for r in bench_rows:
            words = side_of(r["sample_id"]).problem
            if len(words) >= s.verify.statement_min_words:
                keys.append((r["sample_id"], ""))
                sets.append(hash_set(" ".join(words), lower=True))
        statements = ContainmentIndex(keys, sets, s.verify.statement)
    return contained, statements, parts


_RANK = {"type-1": 0, "type-2": 1, "type-3": 2, "type-4": 3}


def _best(found: list[tuple[str, Unit, str, Verdict]], s: VerifySettings) -> tuple[str, Unit, str, Verdict]:
    """Of one sample's verdicts against one unit (its whole solution, its
    parts, each on its span), the one that says most: a code duplicate, then
    an input leak, the lowest clone type, the whole before a part."""
    return min(
        found,
        key=lambda f: (
            leak_kind(f[3], s) != "code",
            leak_kind(f[3], s) is None,
            _RANK.get(f[3].clone_type, 4),
            f[0] != "",
            f[1].start_line,
            f[0],
        ),
    )


def scan_shard(
    index: Path,
    benchmark: Path | list[Path],
    source: dict,
    part: int,
    n_parts: int,
    inputs: list[Path],
    settings: dict,
    pairs_out: Path,
    accounting_out: Path,
) -> None:
    s = _scan_settings(settings)
    signer = Signer(s.minhash)
    bands = _load_index(index, s, signer)
    renamed_bands = _load_index(index, s, signer, "renamed_signature") if s.renamed else None
    verifier = Verifier(s.verify, Executor(_sandbox_limits(settings)) if s.verify.execute else None)
    bench_rows = _samples(benchmark)
    bench_row = {r["sample_id"]: r for r in bench_rows}
    bench_text = {r["sample_id"]: document(r) for r in bench_rows}
    bench_lang = {r["sample_id"]: language_of_sample(r, s.language) for r in bench_rows}
    bench_clone = {r["sample_id"]: clone_text(r) for r in bench_rows}
    bench_sides: dict = {}

    def side_of(sid: str, part_name: str = "") -> Side:
        if (sid, part_name) not in bench_sides:
            if part_name:
                bench_sides[sid, part_name] = verifier.side(parts[sid, part_name].text, bench_lang[sid])
            else:
                test, entry_point = check_test(bench_row[sid])
                bench_sides[sid, ""] = verifier.side(
                    bench_text[sid], bench_lang[sid], bench_clone[sid], test=test, entry_point=entry_point
                )
        return bench_sides[sid, part_name]

    contained, statements, parts = _channels(s, bench_rows, bench_lang, bench_clone, side_of)
    # the containment channel reuses the preset's hashes when they are its shingles (the default preset's)
    same_hashes = (s.minhash.tokenizer, s.minhash.ngram, s.minhash.hash) == ("code", CONTAINMENT_NGRAM, "rolling64")
    skips: Counter = Counter()
    counts: Counter = Counter()
    whole: Counter = Counter()
    pairs: list[dict] = []
    batch: list[_Entry] = []
    # the document whose units are being flushed and the samples they are code duplicates of (its problem-text entry comes last)
    # and the lines of those copies (a problem text found inside a copy of another sample's code is that copy's)
    code_found: dict = {"doc": None, "samples": set(), "lines": []}

    def compared_unit(e: _Entry, key: tuple[str, str], channel: str) -> Unit | None:
        """The unit a candidate is verified on: the unit, or in a unit much
        longer than the sample's part, its matched span (None: no window holds
        enough of a containment or problem-text candidate)."""
        index, lower = (statements, True) if channel == "statement" else (contained, False)
        if index is None or key not in index.set_of or e.n_tokens <= WINDOW * index.size_of[key] + SLACK:
            return e.unit
        span = best_span(index.set_of[key], e.unit.text, lower)
        if span is None or span.containment < index.threshold:
            return e.unit if channel == "lsh" else None  # a MinHash candidate is verified whole: its own evidence
        return cut(e.unit, span)

    def flush() -> None:
        if not batch:
            return
        cands: list[dict[tuple[str, str], str]] = [{} for _ in batch]  # key: the channel that proposed it
        code = [i for i, e in enumerate(batch) if e.hashes is not None]
        if code:
            found = bands.query(signer.signatures([batch[i].hashes for i in code]))
            if renamed_bands is not None:
                renamed_only = [
                    r - c
                    for c, r in zip(
                        found, _query_renamed(signer, renamed_bands, [batch[i].renamed for i in code]), strict=True
                    )
                ]
                counts["renamed_channel_units"] += sum(bool(r) for r in renamed_only)
                found = [c | r for c, r in zip(found, renamed_only, strict=True)]
            for i, sids in zip(code, found, strict=True):
                cands[i].update(((sid, ""), "lsh") for sid in sids)
        for index, attribute, channel in ((contained, "contained", "containment"), (statements, "prose", "statement")):
            idx = [i for i, e in enumerate(batch) if getattr(e, attribute) is not None]
            if index is None or not idx:
                continue
            for i, keys in zip(idx, index.query([getattr(batch[i], attribute) for i in idx]), strict=True):
                added = [k for k in keys if k not in cands[i]]
                counts[f"{channel}_channel_units"] += bool(added)
                cands[i].update((k, channel) for k in added)
        for e, keys in zip(batch, cands, strict=True):
            if code_found["doc"] != e.doc_id:
                code_found.update(doc=e.doc_id, samples=set(), lines=[])
            if e.hashes is None:  # a document's problem-text entry: not again what its units are copies of
                keys = {k: c for k, c in keys.items() if k[0] not in code_found["samples"]}
            if not keys:
                continue
            counts["candidate_units"] += 1
            sides: dict = {}  # a unit (or span) lexed as its language, and as text against a text-only sample
            compared, meta = [], []
            for key in sorted(keys):
                sid = key[0]
                unit = compared_unit(e, key, keys[key])
                if unit is None or (
                    e.hashes is None
                    and any(a <= unit.end_line and unit.start_line <= b for a, b in code_found["lines"])
                ):
                    continue
                as_lang = TEXT if bench_lang[sid] == TEXT else e.lang
                if (as_lang, unit.start_line, unit.end_line) not in sides:
                    sides[as_lang, unit.start_line, unit.end_line] = verifier.side(unit.text, as_lang)
                compared.append((side_of(*key), sides[as_lang, unit.start_line, unit.end_line]))
                meta.append((key, unit, keys[key]))
            verdicts = verifier.execute(
                [(b, c, v) for (b, c), v in zip(compared, verifier.verdicts(compared), strict=True)]
            )
            by_sample: dict[str, list] = defaultdict(list)
            for (key, unit, channel), v in zip(meta, verdicts, strict=True):
                by_sample[key[0]].append((key[1], unit, channel, v))
            best = {sid: _best(found, s.verify) for sid, found in sorted(by_sample.items())}
            for (sid, (part_name, unit, channel, _)), v in zip(
                best.items(), supersede([b[3] for b in best.values()], s.verify), strict=True
            ):
                leak = leak_kind(v, s.verify)
                if leak == "code" and e.hashes is not None:
                    code_found["samples"].add(sid)
                    code_found["lines"].append((unit.start_line, unit.end_line))
                pairs.append(
                    {
                        "sample_id": sid,
                        "doc_id": e.doc_id,
                        "location": e.location,
                        "unit": unit.name,
                        "start_line": unit.start_line,
                        "end_line": unit.end_line,
                        "language": e.lang,
                        "part": part,
                        **{k: value for k, value in v.as_row().items() if k not in ("duplicate", "input_leak")},
                        "rule_duplicate": leak is not None,
                        "judge_label": None,
                        "duplicate": leak is not None,
                        "text": unit.text,
                        "leak": leak,
                        "channel": channel,
                        "bench_part": part_name or None,
                    }
                )
        batch.clear()

    documents = iter_source(source, part, n_parts, inputs, skips, max_bytes=s.max_bytes, huge=s.huge)
    for doc in tqdm(documents, desc=f"scan {s.name} part {part}", mininterval=10, unit="doc"):
        counts["documents"] += 1
        text, reason = check_document(doc.data, s.max_bytes, s.huge)
        if reason:
            skips[reason] += 1
            continue
        lang = language_of(doc.location, s.language)
        units, why_whole = document_units(text, lang, s.granularity, s.max_bytes)
        if why_whole == "huge":
            counts["chunked_units"] += 1
        elif why_whole:
            whole[why_whole] += 1
        # the problem-text channel reads a whole document (a statement may lie outside every function), a
        # huge one window by window
        doc_prose = s.statement_channel and why_whole != "huge"
        try:
            for unit in units:
                n_tokens, h = signer.shingle_hashes(unit.text)
                if n_tokens < s.min_tokens:
                    skips["too_short"] += 1
                    continue
                counts["units"] += 1
                renamed = _renamed_hashes(signer, unit.text, lang, s) if renamed_bands is not None else None
                entry = _Entry(doc.doc_id, doc.location, unit, lang, h, renamed, n_tokens=n_tokens)
                if contained is not None:
                    entry.contained = h if same_hashes else hash_set(unit.text)
                if s.statement_channel and (not doc_prose or unit.text == text):
                    entry.prose = hash_set(unit.text, lower=True)
                    doc_prose = doc_prose and unit.text != text
                batch.append(entry)
                if len(batch) >= s.batch_size:
                    flush()
        except (OSError, UnicodeDecodeError) as err:  # a huge file that changed or failed while it was read from disk
            log.warning(
                "%s became unreadable while it was split (%s): the units read before are scanned, the file is "
                "counted as unreadable",
                doc.location,
                err,
            )
            skips["unreadable"] += 1
        if doc_prose:
            n_tokens, prose = shingle_set(text, lower=True)
            batch.append(
                _Entry(
                    doc.doc_id,
                    doc.location,
                    Unit(text, None, 1, 1 + text.count("\n")),
                    lang,
                    prose=prose,
                    n_tokens=n_tokens,
                )
            )
            if len(batch) >= s.batch_size:
                flush()
    flush()
    write_table(pairs, PAIR_SCHEMA, pairs_out)
    rows = [
        {"part": part, "kind": "count", "reason": k, "count": counts[k]}
        for k in ("documents", "units", "chunked_units", "candidate_units")
        + (("renamed_channel_units",) if renamed_bands is not None else ())
        + (("containment_channel_units",) if contained is not None else ())
        + (("statement_channel_units",) if statements is not None else ())
    ]
    rows += [{"part": part, "kind": "skip", "reason": k, "count": v} for k, v in sorted(skips.items())]
    rows += [{"part": part, "kind": "whole_file", "reason": k, "count": v} for k, v in sorted(whole.items())]
    write_table(rows, ACCOUNTING_SCHEMA, accounting_out)
    log.info(
        "scan %s part %d: %d documents, %d units, %d candidate pairs, %d duplicates; skipped %s",
        s.name,
        part,
        counts["documents"],
        counts["units"],
        len(pairs),
        sum(p["duplicate"] for p in pairs),
        dict(skips),
    )


def _query_renamed(signer: Signer, bands: BandIndex, hashes: list[np.ndarray | None]) -> list[set]:
    """The renamed channel's candidates of each unit (none for a unit it cannot normalise)."""
    out: list[set] = [set() for _ in hashes]
    present = [i for i, h in enumerate(hashes) if h is not None]
    if present:
        for i, cands in zip(present, bands.query(signer.signatures([hashes[i] for i in present])), strict=True):
            out[i] = cands
    return out


def _judge(pairs: list[dict], judge: dict, bench_text: dict[str, str]) -> None:
    """Ask the judge about every pair the rules call a Type-2/Type-3 clone or the
    texts flag; its label replaces the rule decision unless unparsed."""
    from leaktrace.leakage.judge import judge_pair, load_template, open_judge

    model = open_judge(judge)
    template = load_template()
    for p in pairs:
        if p["clone_type"] in ("type-2", "type-3") or p["flagged"]:
            verdict = judge_pair(
                model,
                template,
                bench_text[p["sample_id"]],
                p["text"],
                p["location"],
                max_new_tokens=judge.get("max_new_tokens", 16),
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
    index: Path,
    benchmark: Path | list[Path],
    pair_parts: list[Path],
    accounting_parts: list[Path],
    settings: dict,
    samples: Path | None,
    output_dir: Path,
) -> None:
    s = _scan_settings(settings)
    names = scan_benchmarks(settings)
    tables = [read_table(path) for path in _tables(benchmark)]
    if len(tables) != len(names):
        raise ValueError(f"scan {s.name}: {len(tables)} benchmark tables for benchmarks {names}")
    bench_rows = [t.to_pylist() for t in tables]
    pairs = [p for path in pair_parts for p in read_records(path)]
    pairs.sort(key=lambda p: (p["sample_id"], p["doc_id"], p["start_line"], p["part"]))
    judge = settings.get("judge") or {}
    if judge.get("model"):
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
    corpus = settings["corpus"]
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
