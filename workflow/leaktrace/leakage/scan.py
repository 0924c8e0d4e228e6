"""One corpus shard through a scan's index: the leakage scan's computation.

Every document of the shard is split into units (functions, or the whole
file; a huge file window by window); each unit is signed and looked up in
the benchmark's LSH bands (and, when on, the identifier-normalised bands),
the containment channel's index over the samples' solutions and parts, and
the problem-text channel's index over their problem texts. Every candidate
pair is verified (:mod:`leaktrace.leakage.verify`), on the matched span when
the unit is much longer than the sample; of one sample's verdicts against a
unit the one that says most is kept. Units are held in batches of
``batch_size``, flushed as they fill, so memory is bounded by one document
(or window) plus one batch plus the pairs found. The stage
(``leaktrace leakage-scan``) reads the index and benchmark tables, calls
:func:`scan_documents` and writes its two tables."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

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
from leaktrace.leakage.settings import ScanSettings
from leaktrace.leakage.sources import RawDocument, check_document
from leaktrace.leakage.units import Unit, benchmark_parts, document_units, language_of
from leaktrace.leakage.verify import Side, Verdict, Verifier, VerifySettings, leak_kind, supersede
from leaktrace.sandbox import SandboxLimits

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShardScan:
    """What one shard's scan found: a row per verified candidate pair (the
    columns of the stage's pairs table) and the accounting of what it read
    and skipped (``part``, ``kind``, ``reason``, ``count``)."""

    pairs: list[dict]
    accounting: list[dict]


def renamed_hashes(signer: Signer, code: str, language: str | None, s: ScanSettings) -> np.ndarray | None:
    """The shingle hashes of the identifier-normalised channel, None when the
    text is not code or is shorter than ``min_tokens`` tokens."""
    n_tokens, h = normalised_shingle_hashes(signer, code, language)
    return h if n_tokens and n_tokens >= s.min_tokens else None


def _load_index(
    rows: list[dict], s: ScanSettings, signer: Signer, column: str = "signature", where: str = "index"
) -> BandIndex:
    """The LSH bands of one channel's signatures (``signature``, or
    ``renamed_signature``) in the index table's ``rows``; ``where`` names the
    table in errors."""
    if rows and column not in rows[0]:
        raise InputError(where, None, f"index has no {column} column: rebuild it (rule leakage_index)")
    keep = [r for r in rows if r["indexed"] and r[column] is not None]
    bands = BandIndex(s.bands, s.rows)
    if keep:
        sigs = np.array([r[column] for r in keep], dtype=np.uint64).astype(signer.dtype)
        if sigs.shape[1] != s.minhash.num_perm:
            raise InputError(
                where, None, f"index has {sigs.shape[1]} permutations, settings ask for {s.minhash.num_perm}"
            )
        bands.insert([r["sample_id"] for r in keep], sigs)
    return bands


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


def scan_documents(
    s: ScanSettings,
    index_rows: list[dict],
    bench_rows: list[dict],
    documents: Iterable[RawDocument],
    part: int,
    skips: Counter,
    sandbox: SandboxLimits,
    where: str = "index",
) -> ShardScan:
    """Scan the ``documents`` of shard ``part`` against ``index_rows`` (the
    index table: signatures of ``bench_rows``, the benchmark samples).
    ``skips``: the counts of documents the source skipped while it streamed
    them (:func:`~leaktrace.leakage.sources.iter_source` fills it), to which
    the scan adds its own; ``sandbox``: the limits of the execution check's
    runs (when ``verify.execute`` is on); ``where`` names the index in errors."""
    shard = _Shard(s, index_rows, bench_rows, part, skips, sandbox, where)
    for doc in tqdm(documents, desc=f"scan {s.name} part {part}", mininterval=10, unit="doc"):
        shard.add(doc)
    shard.flush()
    log.info(
        "scan %s part %d: %d documents, %d units, %d candidate pairs, %d duplicates; skipped %s",
        s.name,
        part,
        shard.counts["documents"],
        shard.counts["units"],
        len(shard.pairs),
        sum(p["duplicate"] for p in shard.pairs),
        dict(skips),
    )
    return ShardScan(shard.pairs, shard.accounting())


class _Shard:
    """One shard's scan in progress: the benchmark side (its LSH bands, its
    channels' indexes, its samples as the verifier sees them), the batch of
    corpus units waiting for their candidates, and what was found and counted."""

    def __init__(
        self,
        s: ScanSettings,
        index_rows: list[dict],
        bench_rows: list[dict],
        part: int,
        skips: Counter,
        sandbox: SandboxLimits,
        where: str,
    ):
        self.s, self.part, self.skips = s, part, skips
        self.signer = Signer(s.minhash)
        self.bands = _load_index(index_rows, s, self.signer, where=where)
        self.renamed_bands = _load_index(index_rows, s, self.signer, "renamed_signature", where) if s.renamed else None
        self.verifier = Verifier(s.verify, Executor(sandbox) if s.verify.execute else None)
        self.bench_row = {r["sample_id"]: r for r in bench_rows}
        self.bench_text = {r["sample_id"]: document(r) for r in bench_rows}
        self.bench_lang = {r["sample_id"]: language_of_sample(r, s.language) for r in bench_rows}
        self.bench_clone = {r["sample_id"]: clone_text(r) for r in bench_rows}
        self.bench_sides: dict = {}
        self.contained, self.statements, self.parts = _channels(
            s, bench_rows, self.bench_lang, self.bench_clone, self.side_of
        )
        # the containment channel reuses the preset's hashes when they are its shingles (the default preset's)
        self.same_hashes = (s.minhash.tokenizer, s.minhash.ngram, s.minhash.hash) == (
            "code",
            CONTAINMENT_NGRAM,
            "rolling64",
        )
        self.counts: Counter = Counter()
        self.whole: Counter = Counter()
        self.pairs: list[dict] = []
        self.batch: list[_Entry] = []
        # the document whose units are being flushed and the samples they are code duplicates of (its problem-text
        # entry comes last) and the lines of those copies (a problem text found inside a copy of another sample's
        # code is that copy's)
        self.code_found: dict = {"doc": None, "samples": set(), "lines": []}

    def side_of(self, sid: str, part_name: str = "") -> Side:
        """Benchmark sample ``sid`` (or its part ``part_name``) as the verifier compares it, computed once."""
        sides = self.bench_sides
        if (sid, part_name) not in sides:
            if part_name:
                sides[sid, part_name] = self.verifier.side(self.parts[sid, part_name].text, self.bench_lang[sid])
            else:
                test, entry_point = check_test(self.bench_row[sid])
                sides[sid, ""] = self.verifier.side(
                    self.bench_text[sid],
                    self.bench_lang[sid],
                    self.bench_clone[sid],
                    test=test,
                    entry_point=entry_point,
                )
        return sides[sid, part_name]

    def add(self, doc: RawDocument) -> None:
        """A corpus document: its units (and, for the problem-text channel, the
        whole of it) into the batch, which is flushed as it fills."""
        s, counts, skips = self.s, self.counts, self.skips
        counts["documents"] += 1
        text, reason = check_document(doc.data, s.max_bytes, s.huge)
        if reason:
            skips[reason] += 1
            return
        lang = language_of(doc.location, s.language)
        units, why_whole = document_units(text, lang, s.granularity, s.max_bytes)
        if why_whole == "huge":
            counts["chunked_units"] += 1
        elif why_whole:
            self.whole[why_whole] += 1
        # the problem-text channel reads a whole document (a statement may lie outside every function), a
        # huge one window by window
        doc_prose = s.statement_channel and why_whole != "huge"
        try:
            for unit in units:
                n_tokens, h = self.signer.shingle_hashes(unit.text)
                if n_tokens < s.min_tokens:
                    skips["too_short"] += 1
                    continue
                counts["units"] += 1
                renamed = renamed_hashes(self.signer, unit.text, lang, s) if self.renamed_bands is not None else None
                entry = _Entry(doc.doc_id, doc.location, unit, lang, h, renamed, n_tokens=n_tokens)
                if self.contained is not None:
                    entry.contained = h if self.same_hashes else hash_set(unit.text)
                if s.statement_channel and (not doc_prose or unit.text == text):
                    entry.prose = hash_set(unit.text, lower=True)
                    doc_prose = doc_prose and unit.text != text
                self._append(entry)
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
            self._append(
                _Entry(
                    doc.doc_id,
                    doc.location,
                    Unit(text, None, 1, 1 + text.count("\n")),
                    lang,
                    prose=prose,
                    n_tokens=n_tokens,
                )
            )

    def _append(self, entry: _Entry) -> None:
        self.batch.append(entry)
        if len(self.batch) >= self.s.batch_size:
            self.flush()

    def compared_unit(self, e: _Entry, key: tuple[str, str], channel: str) -> Unit | None:
        """The unit a candidate is verified on: the unit, or in a unit much
        longer than the sample's part, its matched span (None: no window holds
        enough of a containment or problem-text candidate)."""
        index, lower = (self.statements, True) if channel == "statement" else (self.contained, False)
        if index is None or key not in index.set_of or e.n_tokens <= WINDOW * index.size_of[key] + SLACK:
            return e.unit
        span = best_span(index.set_of[key], e.unit.text, lower)
        if span is None or span.containment < index.threshold:
            return e.unit if channel == "lsh" else None  # a MinHash candidate is verified whole: its own evidence
        return cut(e.unit, span)

    def candidates(self) -> list[dict[tuple[str, str], str]]:
        """Each batch entry's candidates, (sample id, part name) -> the channel that proposed it."""
        batch, counts = self.batch, self.counts
        cands: list[dict[tuple[str, str], str]] = [{} for _ in batch]
        code = [i for i, e in enumerate(batch) if e.hashes is not None]
        if code:
            found = self.bands.query(self.signer.signatures([batch[i].hashes for i in code]))
            if self.renamed_bands is not None:
                renamed = _query_renamed(self.signer, self.renamed_bands, [batch[i].renamed for i in code])
                renamed_only = [r - c for c, r in zip(found, renamed, strict=True)]
                counts["renamed_channel_units"] += sum(bool(r) for r in renamed_only)
                found = [c | r for c, r in zip(found, renamed_only, strict=True)]
            for i, sids in zip(code, found, strict=True):
                cands[i].update(((sid, ""), "lsh") for sid in sids)
        for index, attribute, channel in (
            (self.contained, "contained", "containment"),
            (self.statements, "prose", "statement"),
        ):
            idx = [i for i, e in enumerate(batch) if getattr(e, attribute) is not None]
            if index is None or not idx:
                continue
            for i, keys in zip(idx, index.query([getattr(batch[i], attribute) for i in idx]), strict=True):
                added = [k for k in keys if k not in cands[i]]
                counts[f"{channel}_channel_units"] += bool(added)
                cands[i].update((k, channel) for k in added)
        return cands

    def flush(self) -> None:
        """Verify every candidate of the batch's entries; one pair a sample and unit, the verdict that says most."""
        if not self.batch:
            return
        s, verifier, code_found = self.s, self.verifier, self.code_found
        for e, keys in zip(self.batch, self.candidates(), strict=True):
            if code_found["doc"] != e.doc_id:
                code_found.update(doc=e.doc_id, samples=set(), lines=[])
            if e.hashes is None:  # a document's problem-text entry: not again what its units are copies of
                keys = {k: c for k, c in keys.items() if k[0] not in code_found["samples"]}
            if not keys:
                continue
            self.counts["candidate_units"] += 1
            sides: dict = {}  # a unit (or span) lexed as its language, and as text against a text-only sample
            compared, meta = [], []
            for key in sorted(keys):
                sid = key[0]
                unit = self.compared_unit(e, key, keys[key])
                if unit is None or (
                    e.hashes is None
                    and any(a <= unit.end_line and unit.start_line <= b for a, b in code_found["lines"])
                ):
                    continue
                as_lang = TEXT if self.bench_lang[sid] == TEXT else e.lang
                if (as_lang, unit.start_line, unit.end_line) not in sides:
                    sides[as_lang, unit.start_line, unit.end_line] = verifier.side(unit.text, as_lang)
                compared.append((self.side_of(*key), sides[as_lang, unit.start_line, unit.end_line]))
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
                self.pairs.append(
                    {
                        "sample_id": sid,
                        "doc_id": e.doc_id,
                        "location": e.location,
                        "unit": unit.name,
                        "start_line": unit.start_line,
                        "end_line": unit.end_line,
                        "language": e.lang,
                        "part": self.part,
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
        self.batch.clear()

    def accounting(self) -> list[dict]:
        """What the shard read, compared and skipped, a row each."""
        part, counts = self.part, self.counts
        rows = [
            {"part": part, "kind": "count", "reason": k, "count": counts[k]}
            for k in ("documents", "units", "chunked_units", "candidate_units")
            + (("renamed_channel_units",) if self.renamed_bands is not None else ())
            + (("containment_channel_units",) if self.contained is not None else ())
            + (("statement_channel_units",) if self.statements is not None else ())
        ]
        rows += [{"part": part, "kind": "skip", "reason": k, "count": v} for k, v in sorted(self.skips.items())]
        rows += [{"part": part, "kind": "whole_file", "reason": k, "count": v} for k, v in sorted(self.whole.items())]
        return rows


def _query_renamed(signer: Signer, bands: BandIndex, hashes: list[np.ndarray | None]) -> list[set]:
    """The renamed channel's candidates of each unit (none for a unit it cannot normalise)."""
    out: list[set] = [set() for _ in hashes]
    present = [i for i, h in enumerate(hashes) if h is not None]
    if present:
        for i, cands in zip(present, bands.query(signer.signatures([hashes[i] for i in present])), strict=True):
            out[i] = cands
    return out
