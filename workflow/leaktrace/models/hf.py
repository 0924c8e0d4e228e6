"""The Hugging Face transformers backend (CPU or GPU, optional PEFT adapter)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from tqdm import tqdm
from transformers import StoppingCriteria, StoppingCriteriaList

from leaktrace.models.backend import ModelSpec, StopCondition, TokenStats
from leaktrace.models.loading import load_model, load_tokenizer


def length_buckets(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length (longest first), so
    padding, and the work spent on it, stays small."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


class _StopWhen(StoppingCriteria):
    """Per-row early stop on the decoded continuation, checked every few steps."""

    def __init__(self, decode, prompt_length: int, stops: Sequence[StopCondition], every: int = 4):
        self.decode, self.prompt_length, self.stops, self.every = decode, prompt_length, stops, every

    def __call__(self, input_ids: torch.LongTensor, scores, **kwargs) -> torch.BoolTensor:
        new = input_ids.shape[1] - self.prompt_length
        if new % self.every:
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        return torch.tensor(
            [stop(self.decode(row[self.prompt_length :])) for stop, row in zip(self.stops, input_ids.tolist(), strict=True)],
            dtype=torch.bool,
            device=input_ids.device,
        )


class HFLanguageModel:
    def __init__(self, spec: ModelSpec, *, batch_size: int = 16, max_length: int = 1024, progress: bool = True):
        self.name = spec.name_or_path if spec.adapter is None else f"{spec.name_or_path}+{spec.adapter}"
        self.spec = spec
        self.tokenizer = load_tokenizer(spec)
        self.model = load_model(spec)
        self.batch_size = batch_size
        self.max_length = max_length
        self.progress = progress
        self.bos_id = self.tokenizer.bos_token_id if self.tokenizer.bos_token_id is not None else self.tokenizer.eos_token_id
        self.pad_id = self.tokenizer.pad_token_id

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    @torch.inference_mode()
    def score(self, texts: Sequence[str]) -> list[TokenStats]:
        encoded = [self.encode(t) for t in texts]
        limit = self.max_length - 1  # room for BOS
        ids = [[self.bos_id, *e[:limit]] for e in encoded]
        results: list[TokenStats | None] = [None] * len(texts)
        batches = length_buckets([len(x) for x in ids], self.batch_size)
        for batch in tqdm(batches, desc=f"scoring {self.name}", disable=not self.progress, mininterval=5):
            width = max(len(ids[i]) for i in batch)
            input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                input_ids[row, : len(ids[i])] = torch.tensor(ids[i])
                mask[row, : len(ids[i])] = 1
            device = self.model.device
            logits = self.model(input_ids=input_ids.to(device), attention_mask=mask.to(device)).logits[:, :-1].float()
            logp = torch.log_softmax(logits, dim=-1)
            targets = input_ids[:, 1:].to(device)
            token_lp = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            p = logp.exp()
            mu = (p * logp).sum(-1)
            var = (p * logp.square()).sum(-1) - mu.square()
            sigma = var.clamp_min(0).sqrt()
            token_lp, mu, sigma = (t.cpu().numpy() for t in (token_lp, mu, sigma))
            for row, i in enumerate(batch):
                n = len(ids[i]) - 1
                results[i] = TokenStats(
                    token_ids=np.asarray(ids[i][1:], dtype=np.int32),
                    logprobs=token_lp[row, :n].astype(np.float32),
                    mu=mu[row, :n].astype(np.float32),
                    sigma=sigma[row, :n].astype(np.float32),
                    truncated=len(encoded[i]) > limit,
                )
        return results  # type: ignore[return-value]

    @torch.inference_mode()
    def generate(
        self, prompts: Sequence[list[int]], *, max_new_tokens: int, stops: Sequence[StopCondition] | None = None
    ) -> list[str]:
        outputs: list[str | None] = [None] * len(prompts)
        ids = [[self.bos_id, *p] for p in prompts]
        batches = length_buckets([len(x) for x in ids], self.batch_size)
        for batch in tqdm(batches, desc=f"generating {self.name}", disable=not self.progress, mininterval=5):
            width = max(len(ids[i]) for i in batch)
            input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):  # left padding: continuations start at one column
                input_ids[row, width - len(ids[i]) :] = torch.tensor(ids[i])
                mask[row, width - len(ids[i]) :] = 1
            criteria = StoppingCriteriaList([_StopWhen(self.decode, width, [stops[i] for i in batch])]) if stops else None
            generated = self.model.generate(
                input_ids=input_ids.to(self.model.device),
                attention_mask=mask.to(self.model.device),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=self.pad_id,
                eos_token_id=self.tokenizer.eos_token_id,
                stopping_criteria=criteria,
            )
            for row, i in enumerate(batch):
                outputs[i] = self.decode(generated[row, width:].tolist())
        return outputs  # type: ignore[return-value]
