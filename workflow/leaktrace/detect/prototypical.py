"""A prototypical network (Snell et al., 2017) for two classes, as VeilProbe
uses it to classify membership from few labelled texts: an MLP embeds the
features into a small bottleneck; training runs episodes, each drawing a
support and a query set per class, with the loss the softmax over negative
squared distances of each query to the class means of the support
(prototypes), plus VeilProbe's information-bottleneck penalty
beta * sum log(1 + var(z)). After training, each class's prototype is the
mean embedding of all its labelled samples, and a sample's member score is
the softmax over negative Euclidean distances to the two prototypes.

Defaults are VeilProbe's public code: hidden 64, bottleneck 16, Adam at
3e-4 with weight decay 1e-5, 5 support and 5 query samples per class,
beta 1e-3. Episodes shrink when a class has fewer than 10 labelled samples
(at least 1 support and 1 query).

Many networks train at once (``fit_many``): cross-fitting fits one per fold,
and the calibration checks refit them for every re-drawn split. Their
weights are stacked and the loss is the sum of theirs, so each network's
gradient is its own and Adam, which acts element by element, updates each
as if it trained alone; its initialisation and its episodes come from its
own seed, so a network ends as it would alone, whatever trains beside it.
A network that sees only some feature columns (VeilProbe's t-test mask)
multiplies only those in its first layer: the outputs and gradients of
zeroed features, at the cost of the columns it sees."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

CHUNK = 256  # networks trained together: bounds the memory of embedding every sample under each


@dataclass(frozen=True)
class ProtoSettings:
    hidden: int = 64
    bottleneck: int = 16
    epochs: int = 50
    episodes: int = 10  # episodes per epoch
    shots: int = 5  # support and query samples per class and episode
    learning_rate: float = 3e-4
    weight_decay: float = 1e-5
    beta: float = 1e-3
    seed: int = 0


@dataclass(frozen=True)
class ProtoTask:
    """One network to train: on ``features[train]`` with ``labels`` (True =
    member), seeing the columns of ``mask`` only (None: all), initialised from ``seed``."""

    train: np.ndarray
    labels: np.ndarray
    seed: int
    mask: np.ndarray | None = None


class _Embedding(nn.Module):
    def __init__(self, dim: int, hidden: int, bottleneck: int):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, bottleneck)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


@dataclass(frozen=True)
class Fitted:
    """The trained networks' outputs on every sample, and their states."""

    scores: np.ndarray  # (networks, samples): member probability
    decisions: np.ndarray  # (networks, samples): nearer the member prototype
    states: list[dict[str, torch.Tensor]]  # an _Embedding's state_dict plus "prototypes" (non-member, member)


def _class_indices(task: ProtoTask) -> list[np.ndarray]:
    labels = np.asarray(task.labels).astype(bool)
    train = np.asarray(task.train)
    if labels.shape != train.shape:
        raise ValueError(f"{train.size} training samples, {labels.size} labels")
    by_class = [train[~labels], train[labels]]
    if min(len(c) for c in by_class) < 2:
        raise ValueError(
            f"a prototypical network needs at least 2 labelled samples per class, got {[len(c) for c in by_class]}"
        )
    return by_class


def _columns(tasks: Sequence[ProtoTask], dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(the columns every task sees, each task's other columns (N, m) padded
    with ``dim``, the index of an all-zero column): a network's first layer
    multiplies only the columns it sees, which for VeilProbe is h(s) and the
    few difference dimensions its t-test keeps."""
    masks = np.stack([np.ones(dim, bool) if t.mask is None else np.asarray(t.mask, bool) for t in tasks])
    if masks.shape[1] != dim:
        raise ValueError(f"a mask of {masks.shape[1]} columns for features of {dim}")
    shared = np.flatnonzero(masks.all(axis=0))
    own = [np.flatnonzero(m & ~masks.all(axis=0)) for m in masks]
    padded = np.full((len(tasks), max(1, max(len(o) for o in own))), dim, dtype=np.int64)
    for i, o in enumerate(own):
        padded[i, : len(o)] = o
    return shared, padded


def _stacked(
    tasks: Sequence[ProtoTask], dim: int, shared: np.ndarray, own: np.ndarray, settings: ProtoSettings
) -> list[torch.Tensor]:
    """Each network's initial weights as _Embedding(seed) has them, stacked:
    per linear layer (N, in, out) and (N, 1, out), the first layer's rows of
    the shared columns and of the task's own (zero rows for the padding)."""
    layers: list[list[torch.Tensor]] = [[] for _ in range(7)]
    for task, columns in zip(tasks, own, strict=True):
        torch.manual_seed(task.seed)
        linear = [m for m in _Embedding(dim, settings.hidden, settings.bottleneck).layers if isinstance(m, nn.Linear)]
        first = torch.cat([linear[0].weight.detach().T, torch.zeros(1, settings.hidden)])  # the padding column's row: 0
        layers[0].append(first[torch.as_tensor(shared)])
        layers[1].append(first[torch.as_tensor(columns)])
        layers[2].append(linear[0].bias.detach()[None])
        for k, m in enumerate(linear[1:], start=1):
            layers[1 + 2 * k].append(m.weight.detach().T)
            layers[2 + 2 * k].append(m.bias.detach()[None])
    return [torch.stack(p).clone().requires_grad_(True) for p in layers]


def _embed(params: list[torch.Tensor], shared: torch.Tensor, own: torch.Tensor) -> torch.Tensor:
    """The embeddings of inputs given as (N, rows, shared columns) and (N, rows, own columns)."""
    w_shared, w_own, b1, w2, b2, w3, b3 = params
    h = torch.relu(torch.baddbmm(torch.baddbmm(b1, shared, w_shared), own, w_own))
    h = torch.relu(torch.baddbmm(b2, h, w2))
    return torch.baddbmm(b3, h, w3)


def _fit_chunk(features: torch.Tensor, tasks: Sequence[ProtoTask], shots: int, settings: ProtoSettings) -> Fitted:
    n, dim = features.shape
    classes = [_class_indices(t) for t in tasks]
    width = max(len(c) for pair in classes for c in pair)
    padded = np.zeros((len(tasks), 2, width), dtype=np.int64)
    for i, pair in enumerate(classes):
        for c, rows in enumerate(pair):
            padded[i, c, : len(rows)] = rows
    shared, own = _columns(tasks, dim)
    x_shared = features[:, torch.as_tensor(shared)]
    x_all = torch.cat([features, torch.zeros(n, 1)], dim=1)
    own_t = torch.as_tensor(own)
    params = _stacked(tasks, dim, shared, own, settings)
    # fused: one kernel per step for every network's update, six times faster than the loop over tensors on a CPU
    optimizer = torch.optim.Adam(params, lr=settings.learning_rate, weight_decay=settings.weight_decay, fused=True)
    steps = settings.epochs * settings.episodes
    # each network's episodes from its own seed: a random order of each class per step, padding last
    keys = np.full((len(tasks), steps, 2, width), np.inf)
    for i, (task, pair) in enumerate(zip(tasks, classes, strict=True)):
        rng = np.random.default_rng(task.seed)
        for c, rows in enumerate(pair):
            keys[i, :, c, : len(rows)] = rng.random((steps, len(rows)))
    order = np.argsort(keys, axis=-1)[..., : 2 * shots]  # (N, steps, 2, 2 shots)
    targets = torch.arange(2).repeat_interleave(shots).repeat(len(tasks))
    for step in range(steps):
        picks = torch.as_tensor(
            np.take_along_axis(padded, order[:, step], axis=-1).reshape(len(tasks), -1)
        )  # (N, 4 shots)
        z = _embed(params, x_shared[picks], x_all[picks[:, :, None], own_t[:, None, :]]).view(
            len(tasks), 2, 2 * shots, -1
        )
        prototypes = z[:, :, :shots].mean(dim=2)
        queries = z[:, :, shots:].reshape(len(tasks), 2 * shots, -1)
        distances = torch.cdist(queries, prototypes) ** 2
        loss = F.cross_entropy(-distances.reshape(-1, 2), targets, reduction="none").view(len(tasks), -1).mean(
            dim=1
        ) + settings.beta * torch.log1p(queries.var(dim=1)).sum(dim=-1)
        optimizer.zero_grad()
        loss.sum().backward()
        optimizer.step()
    with torch.no_grad():
        z = _embed(params, x_shared.expand(len(tasks), n, len(shared)), x_all[:, own_t].permute(1, 0, 2))
        prototypes = torch.stack(
            [torch.stack([z[i, torch.as_tensor(c)].mean(dim=0) for c in pair]) for i, pair in enumerate(classes)]
        )
        distances = torch.cdist(z, prototypes)
        scores = F.softmax(-distances, dim=-1)[..., 1].numpy().astype(np.float64)
        decisions = (distances[..., 1] < distances[..., 0]).numpy()
        first = torch.zeros(len(tasks), dim + 1, settings.hidden)  # a masked column's row: 0
        first[:, torch.as_tensor(shared)] = params[0].detach()
        first.scatter_(1, own_t[:, :, None].expand(-1, -1, settings.hidden), params[1].detach())
    weights = [first[:, :dim], params[2], *params[3:]]
    names = ["layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias", "layers.4.weight", "layers.4.bias"]
    states = [
        {
            **{
                name: (p[i].T if name.endswith("weight") else p[i, 0]).detach().clone().contiguous()
                for name, p in zip(names, weights, strict=True)
            },
            "prototypes": prototypes[i],
        }
        for i in range(len(tasks))
    ]
    return Fitted(scores, decisions, states)


def fit_many(features: np.ndarray, tasks: Sequence[ProtoTask], settings: ProtoSettings) -> Fitted:
    """Train one network per task on the shared ``features`` (samples ×
    dimensions) and score every sample under each. Networks whose classes
    allow the same episode size train together, ``CHUNK`` at a time."""
    x = torch.as_tensor(np.asarray(features), dtype=torch.float32)
    shots = [min(settings.shots, *(len(c) // 2 for c in _class_indices(t))) for t in tasks]
    scores = np.zeros((len(tasks), x.shape[0]))
    decisions = np.zeros((len(tasks), x.shape[0]), dtype=bool)
    states: list[dict | None] = [None] * len(tasks)
    for size in sorted(set(shots)):
        group = [i for i, s in enumerate(shots) if s == size]
        for start in range(0, len(group), CHUNK):
            chunk = group[start : start + CHUNK]
            fitted = _fit_chunk(x, [tasks[i] for i in chunk], size, settings)
            scores[chunk], decisions[chunk] = fitted.scores, fitted.decisions
            for i, state in zip(chunk, fitted.states, strict=True):
                states[i] = state
    return Fitted(scores, decisions, states)


def fit_prototypical(features: np.ndarray, labels: np.ndarray, settings: ProtoSettings) -> Fitted:
    """One network on every row of ``features``."""
    return fit_many(
        features, [ProtoTask(np.arange(len(features)), np.asarray(labels).astype(bool), settings.seed)], settings
    )
