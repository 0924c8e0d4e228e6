"""LoRA job time with random batches and with length-grouped batches
(``train.group_by_length``), side by side in one process, on the testbed's
own training mix and the config's training settings: what a `train_lora`
job does (every epoch up to the last of ``train.epochs``, one torch thread,
the first training seed), twice, once each way. Prints the share of each
epoch's batch cells that are padding (the orders the loop draws, from the
same seeded generator) and the job's wall time, and their ratio.

    .venv/bin/python benchmarks/lora_padding.py                     # the default run's mix
    .venv/bin/python benchmarks/lora_padding.py --mix results/micro/train/humaneval/ratio-1/mix.parquet \\
        --config config/micro.yaml --epochs 1

The arms run one after the other (``--order`` picks which goes first; on a
shared machine run both orders). Both train the same sequences for the same
number of optimizer steps; only which sequences share a batch differs."""

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
        order = length_grouped_order(lengths, settings.batch_size, rng) if settings.group_by_length else rng.permutation(len(lengths))
        shares.append(padding_share(lengths, order, settings.batch_size))
    return shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mix", type=Path, default=ROOT / "results/default/train/humaneval/ratio-5/mix.parquet")
    parser.add_argument("--config", type=Path, default=ROOT / "config/config.yaml")
    parser.add_argument("--epochs", type=int, help="train this many epochs (default: the last of train.epochs)")
    parser.add_argument("--order", choices=["random-first", "grouped-first"], default="random-first")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    torch.set_num_threads(1)  # base_model.threads: a job's thread

    config = effective_config(args.config)
    train, base = config["train"], config["base_model"]
    model = {k: base.get(k) for k in ("path", "dtype", "device", "max_length")}
    spec = ModelSpec(str(ROOT / model["path"]), dtype=model["dtype"], device=model["device"])
    seed = derive_seed(derive_seed(config["seed"], "train", str(train["seeds"][0])), "lora")  # as rule train_lora's first seed
    epochs = (args.epochs,) if args.epochs else (max(train["epochs"]),)
    texts = [r["text"] for r in read_records(args.mix, ["text"])]
    tokenizer = load_tokenizer(spec)
    limit = context_limit(load_model_config(spec), model["max_length"])
    lengths = [min(len(tokenizer(t, add_special_tokens=False)["input_ids"]) + 2, limit) for t in texts]

    arms = [False, True] if args.order == "random-first" else [True, False]
    results = {}
    for grouped in arms:
        settings = LoraSettings.from_config({**train, "group_by_length": grouped}, max_length=model["max_length"], seed=seed,
                                            epochs=epochs, checkpoint_every=0)
        padding = epoch_padding(lengths, settings)
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            train_lora(spec, texts, settings, lambda e: Path(tmp) / f"epoch-{e}")
            results[grouped] = (time.perf_counter() - start, padding)

    print(f"LoRA job on {args.mix} ({len(texts)} sequences, batch {train['batch_size']}, {epochs[0]} epochs, 1 thread), "
          f"arms in the order {args.order}")
    print("| batches | padding share (mean over epochs) | job wall time |")
    print("| --- | --- | --- |")
    for grouped, label in ((False, "random"), (True, "length-grouped")):
        seconds, padding = results[grouped]
        print(f"| {label} | {np.mean(padding):.1%} | {seconds:.1f} s |")
    print(f"length-grouped / random: time {results[True][0] / results[False][0]:.2f}, "
          f"padded cells {(1 - np.mean(results[False][1])) / (1 - np.mean(results[True][1])):.2f}")


if __name__ == "__main__":
    main()
