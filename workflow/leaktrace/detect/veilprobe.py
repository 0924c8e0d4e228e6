"""VeilProbe (Hu et al., 2025, "Automated Detection of Pre-training Text in
Black-box LLMs"), black-box:

1. Text-to-suffix pairs: the target continues each text s, giving s_out
   (here the prefix and greedy continuation of SrDetection black-box's pass
   are reused: one continuation per text, never generated twice).
2. Key-token perturbation: a small open proxy model scores how much each
   token of s matters for what follows, and the top ``key_fraction`` of
   the word-like tokens are replaced by one of the proxy's ``candidates``
   most likely other words at that position (VeilProbe: GPT-2 proxies with
   an optimal-transport attribution, a masked LM's top-5 replacements).
   Here the proxy is the base model, the attribution gradient × input of
   log p(true suffix | s), and a replacement keeps the original's leading
   space; the choice among candidates is seeded.
3. A mapping model (``mapping_model``) trained on <s, s_out> gives hidden
   states h(s) and h(r) of the text and its perturbed form r.
4. Features h(s) ⊕ |h(r) - h(s)|, where the dimensions of the difference
   whose Welch t-test between the labelled members and non-members has
   p >= ``p_value`` are zeroed; a prototypical network
   (``prototypical``) trained on the labelled samples classifies.

As in VeilProbe's public code, one mapping model (trained on the original
pairs) reads both s and r; the t-test and the classifier see the
calibration fold's labels only, cross-fitted (``cross_fit``) so that no
sample is scored by a t-test and network that saw its label."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import torch
from scipy.stats import ttest_ind

from leaktrace.detect.prototypical import ProtoSettings, ProtoTask, fit_many
from leaktrace.seeding import derive_seed

WORD = re.compile(r"\s?[A-Za-z_][A-Za-z0-9_]*")


def is_word(piece: str) -> bool:
    return WORD.fullmatch(piece) is not None


def key_token_scores(
    model, bos_id: int, pad_id: int, pairs: Sequence[tuple[Sequence[int], Sequence[int]]], top: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each (prefix, suffix) of a batch, from one forward and backward pass:
    |gradient × input| per prefix token of log p(suffix | BOS, prefix) under
    ``model``, and the ids of its ``top`` most likely tokens at each prefix
    position given the tokens before it. Rows are right-padded: under causal
    attention no scored position sees the padding."""
    width = max(1 + len(p) + len(s) for p, s in pairs)
    ids = torch.full((len(pairs), width), pad_id, dtype=torch.long)
    for row, (prefix, suffix) in enumerate(pairs):
        ids[row, : 1 + len(prefix) + len(suffix)] = torch.tensor([bos_id, *prefix, *suffix])
    embeddings = model.get_input_embeddings()(ids).detach().requires_grad_(True)
    logprobs = torch.log_softmax(model(inputs_embeds=embeddings).logits[:, :-1].float(), dim=-1)
    total = logprobs.new_zeros(())
    for row, (prefix, suffix) in enumerate(pairs):
        start = 1 + len(prefix)
        total = (
            total
            + logprobs[row, start - 1 : start - 1 + len(suffix)]
            .gather(-1, ids[row, start : start + len(suffix)].unsqueeze(-1))
            .sum()
        )
    model.zero_grad(set_to_none=True)
    total.backward()
    saliency = (embeddings.grad * embeddings).sum(-1).abs().detach()
    candidates = torch.topk(logprobs.detach(), k=min(top, logprobs.shape[-1]), dim=-1).indices
    return [
        (saliency[row, 1 : 1 + len(prefix)].numpy().astype(np.float64), candidates[row, : len(prefix)].numpy())
        for row, (prefix, _) in enumerate(pairs)
    ]


def perturb_key_tokens(
    prefix: Sequence[int],
    attribution: np.ndarray,
    candidates: np.ndarray,
    decode,
    key_fraction: float,
    choice: int,
    rng: np.random.Generator,
) -> tuple[list[int], list[int]]:
    """(perturbed prefix, replaced positions): the ceil(key_fraction * n)
    word-like tokens of highest attribution, each replaced by a random one of
    the first ``choice`` word-like candidates that differ from it and keep
    its leading space; a token without such a candidate stays."""
    pieces = [decode([t]) for t in prefix]
    words = [i for i, p in enumerate(pieces) if is_word(p)]
    n_keys = min(len(words), math.ceil(key_fraction * len(prefix)))
    keys = sorted(sorted(words, key=lambda i: (-attribution[i], i))[:n_keys])
    perturbed, replaced = list(prefix), []
    for i in keys:
        spaced = pieces[i].startswith(" ")
        options = [
            int(c)
            for c in candidates[i]
            if int(c) != prefix[i] and is_word(p := decode([int(c)])) and p.startswith(" ") == spaced
        ][:choice]
        if options:
            perturbed[i] = options[int(rng.integers(len(options)))]
            replaced.append(i)
    return perturbed, replaced


def significant_dimensions(differences: np.ndarray, labels: np.ndarray, p_value: float) -> np.ndarray:
    """Mask of the dimensions whose Welch t-test between members and
    non-members has p < ``p_value`` (constant dimensions: never)."""
    labels = np.asarray(labels).astype(bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = ttest_ind(differences[labels], differences[~labels], equal_var=False, axis=0).pvalue
    return np.nan_to_num(p, nan=1.0) < p_value


class VeilprobeFitter:
    """``fit_many`` of ``cross_fit``: per task, the t-test mask on its
    labelled samples and a prototypical network on h(s) and the masked
    |h(r) - h(s)|, all networks trained as one batch; each task's mask and
    network state are kept (``masks``, ``states``) for the artifact."""

    def __init__(self, original: np.ndarray, perturbed: np.ndarray, p_value: float, settings: ProtoSettings):
        self.differences = np.abs(perturbed - original)
        self.features = np.concatenate([original, self.differences], axis=1)
        self.width = original.shape[1]
        self.p_value, self.settings = p_value, settings
        self.masks: list[np.ndarray] = []
        self.states: list[dict] = []

    def __call__(self, tasks: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        self.masks = [significant_dimensions(self.differences[train], labels, self.p_value) for train, labels in tasks]
        proto = [
            ProtoTask(
                train,
                labels,
                derive_seed(self.settings.seed, "network", i) % 2**32,
                np.concatenate([np.ones(self.width, dtype=bool), mask]),
            )
            for i, ((train, labels), mask) in enumerate(zip(tasks, self.masks, strict=True))
        ]
        fitted = fit_many(self.features, proto, self.settings)
        self.states = fitted.states
        return fitted.scores, fitted.decisions


def veilprobe_fitter(rows: Sequence[dict], params: dict, seed: int) -> VeilprobeFitter:
    """VeilProbe's t-test and networks (``params``: the family's) on its feature rows (h(s), h(r) per sample)."""
    original = np.array([r["original"] for r in rows], dtype=np.float64)
    perturbed = np.array([r["perturbed"] for r in rows], dtype=np.float64)
    proto = ProtoSettings(epochs=params["proto_epochs"], seed=derive_seed(seed, "veilprobe-protonet") % 2**32)
    return VeilprobeFitter(original, perturbed, params["p_value"], proto)
