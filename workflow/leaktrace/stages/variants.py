"""variants: the identifier lexicon of the code corpus, then n
semantics-preserving variants of every sample that passed the function
filters (kind "rename", ``variant_id`` 1..n, for the detectors) and
n_filter more, drawn from a stream of their own and never equal to a
detector variant (kind "filter", ids n+1..n+n_filter, for SrDetection's
pre-exposure filter only); a sample may get fewer of either. With
``test_cases``, SrDetection's test-case transformation (tau_t, offline) is
applied on top of each detector variant: kind "alternative", ids after the
filter's, scored only by SrDetection's per-generator instances. Column
``generator`` says what made each variant ("ast": the AST renamer; "+tt":
then tau_t). The original
is run against its tests in the sandbox and stored as ``variant_id`` 0; a
variant is valid iff it behaves exactly as the original under them. Every
row records the sandbox's isolation level (``full``, or ``weak`` where the
config allowed running without namespaces or cgroups)."""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.errors import InputError
from leaktrace.sandbox import SandboxLimits, SandboxUnavailable, isolation_level
from leaktrace.seeding import rng_for
from leaktrace.variants.lexicon import IdentifierLexicon, build_identifier_lexicon
from leaktrace.variants.naming import NameProposer
from leaktrace.variants.renaming import make_variants
from leaktrace.variants.synonyms import WordAlternatives
from leaktrace.variants.testcases import apply_plan, plan_test_cases, run_plans
from leaktrace.variants.validate import reserved_names, validate_variants

log = logging.getLogger(__name__)

LEXICON_SCHEMA = pa.schema([("kind", pa.string()), ("name", pa.string()), ("count", pa.int64())])

VARIANTS_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("variant_id", pa.int32()),  # 0 = the original
        ("kind", pa.string()),  # "original", "rename" (the detectors' variants), "filter" (the pre-exposure
        # filter's) or "alternative" (another generator's detector variants, for SrDetection's per-generator instances)
        ("text", pa.string()),
        ("entry_point", pa.string()),
        ("renames", pa.string()),  # JSON object: old name -> new name
        ("generator", pa.string()),  # "original", "ast" (AST renaming) or "ast+tt" (then test-case transformation)
        ("valid", pa.bool_()),
        ("invalid_reason", pa.string()),
        ("isolation", pa.string()),  # the sandbox's: "full" or "weak"
    ]
)


def build_lexicon(code_parts: list[Path], settings: dict, output: Path) -> None:
    sources = (r["text"] for part in code_parts for r in read_records(part, ["text"]))
    lexicon = build_identifier_lexicon(sources, min_count=settings["min_count"])
    write_table(lexicon.to_records(), LEXICON_SCHEMA, output)


def make_variants_table(
    benchmark: Path, functions: Path, lexicon_path: Path, settings: dict, seed: int, workers: int, output: Path
) -> None:
    lexicon = IdentifierLexicon.from_records(read_records(lexicon_path))
    names = NameProposer(WordAlternatives(lexicon.word_counts), lexicon.word_counts)
    kept = {r["sample_id"] for r in read_records(functions, ["sample_id", "kept"]) if r["kept"]}
    samples = [s for s in read_records(benchmark) if s["sample_id"] in kept]
    limits = SandboxLimits(**settings["sandbox"])
    try:
        isolation = isolation_level(limits)
    except SandboxUnavailable as error:
        raise InputError("config variants.sandbox", None, str(error)) from None
    log.info("sandbox isolation: %s", isolation)
    rows, programs, pending = [], [], []
    for s in samples:
        reserved = reserved_names(s["test"])  # names the tests call must keep their names
        detector = make_variants(s["code"], s["entry_point"], names, n=settings["n"],
                                 rng=rng_for(seed, "variants", s["sample_id"]), reserved=reserved)
        pre_exposure = make_variants(s["code"], s["entry_point"], names, n=settings["n_filter"],
                                     rng=rng_for(seed, "filter-variants", s["sample_id"]), reserved=reserved,
                                     exclude=[v.text for v in detector])
        # ids 1..n are the detector's, n+1..n+n_filter the filter's, however many each set got
        numbered = [(k, "rename", v) for k, v in enumerate(detector, start=1)]
        numbered += [(settings["n"] + k, "filter", v) for k, v in enumerate(pre_exposure, start=1)]
        numbered = [(k, kind, "ast", v) for k, kind, v in numbered]
        pending.append((s, detector, numbered))
    plans = [plan_test_cases(s["code"], s["entry_point"], s["test"], len(detector),
                             rng_for(seed, "test-cases", s["sample_id"])) if settings["test_cases"] else None
             for s, detector, _ in pending]
    runs = iter(run_plans([p for p in plans if p], limits, workers=workers) if settings["test_cases"] else [])
    test_case_outcomes = Counter()
    for (s, detector, numbered), plan in zip(pending, plans, strict=True):
        rows.append({"sample_id": s["sample_id"], "variant_id": 0, "kind": "original", "text": s["code"],
                     "entry_point": s["entry_point"], "renames": "{}", "generator": "original"})
        programs.append((s["code"], s["test"], s["entry_point"]))
        if plan is not None:  # tau_t on top of each detector variant: x_i = tau_t(tau_v(tau_f(x)))
            transformed = apply_plan(plan, next(runs), [(v.text, v.entry_point) for v in detector])
            test_case_outcomes[transformed.outcome] += 1
            composed = [replace(v, text=text) for v, text in zip(detector, transformed.texts, strict=True) if text]
            first = settings["n"] + settings["n_filter"] + 1
            numbered += [(k, "alternative", "ast+tt", v) for k, v in enumerate(composed, start=first)]
        for k, kind, generator, v in numbered:
            rows.append({"sample_id": s["sample_id"], "variant_id": k, "kind": kind, "text": v.text,
                         "entry_point": v.entry_point, "renames": json.dumps(v.renames, sort_keys=True),
                         "generator": generator})
            programs.append((v.text, s["test"], v.entry_point))
    if settings["test_cases"]:
        log.info("test-case transformation: %s", dict(sorted(test_case_outcomes.items())))
    original_of = {row["sample_id"]: i for i, row in enumerate(rows) if row["variant_id"] == 0}
    originals = [original_of[row["sample_id"]] for row in rows]
    verdicts = validate_variants(programs, originals, limits, workers=workers)
    for row, (valid, reason) in zip(rows, verdicts, strict=True):
        row["valid"], row["invalid_reason"], row["isolation"] = valid, reason, isolation
    write_table(rows, VARIANTS_SCHEMA, output)
    failures = Counter((r["invalid_reason"] or "").split(":")[0] for r in rows if not r["valid"])
    log.info("%d samples, %d detector and %d filter variants, %d invalid (%s)", len(samples),
             sum(r["kind"] == "rename" for r in rows), sum(r["kind"] == "filter" for r in rows),
             sum(not r["valid"] for r in rows), dict(failures))
