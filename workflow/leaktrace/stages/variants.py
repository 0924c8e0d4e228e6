"""variants: the identifier lexicon of the code corpus, then n
semantics-preserving variants of every sample that passed the function
filters, made as SrDetection composes them (Sec. 3.1.1), x_i = tau_t(tau_v(tau_f(x))):
names renamed (by the AST renamer, or with ``llm.variant_llm`` by the LLM,
Table 7's prompt, topped up by the AST renamer), then, with
``test_cases.compose``, the examples in the docstring replaced by new ones
wherever tau_t applies (a function's doctests and prose examples; a whole
program's input/output blocks). Kind "rename" (``variant_id`` 1..n) is
that headline set, for the detectors and for SrDetection's pre-exposure
filter under the base model (the paper's: the same variants); a sample may
get fewer. Other generators' sets
follow, n ids each, scored only by SrDetection's per-generator instances:
"ast" / "llm", the first ``test_cases.untransformed`` headline renamings
without tau_t (where tau_t changed one of them), and with ``llm.variant_llm``
the AST renamer's set made as the headline would be without the LLM
("ast+tt", or "ast" without tau_t). Column ``generator`` says what made each
variant ("ast", "llm", each with "+tt" where tau_t changed it). The original
is run against its tests in the sandbox and stored as ``variant_id`` 0; a
variant is valid iff it behaves exactly as the original under them: the
HumanEval-style test's calls, or, for an APPS-style whole program, its
output on each of the first ``io_cases`` standard inputs; a variant whose
code tokens are the original's (``variants.validate.is_unchanged``) is
status ``unchanged``, not valid, whatever the sandbox says. Every
row records the sandbox's isolation level (``full``, or ``weak`` where the
config allowed running without namespaces or cgroups). With
``variants.natural`` on, the set "rename" is drawn as a larger
pool and ``select_natural_variants`` keeps the n whose naturalness
under a selection model (never an audited one) is nearest the original's."""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.samples import UnittestTests, require_runnable, sample_tests
from leaktrace.errors import InputError
from leaktrace.models.backend import Capability, Sampling
from leaktrace.sandbox import SandboxLimits, SandboxUnavailable, isolation_level
from leaktrace.seeding import rng_for
from leaktrace.settings.llm import LlmRole
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.variants import LexiconSettings, NaturalSettings, VariantsSettings
from leaktrace.variants.kinds import VARIANT_SETS
from leaktrace.variants.lexicon import IdentifierLexicon, build_identifier_lexicon
from leaktrace.variants.llm_renaming import ask_for_renamings, renamings_from_answer
from leaktrace.variants.naming import NameProposer
from leaktrace.variants.natural import SELECTED_KINDS, choose_natural, first_variant_id, pool_size
from leaktrace.variants.renaming import Variant, make_variants
from leaktrace.variants.synonyms import WordAlternatives
from leaktrace.variants.testcases import Plan, apply_plan, plan_test_cases, run_plans
from leaktrace.variants.validate import is_unchanged, reserved_names, validate_variants, variant_status

log = logging.getLogger(__name__)

# Other generators' detector variants, one set (kind) each, scored by SrDetection's per-generator instances only:
# the headline's first renamings without tau_t ("ast" or, with an LLM renamer, "llm"), and with an LLM renamer
# the AST renamer's set made as the headline is ("ast+tt"; "ast" without tau_t).
COMPOSED_KINDS = ("rename", "ast+tt")  # the sets tau_t is composed into

LEXICON_SCHEMA = pa.schema([("kind", pa.string()), ("name", pa.string()), ("count", pa.int64())])

VARIANTS_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("variant_id", pa.int32()),  # 0 = the original
        ("kind", pa.string()),  # "original", "rename" (the detectors' and the pre-exposure filter's variants)
        # or one of VARIANT_SETS (another generator's set, for SrDetection's per-generator instances)
        ("text", pa.string()),
        ("entry_point", pa.string()),
        ("renames", pa.string()),  # JSON object: old name -> new name
        (
            "generator",
            pa.string(),
        ),  # what made it: "original", "ast" (AST renaming), "llm", "ast+tt", "llm+tt" (then tau_t)
        ("valid", pa.bool_()),
        ("invalid_reason", pa.string()),
        ("isolation", pa.string()),  # the sandbox's: "full" or "weak"
        ("status", pa.string()),  # valid, invalid, or unchanged (the original's code tokens: not valid, counted apart)
    ]
)


def build_lexicon(code: tuple[Path, ...], settings: LexiconSettings, output: Path) -> None:
    """The identifier lexicon of the code corpus (its shards ``code``): the
    user-chosen names, by kind, counted once per scope that chooses them and
    kept where counted at least ``variants.lexicon.min_count`` times; the
    renamer draws new names from it."""
    sources = (r["text"] for part in code for r in read_records(part, ["text"]))
    lexicon = build_identifier_lexicon(sources, min_count=settings.min_count)
    write_table(lexicon.to_records(), LEXICON_SCHEMA, output)


def make_variants_table(
    benchmark: Path,
    functions: Path,
    lexicon: Path,
    settings: VariantsSettings,
    seed: int,
    workers: int,
    output: Path,
    *,
    llm: LlmRole | None = None,
    cache_dir: Path | None = None,
) -> None:
    """The variants table: of every sample the function filter kept
    (``functions``), the original and n variants per set, renamed with the
    ``lexicon``'s words, tau_t composed in, each run against the sample's
    tests in the sandbox (``workers`` runs at a time).

    ``llm``: the ``llm.variant_llm`` role (None: no LLM-made set); its answers
    cached under ``cache_dir``. With ``variants.natural`` on, n is the pool
    size (``natural-variants`` then picks n)."""
    natural = settings.natural
    n = pool_size(settings.n, natural.pool if natural is not None and natural.enabled else None)
    words = IdentifierLexicon.from_records(read_records(lexicon)).word_counts
    names = NameProposer(WordAlternatives(words), words)
    kept = {r["sample_id"] for r in read_records(functions, ["sample_id", "kept"]) if r["kept"]}
    samples = [s for s in read_records(benchmark) if s["sample_id"] in kept]
    require_runnable(samples, str(benchmark), "variants")
    tests = [sample_tests(s, str(benchmark), settings.io_cases) for s in samples]  # (tests, entry point)
    limits = SandboxLimits(**asdict(settings.sandbox))
    try:
        isolation = isolation_level(limits)
    except SandboxUnavailable as error:
        raise InputError("config variants.sandbox", None, str(error)) from None
    log.info("sandbox isolation: %s", isolation)
    sets: list[dict[str, list[tuple[str, Variant]]]] = []  # per sample: kind -> (generator, variant)
    per_variant = settings.names_per_variant  # None: every name
    for s, (test, entry_point) in zip(samples, tests, strict=True):
        reserved = reserved_names(test)  # names the tests call must keep their names
        detector = make_variants(
            s["code"],
            entry_point,
            names,
            n=n,
            rng=rng_for(seed, "variants", s["sample_id"]),
            reserved=reserved,
            names_per_variant=per_variant,
        )
        sets.append({"rename": [("ast", v) for v in detector]})
    test_cases = settings.test_cases
    if llm is not None:  # the LLM's renamings are the headline set; the AST renamer's another generator's
        llm_sets = _llm_sets(samples, tests, names, llm, settings, n, seed, limits, workers, cache_dir)
        for own, llm_set in zip(sets, llm_sets, strict=True):
            own["ast+tt" if test_cases.compose else "ast"], own["rename"] = own["rename"], llm_set
    if test_cases.compose:
        _compose_test_cases(
            samples,
            tests,
            sets,
            test_cases.untransformed,
            "llm" if llm is not None else "ast",
            seed,
            limits,
            workers,
        )
    rows, programs = [], []
    for s, (test, entry_point), own in zip(samples, tests, sets, strict=True):
        rows.append(
            {
                "sample_id": s["sample_id"],
                "variant_id": 0,
                "kind": "original",
                "text": s["code"],
                "entry_point": entry_point,
                "renames": "{}",
                "generator": "original",
            }
        )
        programs.append((s["code"], test, entry_point))
        for kind, members in own.items():
            for k, (generator, v) in enumerate(members, start=first_variant_id(kind, n, VARIANT_SETS)):
                rows.append(
                    {
                        "sample_id": s["sample_id"],
                        "variant_id": k,
                        "kind": kind,
                        "text": v.text,
                        "entry_point": v.entry_point,
                        "renames": json.dumps(v.renames, sort_keys=True),
                        "generator": generator,
                    }
                )
                programs.append((v.text, test, v.entry_point))
    original_of = {row["sample_id"]: i for i, row in enumerate(rows) if row["variant_id"] == 0}
    originals = [original_of[row["sample_id"]] for row in rows]
    verdicts = validate_variants(programs, originals, limits, workers=workers)
    for row, (valid, reason), original in zip(rows, verdicts, originals, strict=True):
        unchanged = row["variant_id"] != 0 and is_unchanged(rows[original]["text"], row["text"], "python")
        row["valid"], row["invalid_reason"], row["isolation"] = valid and not unchanged, reason, isolation
        row["status"] = variant_status(valid, unchanged)
    write_table(rows, VARIANTS_SCHEMA, output)
    failures = Counter((r["invalid_reason"] or "").split(":")[0] for r in rows if r["status"] == "invalid")
    log.info(
        "%d samples, %d detector variants, %d invalid (%s), %d unchanged; other sets: %s",
        len(samples),
        sum(r["kind"] == "rename" for r in rows),
        sum(r["status"] == "invalid" for r in rows),
        dict(failures),
        sum(r["status"] == "unchanged" for r in rows),
        dict(Counter(r["kind"] for r in rows if r["kind"] in VARIANT_SETS)),
    )


def select_natural_variants(
    pool: Path, model: ModelSettings, settings: NaturalSettings, seed: int, output: Path
) -> None:
    """The naturalness-matched variants table (``variants.natural``): from the
    variants stage's pool (drawn with n raised to the pool size), per sample
    the n detector variants whose per-token loss under the selection
    ``model`` is nearest the original's (``variants/natural.py``)."""
    from leaktrace.models.configured import language_model  # imports torch: only where a model runs

    rows = read_records(pool)
    scored = [r for r in rows if r["kind"] == "original" or r["valid"] and r["kind"] in SELECTED_KINDS]
    lm = language_model(model, None, settings.tokens)
    stats = lm.score([r["text"] for r in scored], moments=[False] * len(scored))
    losses = {
        (r["sample_id"], r["variant_id"]): -float(np.mean(s.logprobs, dtype=np.float64))
        for r, s in zip(scored, stats, strict=True)
    }
    chosen = choose_natural(rows, losses, settings.n, settings.natural.rule, seed, VARIANT_SETS)
    write_table(chosen, VARIANTS_SCHEMA, output)
    loss_of = {(r["sample_id"], r["text"]): losses[(r["sample_id"], r["variant_id"])] for r in scored}
    original = {r["sample_id"]: r["text"] for r in rows if r["kind"] == "original"}

    def mean_gap(texts: list[tuple[str, str]]) -> float:
        return float(np.mean([abs(loss_of[t] - loss_of[(t[0], original[t[0]])]) for t in texts])) if texts else np.nan

    for kind in SELECTED_KINDS:
        kept = [(r["sample_id"], r["text"]) for r in chosen if r["kind"] == kind]
        pooled = [(r["sample_id"], r["text"]) for r in scored if r["kind"] == kind]
        log.info(
            "%s: kept %d of %d valid pool variants; mean |loss - original's| under %s: %.3f kept, %.3f pool",
            kind,
            len(kept),
            len(pooled),
            lm.name,
            mean_gap(kept),
            mean_gap(pooled),
        )


def _compose_test_cases(
    samples: list[dict],
    tests: list[tuple],
    sets: list[dict],
    untransformed: int,
    untransformed_kind: str,
    seed: int,
    limits: SandboxLimits,
    workers: int,
) -> None:
    """tau_t composed into every variant of the sets COMPOSED_KINDS where it applies, in place:
    x_i = tau_t(tau_v(tau_f(x))), generator "<renamer>+tt"; a variant whose examples tau_t could
    not replace stays the renaming alone. One sandbox run per sample (a whole program's may
    take a few, `testcases.run_plans`). The first `untransformed` headline variants are kept
    as they were before, as set `untransformed_kind`, where tau_t changed one of them."""
    members = [[(kind, member) for kind in COMPOSED_KINDS for member in own.get(kind, [])] for own in sets]
    # unittest classes (ClassEval) have no function whose examples tau_t could recompute: an empty plan
    plans = [
        Plan([], [], {}, None)
        if isinstance(test, UnittestTests)
        else plan_test_cases(s["code"], entry_point, test, len(found), rng_for(seed, "test-cases", s["sample_id"]))
        for s, (test, entry_point), found in zip(samples, tests, members, strict=True)
    ]
    outcomes, changed = Counter(), Counter()
    for own, plan, result, found, (test, _) in zip(
        sets, plans, run_plans(plans, limits, workers=workers), members, tests, strict=True
    ):
        transformed = apply_plan(plan, result, [(v.text, v.entry_point) for _, (_, v) in found])
        outcomes[
            "unittest classes: no function examples"
            if isinstance(test, UnittestTests)
            else transformed.outcome
            if found
            else "no variants"
        ] += 1
        before = list(own.get("rename", []))
        for kind in COMPOSED_KINDS:
            if kind in own:
                own[kind] = []
        for (kind, (generator, v)), text in zip(found, transformed.texts, strict=True):
            own[kind].append((f"{generator}+tt", replace(v, text=text)) if text else (generator, v))
            changed[kind] += text is not None
        first = before[:untransformed]
        if any(new.text != old.text for (_, new), (_, old) in zip(own["rename"], first, strict=False)):
            own[untransformed_kind] = first
    log.info(
        "test-case transformation (samples): %s; variants given new examples: %s",
        dict(sorted(outcomes.items())),
        dict(changed),
    )


def _llm_sets(
    samples: list[dict],
    tests: list[tuple],
    names: NameProposer,
    llm: LlmRole,
    settings: VariantsSettings,
    n: int,
    seed: int,
    limits: SandboxLimits,
    workers: int,
    cache_dir: Path | None,
) -> list[list[tuple[str, Variant]]]:
    """Per sample, up to n LLM renamings that pass the sample's test exactly as
    the original does (Table 7's prompt), topped up by the AST renamer."""
    from leaktrace.models.select import open_model  # a model stack only when an LLM makes variants

    model = open_model(llm.as_config(), {Capability.CHAT}, "SrDetection's LLM renaming (llm.variant_llm)", cache_dir)
    sampling = Sampling(max_new_tokens=settings.llm_max_new_tokens)
    answers = ask_for_renamings(model, [s["code"] for s in samples], sampling)
    outcomes: Counter = Counter()
    found = []
    for s, (test, entry_point), answer in zip(samples, tests, answers, strict=True):
        renamings = renamings_from_answer(answer, s["code"], entry_point, reserved=reserved_names(test))
        outcomes.update(renamings.outcomes)
        found.append(renamings.variants)
    programs, originals = [], []
    for s, (test, entry_point), variants in zip(samples, tests, found, strict=True):
        originals += [len(programs)] * (1 + len(variants))
        programs += [(s["code"], test, entry_point)] + [(v.text, test, v.entry_point) for v in variants]
    verdicts = iter(validate_variants(programs, originals, limits, workers=workers))
    llm_sets = []
    for s, (test, entry_point), variants in zip(samples, tests, found, strict=True):
        next(verdicts)  # the original's own
        passing = []
        for v in variants:
            valid, reason = next(verdicts)
            if not valid:
                outcomes[f"version {reason.split(':')[0]}"] += 1
            elif len(passing) == n:
                outcomes["version beyond n"] += 1
            else:
                outcomes["version passes"] += 1
                passing.append(v)
        top_up = (
            make_variants(
                s["code"],
                entry_point,
                names,
                n=n - len(passing),
                rng=rng_for(seed, "llm-top-up", s["sample_id"]),
                reserved=reserved_names(test),
                exclude=[v.text for v in passing],
                names_per_variant=settings.names_per_variant,
            )
            if len(passing) < n
            else []
        )
        outcomes["topped up"] += len(top_up)
        llm_sets.append([("llm", v) for v in passing] + [("ast", v) for v in top_up])
    log.info("LLM renaming under %s: %s", model.name, dict(sorted(outcomes.items())))
    return llm_sets
