"""LoRA job time with random batches and with length-grouped batches
(``train.group_by_length``), side by side in one process, on the testbed's
own training mix and the config's training settings: what a `train_lora`
job does (every epoch up to the last of ``train.epochs``, one torch thread,
the first training seed), twice, once each way. Prints the share of each
epoch's batch cells that are padding (the orders the loop draws, from the
same seeded generator), the job's wall time and its CPU time (one
thread: the time the job computed, which other processes on a shared
machine disturb far less than the wall clock), and their ratios.

    .venv/bin/python benchmarks/lora_padding.py                     # the default run's mix
    .venv/bin/python benchmarks/lora_padding.py --mix results/micro/train/humaneval/ratio-1/mix.parquet \\
        --config config/micro.yaml --epochs 1

The arms run one after the other, ``--repeats`` times in the order random,
grouped, grouped, random, ... so a drift in the machine's load falls on both
alike; each run's figures are printed as it ends. Both arms train the same
sequences for the same number of optimizer steps; only which sequences
share a batch differs."""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from leaktrace.artifacts import read_records
from leaktrace.models.backend import ModelSpec
from leaktrace.models.context import context_limit
from leaktrace.models.loading import load_model_config, load_tokenizer
from leaktrace.seeding import derive_seed
from leaktrace.train.lora import LoraSettings, length_grouped_order, padding_share, train_lora

ROOT = Path(__file__).resolve().parent.parent


def effective_config(path: Path) -> dict:
    """config/config.yaml with ``path`` laid over it (as Snakemake lays a --configfile)."""
    from snakemake.utils import update_config

    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    update_config(config, yaml.safe_load(path.read_text()))
    return config


def epoch_padding(lengths: list[int], settings: LoraSettings) -> list[float]:
    """The padding share of every epoch's batches, drawn as train_lora draws them."""
    rng = np.random.default_rng(settings.seed)
    shares = []
    for _ in range(settings.epochs[-1]):
        order = (
            length_grouped_order(lengths, settings.batch_size, rng)
            if settings.group_by_length
            else rng.permutation(len(lengths))
        )
        shares.append(padding_share(lengths, order, settings.batch_size))
    return shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mix", type=Path, default=ROOT / "results/default/train/humaneval/ratio-5/mix.parquet")
    parser.add_argument("--config", type=Path, default=ROOT / "config/config.yaml")
    parser.add_argument("--epochs", type=int, help="train this many epochs (default: the last of train.epochs)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each arm, alternating (ABBA...)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    torch.set_num_threads(1)  # base_model.threads: a job's thread

    config = effective_config(args.config)
    train, base = config["train"], config["base_model"]
    model = {k: base.get(k) for k in ("path", "dtype", "device", "max_length")}
    spec = ModelSpec(str(ROOT / model["path"]), dtype=model["dtype"], device=model["device"])
    seed = derive_seed(
        derive_seed(config["seed"], "train", str(train["seeds"][0])), "lora"
    )  # as rule train_lora's first seed
    epochs = (args.epochs,) if args.epochs else (max(train["epochs"]),)
    texts = [r["text"] for r in read_records(args.mix, ["text"])]
    tokenizer = load_tokenizer(spec)
    limit = context_limit(load_model_config(spec), model["max_length"])
    lengths = [min(len(tokenizer(t, add_special_tokens=False)["input_ids"]) + 2, limit) for t in texts]

    arms = [grouped for k in range(args.repeats) for grouped in ((False, True) if k % 2 == 0 else (True, False))]
    label = {False: "random", True: "length-grouped"}
    print(f"LoRA job on {args.mix} ({len(texts)} sequences, batch {train['batch_size']}, {epochs[0]} epochs, 1 thread)")
    print("| run | batches | padding share (mean over epochs) | wall time | CPU time |")
    print("| --- | --- | --- | --- | --- |", flush=True)
    results: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    for run, grouped in enumerate(arms, start=1):
        settings = LoraSettings.from_config(
            {**train, "group_by_length": grouped},
            max_length=model["max_length"],
            seed=seed,
            epochs=epochs,
            checkpoint_every=0,
        )
        padding = float(np.mean(epoch_padding(lengths, settings)))
        with tempfile.TemporaryDirectory() as tmp:
            wall, cpu = time.perf_counter(), time.process_time()
            train_lora(spec, texts, settings, lambda e: Path(tmp) / f"epoch-{e}")
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        results[grouped].append((wall, cpu))
        print(f"| {run} | {label[grouped]} | {padding:.1%} | {wall:.1f} s | {cpu:.1f} s |", flush=True)
    pad = {
        g: float(
            np.mean(
                epoch_padding(
                    lengths,
                    LoraSettings.from_config(
                        {**train, "group_by_length": g}, max_length=model["max_length"], seed=seed, epochs=epochs
                    ),
                )
            )
        )
        for g in (False, True)
    }
    mean = {g: np.mean(results[g], axis=0) for g in (False, True)}
    print(
        f"length-grouped / random: wall time {mean[True][0] / mean[False][0]:.2f}, CPU time {mean[True][1] / mean[False][1]:.2f}, "
        f"batch cells (tokens and padding) {(1 - pad[False]) / (1 - pad[True]):.2f}"
    )


if __name__ == "__main__":
    main()
