"""The Hugging Face transformers backend (CPU or GPU, optional PEFT adapter)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import torch
from tqdm import tqdm
from transformers import StoppingCriteria, StoppingCriteriaList

from leaktrace.models.backend import (
    BACKEND_CAPABILITIES,
    Completion,
    Message,
    ModelSpec,
    PromptLogprobs,
    Sampling,
    StopCondition,
    TokenStats,
    cut_at_stop,
)
from leaktrace.models.batching import run_batches
from leaktrace.models.context import context_limit, fit_prefix
from leaktrace.models.loading import load_model, load_tokenizer


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
            [
                stop(self.decode(row[self.prompt_length :]))
                for stop, row in zip(self.stops, input_ids.tolist(), strict=True)
            ],
            dtype=torch.bool,
            device=input_ids.device,
        )


class HFLanguageModel:
    """``max_length``: a cap on tokens per scored sequence (BOS included);
    the model's trained context applies in any case (``models.context``).
    ``batch_size``: sequences per batch at most; ``token_budget``: padded
    tokens per batch at most (None: fixed ``batch_size`` batches), see
    ``models.batching``."""

    capabilities = BACKEND_CAPABILITIES["transformers"]

    def __init__(
        self,
        spec: ModelSpec,
        *,
        batch_size: int = 16,
        token_budget: int | None = None,
        max_length: int | None = None,
        progress: bool = True,
    ):
        self.name = spec.name_or_path if spec.adapter is None else f"{spec.name_or_path}+{spec.adapter}"
        self.spec = spec
        self.tokenizer = load_tokenizer(spec)
        self.model = load_model(spec)
        self.batch_size, self.token_budget = batch_size, token_budget
        self.max_length = context_limit(self.model.config, max_length)
        self.progress = progress
        self.bos_id = (
            self.tokenizer.bos_token_id if self.tokenizer.bos_token_id is not None else self.tokenizer.eos_token_id
        )
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
        probe = torch.tensor(
            [[self.bos_id, *self.encode("def f(x):\n    return x + 1\n")[:15]]], device=self.model.device
        )
        expected = self.model(input_ids=probe).logits.float()
        try:  # a decoder that does not take input_ids or return last_hidden_state
            actual = head(decoder(input_ids=probe, use_cache=False).last_hidden_state).float()
        except (AttributeError, TypeError, ValueError):
            return None
        if actual.shape != expected.shape or not torch.allclose(actual, expected, rtol=1e-4, atol=1e-4):
            return None
        return decoder, head

    def _projected_stats(
        self, hidden: torch.Tensor, targets: torch.Tensor, moments: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``distribution_stats`` of the logits ``head(hidden)``, one cache-sized
        chunk of rows at a time; rows where ``moments`` is False get their
        log-probability only (one log-sum-exp, no pass for mu and sigma; NaN there)."""
        _, head = self._split_head
        chunk = self._stats_chunk(head.weight.shape[0])
        token_lp = torch.empty(len(hidden), dtype=torch.float32, device=hidden.device)
        mu, sigma = torch.full_like(token_lp, float("nan")), torch.full_like(token_lp, float("nan"))
        full, plain = moments.nonzero().squeeze(-1), (~moments).nonzero().squeeze(-1)
        # Under device_map="auto" the projection may sit on another device than the decoder's
        # output: its targets go there and its statistics come back (no copy on one device).
        for i in range(0, len(full), chunk):
            rows = full[i : i + chunk]
            logits = head(hidden[rows])
            stats = distribution_stats(logits, targets[rows].to(logits.device))
            token_lp[rows], mu[rows], sigma[rows] = (t.to(token_lp.device) for t in stats)
        for i in range(0, len(plain), chunk):
            rows = plain[i : i + chunk]
            logits = head(hidden[rows]).float()
            lp = logits.gather(-1, targets[rows].to(logits.device).unsqueeze(-1)).squeeze(-1) - torch.logsumexp(
                logits, dim=-1
            )
            token_lp[rows] = lp.to(token_lp.device)
        return token_lp, mu, sigma

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def _right_padded(self, rows: Sequence[Sequence[int]]) -> torch.Tensor:
        input_ids = torch.full((len(rows), max(len(r) for r in rows)), self.pad_id, dtype=torch.long)
        for row, ids in enumerate(rows):
            input_ids[row, : len(ids)] = torch.as_tensor(ids, dtype=torch.long)
        return input_ids

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
        ids = [e[:limit] for e in encoded]
        scored = self._score_sequences([[self.bos_id, *e] for e in ids], [1] * len(ids), wants, f"scoring {self.name}")
        return [
            TokenStats(
                token_ids=np.asarray(e, dtype=np.int32),
                logprobs=lp,
                mu=m if want else None,
                sigma=s if want else None,
                truncated=len(full) > limit,
            )
            for e, full, want, (lp, m, s) in zip(ids, encoded, wants, scored, strict=True)
        ]

    @torch.inference_mode()
    def score_conditioned(
        self, shots: Sequence[str], texts: Sequence[str], *, max_prefix_tokens: int | None = None
    ) -> list[TokenStats]:
        """Log-probabilities of each text's tokens conditioned on a prefix made of ``shots``.

        Each sequence is BOS + prefix tokens + text tokens, with no second BOS
        where they meet; only the text tokens are scored, the first one
        conditioned on the last prefix token. Each shot and each text is
        tokenised on its own, so a text's token ids equal those of
        :meth:`score`, and a text is cut to the context exactly as there:
        never shortened for the prefix. The prefix fits the room the text
        leaves in the context (and ``max_prefix_tokens``): shots are dropped
        from the front and the first one kept is cut from its front
        (``fit_prefix``); ``prefix_shots`` and ``prefix_tokens`` record what
        each text got. Every sequence runs whole through the same batched
        pass as :meth:`score` (no prefix cache shared between sequences: a
        separate batch-of-one prefix pass gave other bits from run to run)."""
        shot_ids = [self.encode(s) for s in shots]
        full_prefix = [t for s in shot_ids for t in s]
        cap = len(full_prefix) if max_prefix_tokens is None else min(len(full_prefix), max_prefix_tokens)
        encoded = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []
        if any(len(e) == 0 for e in encoded):
            raise ValueError("cannot score an empty text")
        limit = self.max_length - 1  # room for BOS
        ids = [e[:limit] for e in encoded]
        prefixes = [fit_prefix(shot_ids, min(cap, limit - len(e))) for e in ids]
        scored = self._score_sequences(
            [[self.bos_id, *p, *e] for (p, _), e in zip(prefixes, ids, strict=True)],
            [1 + len(p) for p, _ in prefixes],
            [False] * len(ids),
            f"scoring {self.name} after a prefix",
        )
        return [
            TokenStats(
                token_ids=np.asarray(e, dtype=np.int32),
                logprobs=lp,
                mu=None,
                sigma=None,
                truncated=len(full) > limit,
                prefix_shots=n_shots,
                prefix_tokens=len(p),
            )
            for e, full, (p, n_shots), (lp, _, _) in zip(ids, encoded, prefixes, scored, strict=True)
        ]

    def _forward_stats(
        self, input_ids: torch.Tensor, predicts: torch.Tensor, rows_want: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(log p, mu, sigma) of the tokens that the positions ``predicts``
        marks predict, in one right-padded batch: the model's forward pass
        (no key-value cache kept: nothing is generated after it)."""
        targets = input_ids[:, 1:][predicts]
        if self._split_head:
            hidden = self._split_head[0](input_ids=input_ids, use_cache=False).last_hidden_state
            return self._projected_stats(
                hidden[:, :-1][predicts], targets, rows_want.unsqueeze(1).expand_as(predicts)[predicts]
            )
        return distribution_stats(self.model(input_ids=input_ids, use_cache=False).logits[:, :-1][predicts], targets)

    def _score_sequences(
        self, sequences: Sequence[list[int]], starts: Sequence[int], wants: Sequence[bool], desc: str
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(logprobs, mu, sigma) of the tokens ``sequences[i][starts[i]:]``,
        each predicted from the position before it, in batches of similar
        length (``models.batching``), returned in input order; rows where
        ``wants`` is False get NaN for mu and sigma."""
        results: list = [None] * len(sequences)
        device = self.model.device

        def run(batch: list[int]) -> None:
            input_ids = self._right_padded([sequences[i] for i in batch]).to(device)
            # Right padding under causal attention: no scored position attends to a later
            # padding position, so no attention mask is needed (the outputs at padding
            # positions are garbage and dropped below), and the fused causal kernel runs.
            # Position t predicts token t+1: keep the positions that predict a scored token.
            predicts = torch.zeros((len(batch), input_ids.shape[1] - 1), dtype=torch.bool)
            for row, i in enumerate(batch):
                predicts[row, starts[i] - 1 : len(sequences[i]) - 1] = True
            stats = self._forward_stats(
                input_ids, predicts.to(device), torch.tensor([wants[i] for i in batch], device=device)
            )
            lengths = [len(sequences[i]) - starts[i] for i in batch]
            for i, row in zip(batch, zip(*(self._split_rows(t, lengths) for t in stats), strict=True), strict=True):
                results[i] = row

        with tqdm(total=len(sequences), desc=desc, unit="text", disable=not self.progress, mininterval=5) as bar:
            run_batches(
                [len(s) for s in sequences],
                run,
                max_rows=self.batch_size,
                token_budget=self.token_budget,
                progress=bar.update,
            )
        return results

    @torch.inference_mode()
    def _continuations(
        self,
        ids: Sequence[list[int]],
        *,
        max_new_tokens: int,
        stops: Sequence[StopCondition] | None,
        sampling: Sampling | None = None,
    ) -> list[list[int]]:
        """New token ids after full token sequences (special tokens included),
        greedy unless ``sampling`` samples."""
        outputs: list[list[int] | None] = [None] * len(ids)
        decoding = (
            {"do_sample": False}
            if sampling is None or sampling.greedy
            else {"do_sample": True, "temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": 0}
        )  # 0: no top-k cut

        def run(batch: list[int]) -> None:
            width = max(len(ids[i]) for i in batch)
            input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):  # left padding: continuations start at one column
                input_ids[row, width - len(ids[i]) :] = torch.tensor(ids[i])
                mask[row, width - len(ids[i]) :] = 1
            criteria = (
                StoppingCriteriaList([_StopWhen(self.decode, width, [stops[i] for i in batch])]) if stops else None
            )
            generated = self.model.generate(
                input_ids=input_ids.to(self.model.device),
                attention_mask=mask.to(self.model.device),
                max_new_tokens=max_new_tokens,
                pad_token_id=self.pad_id,
                eos_token_id=self.tokenizer.eos_token_id,
                stopping_criteria=criteria,
                **decoding,
            )
            for row, i in enumerate(batch):
                outputs[i] = generated[row, width:].tolist()

        # a row's width in the budget: its prompt and every token it may generate
        with tqdm(
            total=len(ids), desc=f"generating {self.name}", unit="text", disable=not self.progress, mininterval=5
        ) as bar:
            run_batches(
                [len(x) + max_new_tokens for x in ids],
                run,
                max_rows=self.batch_size,
                token_budget=self.token_budget,
                progress=bar.update,
            )
        return outputs  # type: ignore[return-value]

    def _greedy(
        self, ids: Sequence[list[int]], *, max_new_tokens: int, stops: Sequence[StopCondition] | None
    ) -> list[str]:
        """Greedy continuations of full token sequences (special tokens included)."""
        return [self.decode(x) for x in self._continuations(ids, max_new_tokens=max_new_tokens, stops=stops)]

    def generate(
        self, prompts: Sequence[list[int]], *, max_new_tokens: int, stops: Sequence[StopCondition] | None = None
    ) -> list[str]:
        return self._greedy([[self.bos_id, *p] for p in prompts], max_new_tokens=max_new_tokens, stops=stops)

    def sample(
        self,
        prompts: Sequence[list[int]],
        *,
        max_new_tokens: int,
        temperature: float,
        seed: int,
        stops: Sequence[StopCondition] | None = None,
    ) -> list[str]:
        """Sampled continuations at ``temperature`` (no top-k or top-p cut), the
        batch drawn from torch's generator seeded with ``seed``."""
        torch.manual_seed(seed)
        sampling = Sampling(max_new_tokens=max_new_tokens, temperature=temperature, seed=seed)
        ids = [[self.bos_id, *p] for p in prompts]
        return [
            self.decode(x)
            for x in self._continuations(ids, max_new_tokens=max_new_tokens, stops=stops, sampling=sampling)
        ]

    def chat(self, messages: list[dict], *, max_new_tokens: int) -> str:
        """Greedy reply to a chat, formatted by the tokenizer's chat template
        (with the generation prompt); the template supplies any BOS itself."""
        return self._greedy([self.chat_template_ids(messages)], max_new_tokens=max_new_tokens, stops=None)[0]

    # --- the LLM-call interface (models.backend.TextModel) ---

    def _answer(self, ids: Sequence[list[int]], sampling: Sampling) -> list[Completion]:
        """Completions of full token sequences: greedy ones batched; sampled
        ones one at a time, torch seeded with ``sampling.seed`` (0 if None)
        before each, so an answer never depends on its batch."""

        def hit(text: str) -> bool:
            return cut_at_stop(text, sampling.stop)[1]

        stops = [hit] * len(ids) if sampling.stop else None
        if sampling.greedy:
            rows = self._continuations(ids, max_new_tokens=sampling.max_new_tokens, stops=stops)
        else:
            rows = []
            for one in ids:
                torch.manual_seed(0 if sampling.seed is None else sampling.seed)
                rows += self._continuations(
                    [one], max_new_tokens=sampling.max_new_tokens, stops=stops and stops[:1], sampling=sampling
                )
        out = []
        for row in rows:
            text, stopped = cut_at_stop(self.decode(row), sampling.stop)
            ended = stopped or self.tokenizer.eos_token_id in row
            out.append(Completion(text, "stop" if ended else "length"))
        return out

    def complete(self, prompts: Sequence[str], sampling: Sampling) -> list[Completion]:
        """Continuations of text prompts, each after BOS, as ``generate``."""
        return self._answer([[self.bos_id, *self.encode(p)] for p in prompts], sampling)

    def chat_template_ids(self, messages: Sequence[Message]) -> list[int]:
        """The prompt of a conversation: the chat template with the
        generation prompt (the template supplies any BOS itself)."""
        if not getattr(self.tokenizer, "chat_template", None):
            raise ValueError(f"{self.name}: the tokenizer has no chat template, so it cannot be used as a chat model")
        prompt = self.tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        return self.tokenizer(prompt, add_special_tokens=False)["input_ids"]

    def chat_many(self, conversations: Sequence[Sequence[Message]], sampling: Sampling) -> list[Completion]:
        return self._answer([self.chat_template_ids(c) for c in conversations], sampling)

    @torch.inference_mode()
    def sequence_logprobs(self, ids: Sequence[int]) -> np.ndarray:
        """log p of each of ``ids`` after BOS and the ids before it (a server's
        echo of a prompt and its completion, each tokenised on its own)."""
        [(logprobs, _, _)] = self._score_sequences([[self.bos_id, *ids]], [1], [False], f"scoring {self.name}")
        return logprobs

    def prompt_logprobs(self, texts: Sequence[str]) -> list[PromptLogprobs]:
        """Every token's log-probability from ``score`` (the first after BOS;
        cut to the context as there)."""
        stats = self.score(texts, moments=[False] * len(texts))
        return [
            PromptLogprobs(tuple(self.decode([t]) for t in s.token_ids.tolist()), tuple(map(float, s.logprobs)))
            for s in stats
        ]
