"""Pretraining of the embedded default's base model: a tiny Llama-architecture
causal LM and its BPE tokenizer, trained from scratch on the standard library
(code) and its documentation (text). The result is shipped under
``resources/models/`` so a default run never retrains it; this module is what
the ``pretrain_base_model`` rule runs to rebuild it."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from leaktrace.models.tokenizer import train_bpe_tokenizer
from leaktrace.seeding import rng_for, seed_everything
from leaktrace.settings.pretrain import PretrainSettings

log = logging.getLogger(__name__)


def packed_sequences(token_docs: Sequence[list[int]], eos_id: int, length: int) -> np.ndarray:
    """Concatenate documents, each preceded by EOS (which doubles as BOS), and cut
    the stream into rows of ``length`` tokens; the incomplete tail is dropped."""
    stream = np.fromiter((t for doc in token_docs for t in (eos_id, *doc)), dtype=np.int64)
    rows = len(stream) // length
    return stream[: rows * length].reshape(rows, length)


def cosine_with_warmup(step: int, total: int, warmup: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def pretrain_base_model(
    code_texts: Sequence[str],
    text_texts: Sequence[str],
    settings: PretrainSettings,
    out_dir: str | Path,
    on_log: Callable[[dict], None] = lambda row: None,
) -> None:
    """Train tokenizer and model, save both (``save_pretrained``) to ``out_dir``.
    General text is upsampled ``text_upsampling`` times since the shipped
    documentation is small next to the code."""
    seed_everything(settings.seed)
    texts = list(code_texts) + list(text_texts) * settings.text_upsampling
    rng_for(settings.seed, "pretrain-docs").shuffle(texts)

    tokenizer = train_bpe_tokenizer(texts, settings.vocab_size)
    token_docs = tokenizer(texts, add_special_tokens=False)["input_ids"]
    rows = packed_sequences(token_docs, tokenizer.eos_token_id, settings.context_length)
    order = np.random.default_rng(settings.seed).permutation(len(rows))
    steps = max(1, settings.tokens // (settings.batch_size * settings.context_length))
    log.info(
        "pretraining on %d of %d packed rows of %d tokens, %d steps",
        min(len(rows), steps * settings.batch_size),
        len(rows),
        settings.context_length,
        steps,
    )

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=settings.hidden_size,
        intermediate_size=settings.intermediate_size,
        num_hidden_layers=settings.num_layers,
        num_attention_heads=settings.num_heads,
        num_key_value_heads=settings.num_heads,
        max_position_embeddings=settings.context_length,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay, betas=(0.9, 0.95)
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: cosine_with_warmup(s, steps, settings.warmup_steps)
    )

    model.train()
    start = time.perf_counter()
    for step in range(steps):
        idx = order[(np.arange(settings.batch_size) + step * settings.batch_size) % len(rows)]
        batch = torch.from_numpy(rows[idx])
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 20 == 0 or step == steps - 1:
            elapsed = time.perf_counter() - start
            row = {
                "step": step,
                "loss": loss.item(),
                "lr": scheduler.get_last_lr()[0],
                "tokens": (step + 1) * batch.numel(),
                "seconds": elapsed,
            }
            on_log(row)
            log.info(
                "step %d/%d loss %.3f (%.0f tokens/s)", step, steps, row["loss"], row["tokens"] / max(elapsed, 1e-9)
            )

    model.eval()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
