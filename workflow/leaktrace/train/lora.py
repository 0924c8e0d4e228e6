"""LoRA continued pretraining (peft) of a base causal LM on the mixed corpus,
saving a standard PEFT adapter after each requested epoch of one run.

The learning rate is constant after a linear warm-up, so the adapter saved
after epoch 1 does not depend on how many epochs the run goes on for.
Sequences are cut to the model's trained context (capped by
``max_length``), the limit scoring uses too. The training log holds what
training did, not how fast: throughput goes to the rule's log only, so
reruns write the same bytes."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from peft import LoraConfig, get_peft_model
from tqdm import tqdm

from leaktrace.models.backend import ModelSpec
from leaktrace.models.context import context_limit
from leaktrace.models.loading import load_model, load_tokenizer
from leaktrace.seeding import seed_everything

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoraSettings:
    epochs: tuple[int, ...] = (1, 3, 5)
    rank: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    learning_rate: float = 1e-2
    batch_size: int = 8
    gradient_accumulation: int = 1
    warmup_steps: int = 10
    max_length: int | None = None  # cap on the model's trained context (models.context)
    seed: int = 0

    @classmethod
    def from_config(cls, train: dict, *, max_length: int | None, seed: int, **overrides) -> LoraSettings:
        """The settings of the config's ``train`` block (``overrides`` replace single fields)."""
        lora = train["lora"]
        fields = {"epochs": tuple(train["epochs"]), "rank": lora["rank"], "alpha": lora["alpha"],
                  "dropout": lora["dropout"], "target_modules": tuple(lora["target_modules"]),
                  "learning_rate": train["learning_rate"], "batch_size": train["batch_size"],
                  "gradient_accumulation": train["gradient_accumulation"], "warmup_steps": train["warmup_steps"]}
        return cls(**{**fields, **overrides}, max_length=max_length, seed=seed)


def padded_batch(rows: Sequence[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask, labels) of token rows, right-padded; padding
    is masked and labelled -100, so the batch loss is the mean over every
    real predicted token of the batch, as if each row ran alone."""
    width = max(len(r) for r in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for k, r in enumerate(rows):
        input_ids[k, : len(r)] = labels[k, : len(r)] = torch.tensor(r)
        mask[k, : len(r)] = 1
    return input_ids, mask, labels


def _batches(ids: Sequence[list[int]], order: np.ndarray, batch_size: int, pad_id: int):
    for start in range(0, len(order), batch_size):
        yield padded_batch([ids[i] for i in order[start : start + batch_size]], pad_id)


def train_lora(
    base: ModelSpec,
    texts: Sequence[str],
    settings: LoraSettings,
    adapter_dir: Callable[[int], Path],
    on_log: Callable[[dict], None] = lambda row: None,
) -> None:
    """Train on ``texts`` (each one sequence: BOS, tokens, EOS, truncated to
    the context limit) and save the adapter for every epoch in
    ``settings.epochs`` to ``adapter_dir(epoch)``."""
    if not texts:
        raise ValueError("nothing to train on: the mix is empty")
    if sorted(set(settings.epochs)) != list(settings.epochs) or settings.epochs[0] < 1:
        raise ValueError(f"epochs must be increasing positive integers, got {settings.epochs}")
    seed_everything(settings.seed)
    tokenizer = load_tokenizer(base)
    model = load_model(base)
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    limit = context_limit(model.config, settings.max_length)
    ids = [[bos, *tokenizer(t, add_special_tokens=False)["input_ids"], tokenizer.eos_token_id][:limit] for t in texts]

    lora = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=list(settings.target_modules),
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(model, lora)
    # PEFT keeps the target modules as a set, saved in its hash-seed-dependent
    # order; a sorted list saves the same adapter_config.json on every run.
    model.peft_config["default"].target_modules = sorted(model.peft_config["default"].target_modules)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=0.0)
    warmup = max(1, settings.warmup_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    rng = np.random.default_rng(settings.seed)

    step, tokens, start = 0, 0, time.perf_counter()
    for epoch in range(1, settings.epochs[-1] + 1):
        order = rng.permutation(len(ids))
        losses = []
        batches = tqdm(_batches(ids, order, settings.batch_size, tokenizer.pad_token_id), desc=f"LoRA epoch {epoch}",
                       total=-(-len(ids) // settings.batch_size), unit="batch", mininterval=30)  # progress in the job's log
        for micro, (input_ids, mask, labels) in enumerate(batches):
            loss = model(input_ids=input_ids.to(model.device), attention_mask=mask.to(model.device), labels=labels.to(model.device)).loss
            (loss / settings.gradient_accumulation).backward()
            losses.append(loss.item())
            tokens += int(mask.sum())
            if (micro + 1) % settings.gradient_accumulation == 0:
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                step += 1
        if any(p.grad is not None for p in params):  # flush a partial accumulation
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
        row = {"epoch": epoch, "step": step, "loss": float(np.mean(losses)), "lr": scheduler.get_last_lr()[0], "tokens": tokens}
        on_log(row)
        log.info("epoch %d: mean loss %.4f, %d optimizer steps, %.0f tokens/s", epoch, row["loss"], step,
                 tokens / (time.perf_counter() - start))
        if epoch in settings.epochs:
            out = adapter_dir(epoch)
            out.mkdir(parents=True, exist_ok=True)
            model.save_pretrained(out)
