"""Scoring throughput at scale: today's pass (float32, fixed batches of
``--batch-size`` texts) against the new one (bfloat16 on a GPU, batches
built by a token budget over length-sorted texts), side by side in one run,
both through ``HFLanguageModel.score`` (the token pass every detector reads).

Prints, per pass, scored tokens per second (the text tokens, BOS and padding
not counted; tokenisation included, model loading not), the peak memory
(GPU: ``torch.cuda.max_memory_allocated``; CPU: the pass's process's peak
resident set, interpreter and weights included: each pass runs in a fresh
process), the batches it ran, and how far its log-probabilities are from
today's.

The model is a randomly initialised Llama of ``--size`` (throughput needs no
trained weights, and no hub is reachable from a GPU node): ``1b`` is
TinyLlama-1.1B's shape (22 layers, hidden 2048, 32k vocabulary), ``7b``
Llama-2-7B's. On a CPU it
defaults to the shipped tiny model, and the new pass stays float32 there
(bfloat16 matrix products are slower than float32 on most CPUs): only the
budget differs. The texts are the shipped HumanEval's code and its
lowercased copy (what the token pass scores beside the variants), repeated
``--repeat`` times, tokenised by the shipped tiny model's tokenizer.

    .venv/bin/python benchmarks/scoring_throughput.py                  # CPU: tiny model
    .venv/bin/python benchmarks/scoring_throughput.py --size 1b        # GPU: ~1B Llama
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workflow"))

from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path  # noqa: E402
from leaktrace.models.backend import ModelSpec  # noqa: E402
from leaktrace.models.batching import token_batches  # noqa: E402
from leaktrace.models.hf import HFLanguageModel  # noqa: E402

TINY = ROOT / "resources/models/leaktrace-tiny"
SIZES = {  # LlamaConfig keyword arguments of the random models
    "1b": dict(
        hidden_size=2048,
        intermediate_size=5632,
        num_hidden_layers=22,
        num_attention_heads=32,
        num_key_value_heads=4,
        vocab_size=32000,
        max_position_embeddings=2048,
    ),
    "7b": dict(
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,  # Llama-2-7B
        num_key_value_heads=32,
        vocab_size=32000,
        max_position_embeddings=4096,
    ),
    "350m": dict(
        hidden_size=1024,
        intermediate_size=2816,
        num_hidden_layers=24,
        num_attention_heads=16,
        num_key_value_heads=4,
        vocab_size=32000,
        max_position_embeddings=2048,
    ),
}


def random_llama(size: str, out: Path) -> Path:
    """A randomly initialised Llama of ``size`` saved (bfloat16) with the tiny model's tokenizer."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(TINY, local_files_only=True)
    config = LlamaConfig(
        **SIZES[size],
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def texts(repeat: int, limit: int | None = None) -> list[str]:
    codes = [s.code for s in load_humaneval(shipped_humaneval_path(), "humaneval")][:limit]
    return (codes + [c.lower() for c in codes]) * repeat


def one_pass(
    model_dir: str,
    dtype: str,
    device: str,
    batch_size: int,
    token_budget: int | None,
    max_length: int,
    repeat: int,
    threads: int,
    limit: int | None,
) -> dict:
    """One pass in this (fresh) process: its tokens/s, peak memory, batches, log-probabilities."""
    torch.set_num_threads(threads)
    corpus = texts(repeat, limit)
    lm = HFLanguageModel(
        ModelSpec(model_dir, dtype=dtype, device=device),
        batch_size=batch_size,
        token_budget=token_budget,
        max_length=max_length,
        progress=False,
    )
    lm.score(corpus[:8])  # warm-up: kernels, the split-head probe
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    stats = lm.score(corpus, moments=[i % 2 == 0 for i in range(len(corpus))])  # originals want mu and sigma
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    lengths = [s.n_tokens + 1 for s in stats]
    batches = token_batches(lengths, max_rows=batch_size, token_budget=token_budget)
    return {
        "seconds": seconds,
        "tokens": sum(s.n_tokens for s in stats),
        "padded": sum(len(b) * max(lengths[i] for i in b) for b in batches),
        "batches": len(batches),
        "peak_mb": (
            torch.cuda.max_memory_allocated()
            if device.startswith("cuda")
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        )
        / 2**20,
        "logprobs": np.concatenate([s.logprobs for s in stats]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    on_gpu = torch.cuda.is_available()
    parser.add_argument(
        "--size",
        choices=["tiny", *SIZES],
        default="1b" if on_gpu else "tiny",
        help="tiny: the shipped model; else a random Llama of that size",
    )
    parser.add_argument("--batch-size", type=int, default=32, help="today's fixed batch (score.tokens.batch_size)")
    parser.add_argument(
        "--token-budget",
        type=int,
        default=None,
        help="the new pass's padded tokens per batch (default: 65536 on a GPU, 8192 on a CPU)",
    )
    parser.add_argument("--max-rows", type=int, default=1024, help="the new pass's cap on texts per batch")
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=2 if on_gpu else 1, help="copies of the 328 texts")
    parser.add_argument(
        "--limit", type=int, default=None, help="only the first LIMIT HumanEval problems (default: all 164)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--model", help="a model directory to score with instead of --size's")
    parser.add_argument(
        "--new-only",
        action="store_true",
        help="only the new pass (a large model's float32 pass "
        "is slow to load; no speed-up or log-probability difference is printed then)",
    )
    args = parser.parse_args()
    device = "cuda" if on_gpu else "cpu"
    budget = args.token_budget or (65536 if on_gpu else 8192)
    tmp = Path(tempfile.mkdtemp(prefix="scoring-throughput-"))
    try:
        model_dir = args.model or str(TINY if args.size == "tiny" else random_llama(args.size, tmp / "model"))
        passes = {
            f"today: float32, fixed batches of {args.batch_size}": ("float32", args.batch_size, None),
            f"new: {'bfloat16' if on_gpu else 'float32'}, token budget {budget}": (
                "bfloat16" if on_gpu else "float32",
                args.max_rows,
                budget,
            ),
        }
        if args.new_only:
            passes = dict(list(passes.items())[1:])
        results = {}
        for name, (dtype, rows, token_budget) in passes.items():
            # a fresh process per pass: its own peak memory, nothing cached from the other
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
                results[name] = pool.submit(
                    one_pass,
                    model_dir,
                    dtype,
                    device,
                    rows,
                    token_budget,
                    args.max_length,
                    args.repeat,
                    args.threads,
                    args.limit,
                ).result()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    where = torch.cuda.get_device_name() if on_gpu else "CPU (no GPU here: the tiny model, the new pass in float32)"
    print(
        f"scoring throughput on {where}, model {args.model or args.size}, {args.threads} torch thread(s), max_length "
        f"{args.max_length}, {len(texts(args.repeat, args.limit))} texts"
    )
    reference = next(iter(results.values()))
    print(f"{'pass':<44} {'tokens/s':>10} {'peak MB':>9} {'batches':>8} {'padding':>8} {'max |dlogp|':>12}")
    for name, r in results.items():
        diff = float(np.abs(r["logprobs"] - reference["logprobs"]).max())
        print(
            f"{name:<44} {r['tokens'] / r['seconds']:>10.0f} {r['peak_mb']:>9.0f} {r['batches']:>8d} "
            f"{1 - r['tokens'] / r['padded']:>8.1%} {diff:>12.2e}"
        )
    if len(results) == 2:
        new, old = list(results.values())[1], reference
        print(f"speed-up {old['seconds'] / new['seconds']:.2f}x ({new['tokens']} scored tokens each)")


if __name__ == "__main__":
    main()
