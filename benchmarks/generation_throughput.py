"""Greedy generation throughput of the transformers backend: HumanEval
prompts continued through ``HFLanguageModel`` (left-padded batches, what the
black-box, counterfactual and LLM-variant stages run), for the cost model of
a study (docs/performance.md, "Corpus scale").

Prints new tokens per second (each row's tokens up to and including its
EOS; the padding after it not counted, though the batch paid for it), the
seconds per 1,000 prompts at this length, and the peak memory (GPU:
``torch.cuda.max_memory_allocated``; CPU: the process's peak resident set).
Model loading and one warm-up batch are not timed.

The model is a randomly initialised Llama of ``--size`` in bfloat16
(``scoring_throughput.random_llama``: ``1b`` TinyLlama-1.1B's shape, ``7b``
Llama-2-7B's; throughput needs no trained weights, and random weights
rarely emit EOS, so nearly every row runs to ``--new-tokens``). On a CPU it
defaults to the shipped tiny model in float32.

    .venv/bin/python benchmarks/generation_throughput.py                          # CPU: tiny model
    python benchmarks/generation_throughput.py --size 7b --batch-size 64          # GPU
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scoring_throughput import SIZES, TINY, random_llama  # noqa: E402

from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path  # noqa: E402
from leaktrace.models.backend import ModelSpec  # noqa: E402
from leaktrace.models.hf import HFLanguageModel  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    on_gpu = torch.cuda.is_available()
    parser.add_argument("--size", choices=["tiny", *SIZES], default="1b" if on_gpu else "tiny")
    parser.add_argument("--prompts", type=int, default=164, help="HumanEval prompts (repeated past 164)")
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=64, help="rows per batch (llm.batch_size)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(), help="torch CPU threads")
    parser.add_argument("--model", help="a model directory to generate with instead of --size's")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device, dtype = ("cuda", "bfloat16") if on_gpu else ("cpu", "float32")
    samples = load_humaneval(shipped_humaneval_path(), "humaneval")
    prompts = [samples[i % len(samples)].prompt for i in range(args.prompts)]
    tmp = Path(tempfile.mkdtemp(prefix="generation-throughput-"))
    try:
        model_dir = args.model or (TINY if args.size == "tiny" else random_llama(args.size, tmp / "model"))
        lm = HFLanguageModel(
            ModelSpec(str(model_dir), dtype=dtype, device=device), batch_size=args.batch_size, progress=False
        )
        ids = [[lm.bos_id, *lm.encode(p)] for p in prompts]
        lm._continuations(ids[: args.batch_size], max_new_tokens=8, stops=None)  # warm-up
        if on_gpu:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        rows = lm._continuations(ids, max_new_tokens=args.new_tokens, stops=None)
        if on_gpu:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    eos = lm.tokenizer.eos_token_id
    new = sum(row.index(eos) + 1 if eos in row else len(row) for row in rows)
    early = sum(eos in row for row in rows)
    peak = torch.cuda.max_memory_allocated() if on_gpu else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    where = torch.cuda.get_device_name() if on_gpu else f"the CPU ({args.threads} threads)"
    print(
        f"greedy generation on {where}: model {args.model or args.size} ({dtype}), {len(prompts)} HumanEval prompts "
        f"({sum(map(len, ids)) / len(ids):.0f} tokens on average), up to {args.new_tokens} new tokens, "
        f"batches of {args.batch_size}"
    )
    print(
        f"new tokens/s {new / seconds:,.0f} ({new:,} new tokens in {seconds:.1f} s; {early} rows ended at EOS); "
        f"{seconds / len(prompts) * 1000:,.0f} s per 1,000 prompts; peak memory {peak / 2**20:,.0f} MiB"
    )


if __name__ == "__main__":
    main()
