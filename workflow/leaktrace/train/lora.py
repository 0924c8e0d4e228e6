"""LoRA continued pretraining (peft) of a base causal LM on the mixed corpus,
saving a standard PEFT adapter after each requested epoch of one run.

The loop runs on an ``accelerate.Accelerator``: mixed precision (bf16/fp16)
from the settings, DDP across the processes ``accelerate launch`` starts
(one per GPU), gradient accumulation to an effective batch, optional
gradient checkpointing and 4-bit base weights (QLoRA), and checkpoints a
killed run resumes from (train.checkpoint). On the CPU with one process and
no mixed precision it computes what the hand-written fp32 loop it replaced
computed, to the byte.

The learning rate is constant after a linear warm-up, so the adapter saved
after epoch 1 does not depend on how many epochs the run goes on for. With
``group_by_length`` each batch holds sequences of similar length (seeded,
in megabatches, as Hugging Face's length-grouped sampler): the same
sequences and steps with far less padding, which a CPU pays for in full.
Sequences are cut to the model's trained context (capped by
``max_length``), the limit scoring uses too. The training log holds what
training did, not how fast: throughput goes to the rule's log only, so
reruns write the same bytes."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import gather_object
from peft import LoraConfig, get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict
from tqdm import tqdm

from leaktrace.models.backend import ModelSpec
from leaktrace.models.context import context_limit
from leaktrace.models.loading import DTYPES, load_model, load_tokenizer
from leaktrace.seeding import seed_everything
from leaktrace.settings.train import LoraRun
from leaktrace.train.checkpoint import Checkpoints, set_rng_states

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
    effective_batch_size: int | None = None  # sequences per optimizer step over all processes; sets the accumulation
    mixed_precision: str = "no"  # no | bf16 | fp16 (accelerate's autocast; fp16 with a loss scaler)
    gradient_checkpointing: bool = False
    load_in_4bit: bool = False  # QLoRA: NF4 base weights (bitsandbytes, CUDA only)
    checkpoint_every: int = 0  # optimizer steps between checkpoints (0: none; a stop signal still writes one)
    group_by_length: bool = False  # batches of sequences of similar length (length_grouped_order): less padding

    @classmethod
    def from_config(cls, train: Mapping | LoraRun, *, max_length: int | None, seed: int, **overrides) -> LoraSettings:
        """The settings of the config's ``train`` block, as a mapping or as a
        stage's :class:`~leaktrace.settings.train.LoraRun` (the testbed's
        ``TrainSettings``, which adds the epochs); ``overrides`` replace single
        fields (``epochs`` for a run whose settings hold none)."""
        if isinstance(train, LoraRun):
            train = asdict(train)
        lora = train["lora"]
        fields = {
            **({"epochs": tuple(train["epochs"])} if "epochs" in train else {}),
            "rank": lora["rank"],
            "alpha": lora["alpha"],
            "dropout": lora["dropout"],
            "target_modules": tuple(lora["target_modules"]),
            "learning_rate": train["learning_rate"],
            "batch_size": train["batch_size"],
            "gradient_accumulation": train["gradient_accumulation"],
            "warmup_steps": train["warmup_steps"],
            **{
                k: train[k]
                for k in (
                    "effective_batch_size",
                    "mixed_precision",
                    "gradient_checkpointing",
                    "load_in_4bit",
                    "checkpoint_every",
                    "group_by_length",
                )
                if k in train
            },
        }
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


def megabatch_size(n: int, batch_size: int) -> int:
    """Batches per megabatch, Hugging Face's ``get_length_grouped_indices``
    rule: 50, or fewer so that an epoch holds at least 4 megabatches (at least 1)."""
    return max(1, min(n // (batch_size * 4), 50))


def length_grouped_order(lengths: Sequence[int], batch_size: int, rng: np.random.Generator) -> np.ndarray:
    """An epoch's order whose consecutive ``batch_size`` positions are
    sequences of similar length: a random permutation cut into megabatches
    (``megabatch_size`` batches each), each sorted by length (longest first,
    ties in the permutation's order) and cut into batches; then the full
    batches in a random order, the one short batch (if the count does not
    divide) last, where an unsorted epoch has it. Batch composition still
    changes every epoch; only the padding goes. Deterministic in ``rng``."""
    lengths = np.asarray(lengths)
    order = rng.permutation(lengths.size)
    size = megabatch_size(lengths.size, batch_size) * batch_size
    batches = []
    for start in range(0, order.size, size):
        chunk = order[start : start + size]
        chunk = chunk[np.argsort(-lengths[chunk], kind="stable")]
        batches += [chunk[i : i + batch_size] for i in range(0, chunk.size, batch_size)]
    full = [b for b in batches if b.size == batch_size]
    short = [b for b in batches if b.size < batch_size]
    return np.concatenate([full[i] for i in rng.permutation(len(full))] + short) if full else np.concatenate(short)


def padding_share(lengths: Sequence[int], order: Sequence[int], batch_size: int) -> float:
    """The share of an epoch's batch cells (sequences x the batch's longest) that are padding."""
    lengths = np.asarray(lengths)[np.asarray(order)]
    cells = sum(
        int(lengths[s : s + batch_size].max()) * len(lengths[s : s + batch_size])
        for s in range(0, lengths.size, batch_size)
    )
    return 1 - int(lengths.sum()) / cells


def accumulation_steps(settings: LoraSettings, processes: int) -> int:
    """Micro-batches per optimizer step and process: ``gradient_accumulation``,
    or what makes ``effective_batch_size`` sequences over all processes."""
    if settings.effective_batch_size is None:
        return settings.gradient_accumulation
    per_round = settings.batch_size * processes
    if settings.effective_batch_size % per_round:
        raise ValueError(
            f"effective_batch_size {settings.effective_batch_size} is not a multiple of batch_size x processes"
            f" = {settings.batch_size} x {processes}"
        )
    return settings.effective_batch_size // per_round


def process_batches(n: int, batch_size: int, processes: int, index: int) -> list[range]:
    """Positions (in the epoch's order) of this process's micro-batches: batch
    k of the epoch goes to process k mod ``processes``; the last round wraps
    to the epoch's first batches so every process runs as many (DDP waits
    for all). One process: every batch, in order."""
    starts = range(0, n, batch_size)
    rounds = -(-len(starts) // processes)
    return [
        range(s, min(s + batch_size, n)) for s in (starts[(k * processes + index) % len(starts)] for k in range(rounds))
    ]


def trainable_base(base: ModelSpec, settings: LoraSettings, accelerator: Accelerator):
    """The base model, in host memory (``prepare`` moves it to this process's
    device), or with ``load_in_4bit`` quantised straight onto it."""
    if not settings.load_in_4bit:
        model = load_model(replace(base, device="cpu"))
    else:
        if accelerator.device.type != "cuda":
            raise ValueError(
                "train.load_in_4bit (QLoRA) needs a CUDA GPU: set base_model.device to cuda, or load_in_4bit: false"
            )
        try:
            import bitsandbytes  # noqa: F401
        except ImportError as error:
            raise ImportError("train.load_in_4bit needs bitsandbytes: pip install 'leaktrace[qlora]'") from error
        from peft import prepare_model_for_kbit_training
        from transformers import AutoModelForCausalLM, BitsAndBytesConfig

        compute = DTYPES[base.dtype] if base.dtype != "float32" else torch.bfloat16
        quantization = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=compute
        )
        local = Path(base.name_or_path).exists()
        model = AutoModelForCausalLM.from_pretrained(
            base.name_or_path,
            quantization_config=quantization,
            dtype=compute,
            device_map={"": accelerator.local_process_index},
            **({"local_files_only": True} if local else {"revision": base.revision} if base.revision else {}),
        )
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    if settings.gradient_checkpointing:
        model.config.use_cache = False
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


def training_sequences(tokenizer, texts: Sequence[str], limit: int) -> list[list[int]]:
    """Each text as one training sequence: BOS (EOS where the tokenizer has
    none), its tokens and EOS, cut to ``limit`` tokens."""
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    return [[bos, *tokenizer(t, add_special_tokens=False)["input_ids"], tokenizer.eos_token_id][:limit] for t in texts]


def lora_model(model, settings: LoraSettings):
    """``model`` with the LoRA adapter of ``settings`` (rank, alpha, dropout,
    target modules) attached, in training mode."""
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
    return model


def optimizer_and_schedule(model, settings: LoraSettings):
    """(trainable parameters, AdamW over them, the constant-after-linear-warm-up schedule)."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=0.0)
    warmup = max(1, settings.warmup_steps)
    # stepped once per optimizer step by hand (not prepared: accelerate would
    # step it once per process), so warm-up counts optimizer steps
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    return params, optimizer, scheduler


def _fingerprint(base: ModelSpec, settings: LoraSettings, texts: Sequence[str], processes: int) -> str:
    """What decides a run's result, so a checkpoint is resumed by its own run
    only (how often it checkpoints does not)."""
    digest = hashlib.sha256()
    decisive = {**asdict(settings), "checkpoint_every": None}
    digest.update(
        json.dumps(
            {"base": asdict(base), "settings": decisive, "processes": processes}, sort_keys=True, default=str
        ).encode()
    )
    for text in texts:
        digest.update(hashlib.sha256(text.encode()).digest())
    return digest.hexdigest()


def train_lora(
    base: ModelSpec,
    texts: Sequence[str],
    settings: LoraSettings,
    adapter_dir: Callable[[int], Path],
    on_log: Callable[[dict], None] = lambda row: None,
    checkpoint_dir: Path | None = None,
) -> None:
    """Train on ``texts`` (each one sequence: BOS, tokens, EOS, truncated to
    the context limit) and save the adapter for every epoch in
    ``settings.epochs`` to ``adapter_dir(epoch)``. With ``checkpoint_dir``
    (outside the outputs), checkpoint every ``settings.checkpoint_every``
    optimizer steps and on SIGTERM/SIGUSR1, and resume from the checkpoint
    found there."""
    if not texts:
        raise ValueError("nothing to train on: the mix is empty")
    if sorted(set(settings.epochs)) != list(settings.epochs) or settings.epochs[0] < 1:
        raise ValueError(f"epochs must be increasing positive integers, got {settings.epochs}")
    seed_everything(settings.seed)
    accelerator = Accelerator(cpu=base.device == "cpu", mixed_precision=settings.mixed_precision)
    processes, accumulation = accelerator.num_processes, accumulation_steps(settings, accelerator.num_processes)
    tokenizer = load_tokenizer(base)
    model = trainable_base(base, settings, accelerator)
    ids = training_sequences(tokenizer, texts, context_limit(model.config, settings.max_length))
    model = lora_model(model, settings)
    params, optimizer, scheduler = optimizer_and_schedule(model, settings)
    model, optimizer = accelerator.prepare(model, optimizer)
    peft_model = accelerator.unwrap_model(model)
    rng = np.random.default_rng(settings.seed)

    checkpoints = (
        Checkpoints(checkpoint_dir, _fingerprint(base, settings, texts, processes), accelerator)
        if checkpoint_dir
        else None
    )
    resumed = checkpoints.load() if checkpoints else None
    first_epoch, start_round, step, tokens, rows, losses, order = 1, 0, 0, 0, [], [], None
    if resumed:
        shared, own = resumed
        set_peft_model_state_dict(peft_model, shared["adapter"])
        optimizer.load_state_dict(shared["optimizer"])
        scheduler.load_state_dict(shared["scheduler"])
        if accelerator.scaler is not None:
            accelerator.scaler.load_state_dict(shared["scaler"])
        rng.bit_generator.state = shared["data_rng"]
        first_epoch, start_round, step, rows, order = (
            shared["epoch"],
            shared["round"],
            shared["step"],
            shared["rows"],
            shared["order"],
        )
        tokens, losses = own["tokens"], own["losses"]
        set_rng_states(own["rng"])
        for row in rows:
            on_log(row)
            if row["epoch"] in settings.epochs:
                checkpoints.restore_adapter(row["epoch"], adapter_dir(row["epoch"]))
        log.info(
            "resuming at epoch %d, step %d (%d batches into the epoch) from %s",
            first_epoch,
            step,
            start_round,
            checkpoint_dir,
        )

    def optimizer_step(epoch: int, done: int) -> None:
        nonlocal step
        accelerator.clip_grad_norm_(params, 1.0)
        optimizer.step()
        if not accelerator.optimizer_step_was_skipped:  # fp16: an overflowing step is skipped, and so is the schedule
            scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        if checkpoints is None:
            return
        stop = checkpoints.stop_requested()
        if stop or settings.checkpoint_every and step % settings.checkpoint_every == 0:
            checkpoints.save(
                {
                    "adapter": get_peft_model_state_dict(peft_model),
                    "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(),
                    "scaler": accelerator.scaler.state_dict() if accelerator.scaler else None,
                    "data_rng": rng.bit_generator.state,
                    "epoch": epoch,
                    "round": done,
                    "step": step,
                    "rows": rows,
                    "order": order,
                },
                {"tokens": tokens, "losses": losses},
            )
        if stop:
            raise SystemExit(128 + checkpoints.stop_signal if checkpoints.stop_signal else 1)

    start = time.perf_counter()
    with checkpoints.signals() if checkpoints else nullcontext():
        for epoch in range(first_epoch, settings.epochs[-1] + 1):
            if epoch > first_epoch or not resumed:
                order = (
                    length_grouped_order([len(i) for i in ids], settings.batch_size, rng)
                    if settings.group_by_length
                    else rng.permutation(len(ids))
                )
                losses, start_round = [], 0
            batches = process_batches(len(ids), settings.batch_size, processes, accelerator.process_index)
            log.info(
                "epoch %d: %.1f%% of the batches' cells are padding",
                epoch,
                100 * padding_share([len(i) for i in ids], order, settings.batch_size),
            )
            progress = tqdm(
                batches[start_round:],
                desc=f"LoRA epoch {epoch}",
                unit="batch",
                mininterval=30,  # progress in the job's log
                disable=not accelerator.is_local_main_process,
            )
            for done, positions in enumerate(progress, start=start_round + 1):
                input_ids, mask, labels = padded_batch(
                    [ids[i] for i in order[positions.start : positions.stop]], tokenizer.pad_token_id
                )
                sync = done % accumulation == 0 or done == len(batches)
                with (
                    nullcontext() if sync else accelerator.no_sync(model)
                ):  # DDP: all-reduce on the last of a group only
                    loss = model(
                        input_ids=input_ids.to(accelerator.device),
                        attention_mask=mask.to(accelerator.device),
                        labels=labels.to(accelerator.device),
                    ).loss
                    accelerator.backward(loss / accumulation)
                losses.append(loss.item())
                tokens += int(mask.sum())
                if done % accumulation == 0:
                    optimizer_step(epoch, done)
            if any(p.grad is not None for p in params):  # flush a partial accumulation
                optimizer_step(epoch, len(batches))
            row = {
                "epoch": epoch,
                "step": step,
                "loss": float(np.mean(gather_object(losses))),
                "lr": scheduler.get_last_lr()[0],
                "tokens": sum(gather_object([tokens])),
            }
            rows.append(row)
            on_log(row)
            log.info(
                "epoch %d: mean loss %.4f, %d optimizer steps, %.0f tokens/s (this process)",
                epoch,
                row["loss"],
                step,
                tokens / (time.perf_counter() - start),
            )
            if epoch in settings.epochs:
                out = adapter_dir(epoch)
                if accelerator.is_main_process:
                    out.mkdir(parents=True, exist_ok=True)
                    peft_model.save_pretrained(out)
                if checkpoints:
                    checkpoints.keep_adapter(epoch, out)
                accelerator.wait_for_everyone()
    if checkpoints:
        checkpoints.remove()
