"""LoRA training throughput: the hand-written fp32 loop the testbed used
before (kept below, on the testbed's own LoRA set-up) vs the accelerate loop of
``leaktrace.train.lora``, side by side in one run, on a randomly initialised
Llama-architecture model of the size asked for.

For each loop: training tokens per second, model FLOPs utilisation
(6 x parameters x tokens / seconds / ``--peak-tflops``: the usual model-FLOPs
convention; LoRA does about 4N of that 6N, since the frozen weights get no
gradient) and peak memory (GPU: the largest allocation; CPU: the process's
peak resident set). Each loop runs in its own process, so their peaks and
accelerate's one-per-process state do not mix. Timed is the second epoch
(the first warms up), between the loops' per-epoch log calls.

    .venv/bin/python benchmarks/train_throughput.py                       # CPU: the tiny model
    python benchmarks/train_throughput.py --size 1b --device cuda --peak-tflops 989   # H100 SXM bf16 dense

On a CPU the peak is not meaningful (no bf16 tensor-core peak to compare
with) and MFU is printed only when ``--peak-tflops`` is given; the script
says it ran on the CPU."""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.models.backend import ModelSpec
from leaktrace.models.context import context_limit
from leaktrace.models.loading import load_model, load_tokenizer
from leaktrace.seeding import seed_everything
from leaktrace.train.lora import (
    LoraSettings,
    lora_model,
    optimizer_and_schedule,
    padded_batch,
    train_lora,
    training_sequences,
)

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = ROOT / "resources/models/leaktrace-tiny"  # 4096 tokens; its vocabulary sizes both models
SIZES = {  # hidden, intermediate, layers, heads, kv heads
    "tiny": (128, 352, 4, 4, 4),  # the shipped model's shape
    "1b": (2048, 8192, 16, 32, 8),  # Llama-3.2-1B's shape: ~1.0B parameters with this vocabulary
}


def handwritten_train_lora(base, texts, settings, adapter_dir, on_log=lambda row: None):
    """The testbed's LoRA loop before accelerate: fp32 AdamW on one device.
    Its set-up (sequences, adapter, optimizer and schedule) is train/lora.py's
    own; the loop below is the one accelerate replaced."""
    seed_everything(settings.seed)
    tokenizer = load_tokenizer(base)
    model = load_model(base)
    ids = training_sequences(tokenizer, texts, context_limit(model.config, settings.max_length))
    model = lora_model(model, settings)  # the testbed's own LoRA setup (train/lora.py), as train_lora runs it
    params, optimizer, scheduler = optimizer_and_schedule(model, settings)
    rng = np.random.default_rng(settings.seed)
    step, tokens = 0, 0
    for epoch in range(1, settings.epochs[-1] + 1):
        order = rng.permutation(len(ids))
        losses = []
        batches = (
            padded_batch([ids[i] for i in order[s : s + settings.batch_size]], tokenizer.pad_token_id)
            for s in range(0, len(order), settings.batch_size)
        )
        for micro, (input_ids, mask, labels) in enumerate(batches):
            loss = model(
                input_ids=input_ids.to(model.device),
                attention_mask=mask.to(model.device),
                labels=labels.to(model.device),
            ).loss
            (loss / settings.gradient_accumulation).backward()
            losses.append(loss.item())
            tokens += int(mask.sum())
            if (micro + 1) % settings.gradient_accumulation == 0:
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                step += 1
        on_log(
            {
                "epoch": epoch,
                "step": step,
                "loss": float(np.mean(losses)),
                "lr": scheduler.get_last_lr()[0],
                "tokens": tokens,
            }
        )
        if epoch in settings.epochs:
            model.save_pretrained(adapter_dir(epoch))


def random_model(size: str, seq_len: int, out: Path) -> int:
    """A randomly initialised Llama of ``size`` with the shipped tokenizer, saved to ``out``; its parameter count."""
    hidden, intermediate, layers, heads, kv_heads = SIZES[size]
    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER, local_files_only=True)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=seq_len,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return sum(p.numel() for p in model.parameters())


def training_texts(count: int) -> list[str]:
    """HumanEval solutions, each repeated to more than any sequence length asked for (cut to it in training)."""
    codes = [s.code for s in load_humaneval(shipped_humaneval_path(), "h")]
    return [codes[i % len(codes)] * 40 for i in range(count)]


def run_loop(name: str, args: argparse.Namespace, model_dir: str, results) -> None:
    """One loop in this (child) process: seconds and tokens of epoch 2, peak memory."""
    torch.set_num_threads(args.threads)
    new = name == "accelerate"
    spec = ModelSpec(model_dir, dtype=args.dtype if new else "float32", device=args.device)
    settings = LoraSettings(
        epochs=(2,),
        batch_size=args.batch_size,
        max_length=args.seq_len,
        learning_rate=1e-4,
        warmup_steps=1,
        mixed_precision=args.mixed_precision if new else "no",
        gradient_checkpointing=new and args.gradient_checkpointing,
    )
    marks: list[tuple[float, int]] = []
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()

    def on_log(row):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        marks.append((time.perf_counter(), row["tokens"]))

    loop = train_lora if new else handwritten_train_lora
    with tempfile.TemporaryDirectory() as tmp:
        loop(spec, training_texts(args.batch_size * args.steps), settings, lambda e: Path(tmp) / f"epoch-{e}", on_log)
    (t1, n1), (t2, n2) = marks
    peak = (
        torch.cuda.max_memory_allocated()
        if args.device.startswith("cuda")
        else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    )
    results.put((name, t2 - t1, n2 - n1, peak))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), help="model shape (default: 1b on a GPU, tiny on the CPU)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seq-len", type=int, help="tokens per sequence (default: 2048 on a GPU, 512 on the CPU)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--steps", type=int, default=8, help="optimizer steps per epoch (epoch 2 is timed)")
    parser.add_argument(
        "--dtype", help="base weights of the accelerate loop (default: bfloat16 on a GPU, float32 on the CPU)"
    )
    parser.add_argument("--mixed-precision", help="of the accelerate loop (default: bf16 on a GPU, no on the CPU)")
    parser.add_argument("--gradient-checkpointing", action="store_true", help="in the accelerate loop")
    parser.add_argument("--peak-tflops", type=float, help="the device's dense bf16 peak, for MFU (H100 SXM: 989)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(), help="CPU threads of each loop")
    args = parser.parse_args()
    gpu = args.device.startswith("cuda")
    args.size = args.size or ("1b" if gpu else "tiny")
    args.seq_len = args.seq_len or (2048 if gpu else 512)
    args.dtype = args.dtype or ("bfloat16" if gpu else "float32")
    args.mixed_precision = args.mixed_precision or ("bf16" if gpu else "no")
    logging.basicConfig(level=logging.WARNING)

    where = torch.cuda.get_device_name() if gpu else f"the CPU ({args.threads} threads)"
    print(
        f"LoRA training throughput on {where}: a random Llama ({args.size}), sequences of {args.seq_len} tokens, "
        f"batch {args.batch_size}, {args.steps} steps an epoch, epoch 2 timed"
    )
    if not gpu:
        print(
            "Ran on the CPU: MFU needs a GPU's bf16 peak and means little here; the tiny model's figures compare the two loops only."
        )
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as model_dir:
        parameters = random_model(args.size, args.seq_len, Path(model_dir))
        print(f"parameters: {parameters / 1e6:.1f} M")
        print(f"| loop | precision | tokens/s | MFU | peak memory ({'GPU allocated' if gpu else 'process RSS'}) |")
        print("| --- | --- | --- | --- | --- |")
        for name in ("hand-written", "accelerate"):
            results = context.Queue()
            child = context.Process(target=run_loop, args=(name, args, model_dir, results))
            child.start()
            child.join()
            if child.exitcode != 0:  # out of memory, say: its traceback is above
                print(f"| {name} | failed (exit code {child.exitcode}) | | | |")
                continue
            _, seconds, tokens, peak = results.get()
            rate = tokens / seconds
            mfu = f"{6 * parameters * rate / (args.peak_tflops * 1e12):.1%}" if args.peak_tflops else "n/a"
            precision = (
                "fp32"
                if name == "hand-written"
                else f"{args.dtype} weights, mixed {args.mixed_precision}"
                + (", grad. checkpointing" if args.gradient_checkpointing else "")
            )
            print(f"| {name} | {precision} | {rate:,.0f} | {mfu} | {peak / 2**20:,.0f} MiB |")


if __name__ == "__main__":
    main()
