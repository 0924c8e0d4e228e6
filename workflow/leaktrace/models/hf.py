"""The Hugging Face transformers backend (CPU or GPU, optional PEFT adapter)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import torch
from tqdm import tqdm
from transformers import DynamicCache, StoppingCriteria, StoppingCriteriaList
from transformers.cache_utils import DynamicLayer

from leaktrace.models.backend import ModelSpec, StopCondition, TokenStats
from leaktrace.models.loading import load_model, load_tokenizer


def length_buckets(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length (longest first), so
    padding, and the work spent on it, stays small."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def distribution_stats(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For next-token logits of shape (N, V) and the N tokens that followed:
    log p(target), and the mean mu and standard deviation sigma of log p(v)
    under v ~ p (Min-K%++'s local statistics), all of shape (N,).

    One log-softmax over the vocabulary; the moments are dot products along
    the vocabulary, and the variance is taken around mu,
    sum_v p(v) (log p(v) - mu)^2, not as E[(log p)^2] - mu^2: near-uniform
    distributions (|log p| large, sigma small) would otherwise lose the
    variance to cancellation in float32. It costs no more passes over the
    vocabulary than the textbook formula."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    token_lp = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    p = logp.exp()
    mu = torch.einsum("nv,nv->n", p, logp)
    centred = logp.sub_(mu.unsqueeze(-1)).square_()  # logp is not needed again: reuse its memory
    sigma = torch.einsum("nv,nv->n", p, centred).clamp_min(0).sqrt()
    return token_lp, mu, sigma


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

    # Rows of next-token logits per chunk when the vocabulary projection is
    # split off: about 2 MB of float32 logits on a CPU (they stay in cache
    # while their statistics are taken), 256 MB on an accelerator.
    def _stats_chunk(self, vocab_size: int) -> int:
        budget = 1 << 19 if self.model.device.type == "cpu" else 1 << 26
        return max(16, budget // vocab_size)

    @functools.cached_property
    @torch.inference_mode()
    def _split_head(self) -> tuple[torch.nn.Module, torch.nn.Module] | None:
        """The model as (decoder, vocabulary projection), when applying the
        projection to the decoder's last hidden state reproduces the model's
        logits on a probe; None for models whose logits need more (soft-capping,
        scaling), which then run whole. Scoring projects chunk by chunk, so
        the logits never reach main memory in full. Probed on first use, so
        generation-only stages never pay for it."""
        base = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        decoder, head = base.get_decoder(), base.get_output_embeddings()
        if head is None:
            return None
        probe = torch.tensor([[self.bos_id, *self.encode("def f(x):\n    return x + 1\n")[:15]]], device=self.model.device)
        expected = self.model(input_ids=probe).logits.float()
        try:  # a decoder that does not take input_ids or return last_hidden_state
            actual = head(decoder(input_ids=probe).last_hidden_state).float()
        except (AttributeError, TypeError, ValueError):
            return None
        if actual.shape != expected.shape or not torch.allclose(actual, expected, rtol=1e-4, atol=1e-4):
            return None
        return decoder, head

    def _projected_stats(self, hidden: torch.Tensor, targets: torch.Tensor, moments: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``distribution_stats`` of the logits ``head(hidden)``, one cache-sized
        chunk of rows at a time; rows where ``moments`` is False get their
        log-probability only (one log-sum-exp, no pass for mu and sigma; NaN there)."""
        _, head = self._split_head
        chunk = self._stats_chunk(head.weight.shape[0])
        token_lp = torch.empty(len(hidden), dtype=torch.float32, device=hidden.device)
        mu, sigma = torch.full_like(token_lp, float("nan")), torch.full_like(token_lp, float("nan"))
        full, plain = moments.nonzero().squeeze(-1), (~moments).nonzero().squeeze(-1)
        for i in range(0, len(full), chunk):
            rows = full[i : i + chunk]
            token_lp[rows], mu[rows], sigma[rows] = distribution_stats(head(hidden[rows]), targets[rows])
        for i in range(0, len(plain), chunk):
            rows = plain[i : i + chunk]
            logits = head(hidden[rows]).float()
            token_lp[rows] = logits.gather(-1, targets[rows].unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)
        return token_lp, mu, sigma

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def _right_padded(self, rows: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(r) for r in rows)
        input_ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for row, ids in enumerate(rows):
            input_ids[row, : len(ids)] = torch.as_tensor(ids, dtype=torch.long)
            mask[row, : len(ids)] = 1
        return input_ids, mask

    @staticmethod
    def _split_rows(values: torch.Tensor, lengths: Sequence[int]) -> list[np.ndarray]:
        """One CPU copy of a flat tensor of per-token values, cut into rows."""
        flat = values.cpu().numpy().astype(np.float32, copy=False)
        return np.split(flat, np.cumsum(lengths)[:-1])

    @torch.inference_mode()
    def score(self, texts: Sequence[str], *, moments: Sequence[bool] | None = None) -> list[TokenStats]:
        """Token statistics of every text; with ``moments[i]`` False, text i
        gets its log-probabilities only (mu and sigma None), which spares the
        passes over the vocabulary that only Min-K%++ needs."""
        wants = [True] * len(texts) if moments is None else list(moments)
        if len(wants) != len(texts):
            raise ValueError(f"{len(wants)} moment flags for {len(texts)} texts")
        encoded = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []
        limit = self.max_length - 1  # room for BOS
        ids = [[self.bos_id, *e[:limit]] for e in encoded]
        results: list[TokenStats | None] = [None] * len(texts)
        batches = length_buckets([len(x) for x in ids], self.batch_size)
        device = self.model.device
        for batch in tqdm(batches, desc=f"scoring {self.name}", disable=not self.progress, mininterval=5):
            input_ids, mask = self._right_padded([ids[i] for i in batch])
            input_ids, mask = input_ids.to(device), mask.to(device)
            # Right padding under causal attention: no text position attends to a later
            # padding position, so no attention mask is needed (the outputs at padding
            # positions are garbage and dropped below), and the fused causal kernel runs.
            # position t predicts token t+1; keep only the positions that predict a text token
            predicts = mask[:, 1:].bool()
            targets = input_ids[:, 1:][predicts]
            if self._split_head:
                hidden = self._split_head[0](input_ids=input_ids).last_hidden_state
                rows_want = torch.tensor([wants[i] for i in batch], device=device)
                token_lp, mu, sigma = self._projected_stats(
                    hidden[:, :-1][predicts], targets, rows_want.unsqueeze(1).expand_as(predicts)[predicts])
            else:
                logits = self.model(input_ids=input_ids).logits
                token_lp, mu, sigma = distribution_stats(logits[:, :-1][predicts], targets)
            lengths = [len(ids[i]) - 1 for i in batch]
            rows = zip(*(self._split_rows(t, lengths) for t in (token_lp, mu, sigma)), strict=True)
            for i, (lp, m, s) in zip(batch, rows, strict=True):
                results[i] = TokenStats(
                    token_ids=np.asarray(ids[i][1:], dtype=np.int32), logprobs=lp, mu=m if wants[i] else None,
                    sigma=s if wants[i] else None, truncated=len(encoded[i]) > limit,
                )
        return results  # type: ignore[return-value]

    def _prefix_cache_is_reusable(self, cache: DynamicCache) -> bool:
        """A prefix's key/value cache can be shared by a batch of continuations
        when every layer is a plain full-attention ``DynamicLayer``: its update
        concatenates new keys onto the cached ones (never writes into them), so
        a batch-expanded view of the prefix's tensors stays untouched. Sliding
        windows, quantised or offloaded caches and linear-attention layers do
        not have that property; those models recompute the prefix."""
        return all(type(layer) is DynamicLayer for layer in cache.layers)

    @torch.inference_mode()
    def score_conditioned(self, prefix: str, texts: Sequence[str], *, reuse_prefix_cache: bool | None = None) -> list[TokenStats]:
        """Token statistics of each text conditioned on one shared ``prefix``.

        The sequence is BOS + prefix tokens + text tokens: the prefix is
        tokenised once, each text on its own (so its token ids equal those
        of :meth:`score`), with no second BOS where they meet; only the text
        tokens are scored, the first one conditioned on the last prefix token.
        Texts are truncated so the whole sequence fits ``max_length``
        (``truncated`` says so). The prefix's key/value cache is computed once
        and shared by every batch where that is exact (see
        ``_prefix_cache_is_reusable``); otherwise, or with
        ``reuse_prefix_cache=False``, each batch recomputes it, still batched."""
        prefix_ids = [self.bos_id, *self.encode(prefix)]
        limit = self.max_length - len(prefix_ids)
        if limit < 1:
            raise ValueError(f"the prefix has {len(prefix_ids) - 1} tokens: no room for a text within max_length={self.max_length}")
        encoded = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []
        if any(len(e) == 0 for e in encoded):
            raise ValueError("cannot score an empty text")
        ids = [e[:limit] for e in encoded]
        device = self.model.device
        prefix_tensor = torch.tensor([prefix_ids], dtype=torch.long, device=device)
        cache = None
        if reuse_prefix_cache is not False:
            out = self.model(input_ids=prefix_tensor, use_cache=True)
            if self._prefix_cache_is_reusable(out.past_key_values):
                cache = [(layer.keys, layer.values) for layer in out.past_key_values.layers]
                first_logits = out.logits[0, -1]  # predicts the first text token
            elif reuse_prefix_cache:
                raise ValueError(f"{self.name}: its key/value cache cannot be shared between sequences")
        results: list[TokenStats | None] = [None] * len(texts)
        batches = length_buckets([len(x) for x in ids], self.batch_size)
        n_prefix = len(prefix_ids)
        for batch in tqdm(batches, desc=f"scoring {self.name} with a prefix", disable=not self.progress, mininterval=5):
            lengths = [len(ids[i]) for i in batch]
            input_ids, mask = self._right_padded([ids[i] for i in batch])
            input_ids, mask = input_ids.to(device), mask.to(device)
            valid = mask.bool()
            if cache is not None:
                b = len(batch)
                past = DynamicCache(ddp_cache_data=[(k.expand(b, -1, -1, -1), v.expand(b, -1, -1, -1)) for k, v in cache])
                full_mask = torch.cat([torch.ones((b, n_prefix), dtype=mask.dtype, device=device), mask], dim=1)
                logits = self.model(input_ids=input_ids, attention_mask=full_mask, past_key_values=past, use_cache=True).logits
                # row r's text token t is predicted by its position t-1, the first one by the prefix's last position
                text_logits = torch.cat([first_logits.expand(len(batch), 1, -1), logits[:, :-1]], dim=1)[valid]
            else:
                full = torch.cat([prefix_tensor.expand(len(batch), -1), input_ids], dim=1)
                full_mask = torch.cat([torch.ones((len(batch), n_prefix), dtype=mask.dtype, device=device), mask], dim=1)
                logits = self.model(input_ids=full, attention_mask=full_mask).logits
                text_logits = logits[:, n_prefix - 1 : -1][valid]
            token_lp, mu, sigma = distribution_stats(text_logits, input_ids[valid])
            rows = zip(*(self._split_rows(t, lengths) for t in (token_lp, mu, sigma)), strict=True)
            for i, (lp, m, s) in zip(batch, rows, strict=True):
                results[i] = TokenStats(
                    token_ids=np.asarray(ids[i], dtype=np.int32), logprobs=lp, mu=m, sigma=s,
                    truncated=len(encoded[i]) > limit,
                )
        return results  # type: ignore[return-value]

    @torch.inference_mode()
    def _greedy(self, ids: Sequence[list[int]], *, max_new_tokens: int, stops: Sequence[StopCondition] | None) -> list[str]:
        """Greedy continuations of full token sequences (special tokens included)."""
        outputs: list[str | None] = [None] * len(ids)
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

    def generate(
        self, prompts: Sequence[list[int]], *, max_new_tokens: int, stops: Sequence[StopCondition] | None = None
    ) -> list[str]:
        return self._greedy([[self.bos_id, *p] for p in prompts], max_new_tokens=max_new_tokens, stops=stops)

    def chat(self, messages: list[dict], *, max_new_tokens: int) -> str:
        """Greedy reply to a chat, formatted by the tokenizer's chat template
        (with the generation prompt); the template supplies any BOS itself."""
        if not getattr(self.tokenizer, "chat_template", None):
            raise ValueError(f"{self.name}: the tokenizer has no chat template, so it cannot be used as a chat model")
        prompt = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        ids = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        return self._greedy([ids], max_new_tokens=max_new_tokens, stops=None)[0]
