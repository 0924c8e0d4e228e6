"""score: one batched forward pass per text gives the token statistics
(cached as ``tokens.parquet``); every detector is then computed from that
cache (``scores.parquet``), so changing a detector's settings re-runs only
the cheap second step."""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.detect.evidence import SampleEvidence
from leaktrace.detect.registry import configured_methods
from leaktrace.models.backend import ModelSpec, TokenStats
from leaktrace.models.token_table import read_token_stats, write_token_stats

log = logging.getLogger(__name__)

SCORES_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("method", pa.string()),
        ("family", pa.string()),
        ("score", pa.float64()),
        ("decision", pa.bool_()),  # only for threshold-free methods
    ]
)


def model_spec(model: dict, adapter: str | None) -> ModelSpec:
    return ModelSpec(name_or_path=model["path"], adapter=adapter, dtype=model["dtype"], device=model["device"])


def score_tokens(variants: Path, model: dict, adapter: str | None, settings: dict, output: Path) -> None:
    texts = [v for v in read_records(variants, ["sample_id", "variant_id", "text", "valid"]) if v["valid"]]
    jobs = [(v["sample_id"], v["variant_id"], "text", v["text"]) for v in texts]
    jobs += [(v["sample_id"], 0, "lowercase", v["text"].lower()) for v in texts if v["variant_id"] == 0]
    from leaktrace.models.hf import HFLanguageModel  # imports torch: only where a model runs

    lm = HFLanguageModel(model_spec(model, adapter), batch_size=settings["batch_size"], max_length=settings["max_length"])
    stats = lm.score([text for *_, text in jobs])
    write_token_stats([(sid, vid, view) for sid, vid, view, _ in jobs], stats, output)
    log.info("scored %d texts (%d truncated) under %s", len(jobs), sum(s.truncated for s in stats), lm.name)


def score_methods(tokens: Path, variants: Path, settings: dict, output: Path) -> None:
    methods = configured_methods(settings)
    stats = read_token_stats(tokens)
    originals = {v["sample_id"]: v["text"] for v in read_records(variants, ["sample_id", "variant_id", "text"]) if v["variant_id"] == 0}
    variant_stats: dict[str, list[tuple[int, TokenStats]]] = defaultdict(list)
    for (sid, vid, view), s in stats.items():
        if view == "text" and vid > 0:
            variant_stats[sid].append((vid, s))
    rows = []
    for sid in sorted(originals):
        if (sid, 0, "text") not in stats:
            continue  # the original failed validation: nothing to score
        evidence = SampleEvidence(
            sample_id=sid,
            text=originals[sid],
            original=stats[(sid, 0, "text")],
            lowercase=stats.get((sid, 0, "lowercase")),
            variants=tuple(s for _, s in sorted(variant_stats[sid], key=lambda x: x[0])),
        )
        for m in methods:
            if m.needs_variants and not evidence.variants:
                continue
            rows.append({"sample_id": sid, "method": m.name, "family": m.family, "score": m.score(evidence),
                         "decision": m.decide(evidence) if m.decide else None})
    write_table(rows, SCORES_SCHEMA, output)
    log.info("%d scores for %d samples and %d methods", len(rows), len(originals), len(methods))
