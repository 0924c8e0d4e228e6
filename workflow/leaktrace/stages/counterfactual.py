"""counterfactual: prompt target and reference with each function's signature
and up to P tokens of preceding context, decode greedily, parse the function
out of the output, and compare it with the ground-truth continuation
(functional-memorisation paper, Sec. 3). The functions come from a testbed
benchmark (its kept samples) or a corpus sample (stages/counterfactual_corpus_functions.py);
the two models are any two (a hub id or path, a revision, an adapter)."""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.models.configured import generation_model
from leaktrace.settings.counterfactual import CounterfactualSettings
from leaktrace.settings.llm import LlmRole
from leaktrace.settings.models import AdaptedModel
from leaktrace.settings.score import TokenBatch
from leaktrace.similarity.function_parse import function_end_reached, parse_generated_function
from leaktrace.similarity.generations import GENERATIONS_SCHEMA, prompt_ids
from leaktrace.similarity.text import TEXT_METRICS

log = logging.getLogger(__name__)

SIMILARITY_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("metric", pa.string()),
        ("target", pa.float64()),
        ("reference", pa.float64()),
        ("delta", pa.float64()),
    ]
)


def _after_signature(generated: str) -> str:
    """The generation from the line after the signature on (it starts with the
    newline the prompt left out)."""
    return generated.removeprefix("\n")


def _stop_at_function_end(signature: str, generated: str) -> bool:
    return function_end_reached(signature, _after_signature(generated))


def _generate(
    rows: list[dict],
    model: AdaptedModel,
    settings: CounterfactualSettings,
    role: str,
    generator: LlmRole | None,
    cache_dir: Path | None,
) -> list[dict]:
    lm = generation_model(
        model,
        model.adapter,
        TokenBatch(batch_size=settings.batch_size, token_budget=None),
        generator,
        cache_dir,
        f"counterfactual generation ({role})",
    )
    prompts = [prompt_ids(lm, r["context"], r["signature"], settings.context_tokens) for r in rows]
    stops = [partial(_stop_at_function_end, r["signature"]) for r in rows]
    # Prompt and generation stay within the positions the model was trained on
    # (BOS, the longest prompt, the new tokens).
    max_new_tokens = min(settings.max_new_tokens, lm.max_length - 1 - max(map(len, prompts), default=0))
    if max_new_tokens < settings.max_new_tokens:
        log.info(
            "%s: at most %d new tokens, so the longest prompt and its generation fit the %d-token context",
            role,
            max_new_tokens,
            lm.max_length,
        )
    if max_new_tokens < 1:
        raise ValueError(
            f"the longest counterfactual prompt fills the model's {lm.max_length}-token context; "
            "lower counterfactual.context_tokens"
        )
    texts = lm.generate(prompts, max_new_tokens=max_new_tokens, stops=stops)
    out = []
    for r, prompt, text in zip(rows, prompts, texts, strict=True):
        parsed = parse_generated_function(r["signature"], _after_signature(text))
        out.append(
            {
                "sample_id": r["sample_id"],
                "model": role,
                "prompt_tokens": len(prompt),
                "generated": text,
                "function": parsed.body,
                "parsed": parsed.parsed,
            }
        )
    return out


def counterfactual(
    functions: Path,
    target: AdaptedModel,
    reference: AdaptedModel,
    settings: CounterfactualSettings,
    generations: Path,
    similarity: Path,
    samples: Path | None = None,
    generator: LlmRole | None = None,
    cache_dir: Path | None = None,
) -> None:
    """Prompt target and reference with each function's signature and preceding context, parse the
    function each generates, and score it against the ground truth with the text metrics.

    ``target``, ``reference``: the two models (path, dtype, device,
    max_length, optional revision and adapter; the testbed's are the base
    model with and without the target adapter). ``samples``: the testbed's
    split, whose kept samples are generated for; without it (a corpus
    source) every kept row of ``functions``. ``generator``: the
    ``llm.generator`` role (None: each model in process through
    transformers); ``cache_dir``: its response cache."""
    if samples is not None:
        kept = {r["sample_id"] for r in read_records(samples, ["sample_id", "kept"]) if r["kept"]}
    else:
        kept = {r["sample_id"] for r in read_records(functions, ["sample_id", "kept"]) if r["kept"]}
    rows = [
        r
        for r in read_records(functions, ["sample_id", "context", "signature", "continuation"])
        if r["sample_id"] in kept
    ]
    whole = [r["sample_id"] for r in rows if not r["signature"]]
    if whole:
        log.info(
            "counterfactual: %d samples skipped: whole programs (APPS's stdin/stdout problems) have no "
            "signature to prompt with (first: %s)",
            len(whole),
            whole[0],
        )
        rows = [r for r in rows if r["signature"]]
    generated = _generate(rows, target, settings, "target", generator, cache_dir) + _generate(
        rows, reference, settings, "reference", generator, cache_dir
    )
    write_table(generated, GENERATIONS_SCHEMA, generations)

    produced = {(g["sample_id"], g["model"]): g["function"] for g in generated}
    scores = []
    for r in rows:
        truth = r["continuation"]
        for metric, fn in TEXT_METRICS.items():
            t = fn(truth, produced[(r["sample_id"], "target")])
            ref = fn(truth, produced[(r["sample_id"], "reference")])
            scores.append(
                {"sample_id": r["sample_id"], "metric": metric, "target": t, "reference": ref, "delta": t - ref}
            )
    write_table(scores, SIMILARITY_SCHEMA, similarity)
    log.info(
        "counterfactual: %d samples, %d of %d generations parsed",
        len(rows),
        sum(g["parsed"] for g in generated),
        len(generated),
    )
