"""VeilProbe's text-to-suffix mapping model: a small transformer trained from
scratch to map a text to the suffix the target generated for it,
maximising P(s_out | s). VeilProbe uses a 6-layer BERT encoder-decoder; here
a small decoder-only (prefix-to-suffix) Llama over the scored model's
vocabulary: the sequence is BOS, the text, the suffix, and only the suffix
tokens are in the loss. Its membership features are the hidden states of
every layer (embeddings included) for BOS and the text alone, each
mean-pooled over positions and concatenated, as VeilProbe reads its
encoder's (the decoder then sees only its start token)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from leaktrace.train.lora import padded_batch


@dataclass(frozen=True)
class MappingSettings:
    hidden: int = 64
    layers: int = 2
    heads: int = 2
    epochs: int = 2
    batch_size: int = 8
    learning_rate: float = 1e-3
    seed: int = 0


def new_mapping_model(
    vocab_size: int, max_length: int, settings: MappingSettings, bos_id: int, pad_id: int
) -> LlamaForCausalLM:
    torch.manual_seed(settings.seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=settings.hidden,
        intermediate_size=4 * settings.hidden,
        num_hidden_layers=settings.layers,
        num_attention_heads=settings.heads,
        num_key_value_heads=settings.heads,
        max_position_embeddings=max_length,
        bos_token_id=bos_id,
        eos_token_id=bos_id,
        pad_token_id=pad_id,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(config)


def train_mapping(
    model: LlamaForCausalLM, pairs: Sequence[tuple[list[int], list[int]]], settings: MappingSettings
) -> list[float]:
    """Train on (text ids, suffix ids) pairs, in a seeded order; returns the
    mean loss of each epoch. Sequences are cut to the model's positions."""
    bos, pad = model.config.bos_token_id, model.config.pad_token_id
    limit = model.config.max_position_embeddings
    rows = [([bos, *text, *suffix][:limit], 1 + len(text)) for text, suffix in pairs]
    rng = np.random.default_rng(settings.seed)
    torch.manual_seed(settings.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate, weight_decay=0.0)
    model.train()
    losses = []
    for _ in range(settings.epochs):
        order = rng.permutation(len(rows))
        epoch = []
        for start in range(0, len(order), settings.batch_size):
            batch = [rows[i] for i in order[start : start + settings.batch_size]]
            input_ids, mask, labels = padded_batch([ids for ids, _ in batch], pad)
            for k, (_, text_end) in enumerate(batch):
                labels[k, :text_end] = -100  # the text is context, the suffix the target
            loss = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            epoch.append(loss.item())
        losses.append(float(np.mean(epoch)))
    model.eval()
    return losses


@torch.no_grad()
def hidden_features(model: LlamaForCausalLM, texts: Sequence[list[int]], batch_size: int = 32) -> np.ndarray:
    """(n, (layers + 1) * hidden) mean-pooled hidden states of BOS + each text."""
    bos, pad = model.config.bos_token_id, model.config.pad_token_id
    limit = model.config.max_position_embeddings
    model.eval()
    out = []
    for start in range(0, len(texts), batch_size):
        rows = [[bos, *t][:limit] for t in texts[start : start + batch_size]]
        input_ids, mask, _ = padded_batch(rows, pad)
        states = model.model(input_ids=input_ids, attention_mask=mask, output_hidden_states=True).hidden_states
        weights = mask.unsqueeze(-1).float()
        pooled = [(h * weights).sum(dim=1) / weights.sum(dim=1) for h in states]
        out.append(torch.cat(pooled, dim=-1).numpy().astype(np.float64))
    return (
        np.concatenate(out) if out else np.zeros((0, (model.config.num_hidden_layers + 1) * model.config.hidden_size))
    )
