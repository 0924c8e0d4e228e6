"""leakage-rq4-perplexity: the model pass behind LessLeak-Bench's RQ4 as the
paper runs it (Sec. 5.4): the perplexity of every sample a scan labelled,
pooled over the scan's benchmarks, under one model (the paper: StarCoder 1B,
3B and 7B, whose training data the scan read). The text scored is the one
the scan indexed and verified (``data.samples.document``), cut to the
model's context; its digest lets the ranking stage deduplicate as the paper
does before balancing."""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.samples import document
from leaktrace.evaluate.leak_detection import PERPLEXITY_SCHEMA
from leaktrace.models.configured import language_model
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.score import TokenBatch

log = logging.getLogger(__name__)


def perplexities(
    benchmarks: Mapping[str, Path],
    model: ModelSettings,
    name: str,
    batch: TokenBatch,
    output: Path,
    adapter: Path | None = None,
) -> None:
    """The perplexity of every sample a scan labelled under one model (LessLeak-Bench's RQ4).

    One row per sample with a non-empty document, sorted by sample id; ``name`` is the model's
    name in the tables, ``benchmarks`` every benchmark the scan read."""
    samples = sorted(
        ((b, r) for b, path in benchmarks.items() for r in read_records(path)), key=lambda br: br[1]["sample_id"]
    )
    texts = [(b, r["sample_id"], document(r)) for b, r in samples]
    empty = [sid for _, sid, text in texts if not text.strip()]
    if empty:
        log.warning(
            "rq4 perplexity: %d samples have no text to score (%s...), left out", len(empty), ", ".join(empty[:3])
        )
    texts = [t for t in texts if t[2].strip()]
    if len({sid for _, sid, _ in texts}) != len(texts):
        raise ValueError("rq4 perplexity: a sample id appears in more than one benchmark table")
    lm = language_model(model, adapter, batch)
    stats = lm.score([text for _, _, text in texts], moments=[False] * len(texts))
    rows = []
    for (benchmark, sid, text), st in zip(texts, stats, strict=True):
        loss = -float(np.mean(st.logprobs))
        rows.append(
            {
                "sample_id": sid,
                "benchmark": benchmark,
                "model": name,
                "digest": hashlib.sha1(text.encode("utf-8")).hexdigest(),
                "n_tokens": st.n_tokens,
                "truncated": bool(st.truncated),
                "loss": loss,
                "perplexity": math.exp(loss),
            }
        )
    write_table(rows, PERPLEXITY_SCHEMA, output)
    log.info(
        "rq4 perplexity under %s: %d samples of %d benchmarks, %d cut to the context",
        name,
        len(rows),
        len(benchmarks),
        sum(r["truncated"] for r in rows),
    )
