"""score: one batched forward pass per text gives the token statistics
(cached as ``tokens.parquet``); every detector is then computed from that
cache (``scores.parquet``), so changing a detector's settings re-runs only
the cheap second step. The detectors that need more than that pass get
exactly the passes they need: Ref the reference model's token statistics,
ReCaLL a prefix-conditioned pass, DC-PDD token counts of a corpus,
SrDetection black-box greedy continuations."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.split import RECALL_PREFIX
from leaktrace.detect.evidence import SampleEvidence
from leaktrace.detect.recall_relative_ll import prefix_shots, select_prefix_samples
from leaktrace.detect.registry import Method, configured_methods
from leaktrace.detect.scores import SCORES_SCHEMA
from leaktrace.detect.srdetection_blackbox import continuation_overlaps, generation_evidence
from leaktrace.models.backend import TokenStats
from leaktrace.models.configured import generation_model, language_model, model_spec
from leaktrace.models.token_counts import count_tokens, read_token_counts, write_token_counts
from leaktrace.models.token_table import read_token_stats, write_token_stats
from leaktrace.settings.llm import LlmRole
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.score import BlackboxParams, RecallSettings, ScoreMethods, TokenBatch
from leaktrace.variants.kinds import DETECTOR_KINDS, VARIANT_SETS, valid_texts

log = logging.getLogger(__name__)

BLACKBOX_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("variant_id", pa.int32()),
        ("prefix_tokens", pa.int32()),
        ("suffix_tokens", pa.int32()),
        ("generated", pa.string()),
        ("generated_ids", pa.list_(pa.int32())),
        ("suffix_ids", pa.list_(pa.int32())),
        ("ngo", pa.float64()),
    ]
)


def score_tokens(
    variants: Path,
    model: ModelSettings,
    settings: TokenBatch,
    output: Path,
    adapter: Path | None = None,
    originals_only: bool = False,
) -> None:
    """Token statistics of every valid original and detector variant (other
    generators' too), and each original lowercased, under ``model`` (and its
    ``adapter``); with ``originals_only`` just the originals (a reference model
    for Ref).

    The base model's pass is also what SrDetection's pre-exposure filter reads
    (the split stage)."""
    texts = valid_texts(variants, DETECTOR_KINDS + VARIANT_SETS)
    if originals_only:
        texts = [v for v in texts if v["variant_id"] == 0]
    jobs = [(v["sample_id"], v["variant_id"], "text", v["text"]) for v in texts]
    if not originals_only:
        jobs += [(v["sample_id"], 0, "lowercase", v["text"].lower()) for v in texts if v["variant_id"] == 0]
    lm = language_model(model, adapter, settings)
    # Min-K%++ reads mu and sigma of the originals only: the variants and
    # lowercased texts need their log-probabilities alone.
    stats = lm.score([text for *_, text in jobs], moments=[vid == 0 and view == "text" for _, vid, view, _ in jobs])
    write_token_stats([(sid, vid, view) for sid, vid, view, _ in jobs], stats, output)
    log.info("scored %d texts (%d truncated) under %s", len(jobs), sum(s.truncated for s in stats), lm.name)


def score_prefixed(
    variants: Path,
    samples: Path,
    model: ModelSettings,
    settings: RecallSettings,
    batch: TokenBatch,
    seed: int,
    output: Path,
    adapter: Path | None = None,
) -> None:
    """ReCaLL's pass: every valid original scored after a prefix of up to
    ``n_shots`` non-members of the split's ``recall-prefix`` fold.

    Those non-members are never trained on and never evaluated. Each text
    keeps the shots that fit the model's context beside it (``prefix_shots``,
    ``prefix_tokens``)."""
    held_out = [r["sample_id"] for r in read_records(samples, ["sample_id", "fold"]) if r["fold"] == RECALL_PREFIX]
    originals = {v["sample_id"]: v["text"] for v in valid_texts(variants) if v["variant_id"] == 0}
    chosen = select_prefix_samples(held_out, settings.n_shots, seed)
    lm = language_model(model, adapter, batch)
    targets = sorted(originals)
    stats = lm.score_conditioned(
        prefix_shots([originals[sid] for sid in chosen]),
        [originals[sid] for sid in targets],
        max_prefix_tokens=settings.max_prefix_tokens,
    )
    write_token_stats([(sid, 0, "prefixed") for sid in targets], stats, output)
    shots = Counter(s.prefix_shots for s in stats)
    log.info(
        "scored %d originals after up to %d non-member shots under %s (context %d): texts by shots kept %s, "
        "mean prefix %.0f tokens",
        len(targets),
        len(chosen),
        lm.name,
        lm.max_length,
        dict(sorted(shots.items())),
        sum(s.prefix_tokens for s in stats) / max(1, len(stats)),
    )


def count_corpus_tokens(corpus: tuple[Path, ...], model: ModelSettings, output: Path) -> None:
    """DC-PDD's reference frequencies: token counts of a corpus (its parts)
    under the model's tokenizer, with its fingerprint, checked when read."""
    from leaktrace.models.loading import load_tokenizer

    tokenizer = load_tokenizer(model_spec(model, None))
    counts = count_tokens(tokenizer, (r["text"] for part in corpus for r in read_records(part, ["text"])))
    write_token_counts(counts, output)
    log.info(
        "counted %d tokens over a vocabulary of %d (tokenizer %s)",
        int(counts.counts.sum()),
        counts.vocab_size,
        counts.tokenizer,
    )


def blackbox_generations(
    variants: Path,
    model: ModelSettings,
    settings: BlackboxParams,
    batch: TokenBatch,
    output: Path,
    adapter: Path | None = None,
    generator: LlmRole | None = None,
    cache_dir: Path | None = None,
) -> None:
    """SrDetection black-box's generations: the original and up to the
    largest configured variant count of valid variants per sample, each
    prefix continued greedily, with its n-gram overlap with the true suffix;
    through the ``llm.generator`` role's backend when there is one (its
    answers cached under ``cache_dir``)."""
    n_max = max([settings.n_variants, *settings.sensitivity])
    texts = [(v["sample_id"], v["variant_id"], v["text"]) for v in valid_texts(variants) if v["variant_id"] <= n_max]
    lm = generation_model(
        model,
        adapter,
        batch,
        generator,
        cache_dir,
        "SrDetection black-box generation",
    )
    rows = continuation_overlaps(
        lm,
        texts,
        prefix_fraction=settings.prefix_fraction,
        ngram=settings.ngram,
        max_new_tokens=settings.max_new_tokens,
    )
    write_table(rows, BLACKBOX_SCHEMA, output)
    log.info("black-box: %d continuations under %s", len(rows), lm.name)


def _available(methods: list[Method], **evidence: bool) -> list[Method]:
    """The methods whose evidence this model has; the others are logged and skipped
    (e.g. Ref for the reference model itself, ReCaLL for an audit-only model)."""
    kept = []
    for m in methods:
        missing = [name for name, present in evidence.items() if getattr(m, f"needs_{name}") and not present]
        if missing:
            log.info("%s skipped for this model: no %s evidence", m.name, ", ".join(missing))
        else:
            kept.append(m)
    return kept


def score_methods(
    tokens: Path,
    variants: Path,
    settings: ScoreMethods,
    output: Path,
    reference: Path | None = None,
    oracle_reference: Path | None = None,
    prefixed: Path | None = None,
    token_counts: Path | None = None,
    blackbox: Path | None = None,
    model: ModelSettings | None = None,
    learned: tuple[Path, ...] = (),
) -> None:
    """Every configured detector's score of every sample whose original is
    valid, from the token pass (``tokens``) and the evidence files given.

    A method whose evidence is not given is skipped for this model, and
    DC-PDD without token counts likewise. With ``model``, DC-PDD's counts must
    come from its tokenizer."""
    if token_counts is None and settings.dc_pdd is not None:
        log.info("dc_pdd skipped for this model: no token counts of its reference corpus")
        settings = replace(settings, dc_pdd=None)
    counts = read_token_counts(token_counts) if token_counts else None
    if counts is not None and model is not None:
        from leaktrace.models.loading import load_tokenizer
        from leaktrace.models.token_counts import tokenizer_fingerprint

        counts.check_tokenizer(tokenizer_fingerprint(load_tokenizer(model_spec(model, None))))
    methods = _available(
        configured_methods(settings.families(), token_counts=counts),
        reference=reference is not None,
        oracle_reference=oracle_reference is not None,
        prefixed=prefixed is not None,
        generations=blackbox is not None,
        learned=bool(learned),
    )
    stats = read_token_stats(tokens)
    reference_stats = read_token_stats(reference) if reference else {}
    oracle_stats = read_token_stats(oracle_reference) if oracle_reference else {}
    # ReCaLL is undefined for a text that left no room for any prefix token
    prefixed_stats = read_token_stats(prefixed) if prefixed else {}
    unconditioned = sorted(sid for (sid, _, _), s in prefixed_stats.items() if not s.prefix_tokens)
    if unconditioned:
        log.info(
            "recall skipped for %d texts that fill the context alone: %s", len(unconditioned), ", ".join(unconditioned)
        )
    conditioned = {key: s for key, s in prefixed_stats.items() if s.prefix_tokens}
    texts = valid_texts(variants, DETECTOR_KINDS + VARIANT_SETS)
    originals = {v["sample_id"]: v["text"] for v in texts if v["variant_id"] == 0}
    detector_variants = {(v["sample_id"], v["variant_id"]) for v in texts if v["kind"] == "rename"}
    set_of = {(v["sample_id"], v["variant_id"]): v["kind"] for v in texts if v["kind"] in VARIANT_SETS}
    variant_stats: dict[str, list[tuple[int, TokenStats]]] = defaultdict(list)
    alternative_stats: dict[str, dict[str, list[tuple[int, TokenStats]]]] = defaultdict(lambda: defaultdict(list))
    for (sid, vid, view), s in stats.items():
        if view == "text" and (sid, vid) in detector_variants:
            variant_stats[sid].append((vid, s))
        elif view == "text" and (sid, vid) in set_of:
            alternative_stats[sid][set_of[(sid, vid)]].append((vid, s))
    rows = []
    gray_box = [m for m in methods if not m.needs_generations and not m.needs_learned]
    for sid in sorted(originals):
        if (sid, 0, "text") not in stats:
            continue  # the original failed validation: nothing to score
        evidence = SampleEvidence(
            sample_id=sid,
            text=originals[sid],
            original=stats[(sid, 0, "text")],
            lowercase=stats.get((sid, 0, "lowercase")),
            variants=tuple(s for _, s in sorted(variant_stats[sid], key=lambda x: x[0])),
            alternatives={
                g: tuple(s for _, s in sorted(found, key=lambda x: x[0])) for g, found in alternative_stats[sid].items()
            },
            reference=reference_stats.get((sid, 0, "text")),
            oracle_reference=oracle_stats.get((sid, 0, "text")),
            prefixed=conditioned.get((sid, 0, "prefixed")),
        )
        for m in gray_box:
            variants = (
                evidence.variants if m.variant_generator is None else evidence.alternatives.get(m.variant_generator)
            )
            if (
                (m.needs_variants and not variants)
                or (m.needs_reference and evidence.reference is None)
                or (m.needs_oracle_reference and evidence.oracle_reference is None)
                or (m.needs_prefixed and evidence.prefixed is None)
            ):
                continue
            rows.append(
                {
                    "sample_id": sid,
                    "method": m.name,
                    "family": m.family,
                    "score": m.score(evidence),
                    "decision": m.decide(evidence) if m.decide else None,
                }
            )
    black_box = [m for m in methods if m.needs_generations]
    if black_box:
        generations = read_records(blackbox)
        by_ngram = {n: generation_evidence(generations, n)[0] for n in {m.params["ngram"] for m in black_box}}
        for m in black_box:
            evidence = by_ngram[m.params["ngram"]]
            rows += [
                {
                    "sample_id": e.sample_id,
                    "method": m.name,
                    "family": m.family,
                    "score": m.score(e),
                    "decision": m.decide(e),
                }
                for e in evidence
                if e.variants
            ]
    learned_rows = {(r["method"], r["sample_id"]): r for path in learned for r in read_records(path)}
    for m in (m for m in methods if m.needs_learned):
        rows += [
            {
                "sample_id": sid,
                "method": m.name,
                "family": m.family,
                "score": m.score(row),
                "decision": m.decide(row),
                "fold": row["fold"],
                "fold_scores": row["fold_scores"],
            }
            for sid in sorted(originals)
            if (row := learned_rows.get((m.name, sid))) is not None
        ]
    write_table(sorted(rows, key=lambda r: (r["sample_id"], r["method"])), SCORES_SCHEMA, output)
    log.info("%d scores for %d samples and %d methods", len(rows), len(originals), len(methods))
