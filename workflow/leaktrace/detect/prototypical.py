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
(at least 1 support and 1 query)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


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


class _Embedding(nn.Module):
    def __init__(self, dim: int, hidden: int, bottleneck: int):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                    nn.Linear(hidden, bottleneck))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


@dataclass
class PrototypicalNet:
    embedding: _Embedding
    prototypes: torch.Tensor  # (2, bottleneck): non-member, member

    @torch.no_grad()
    def member_scores(self, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(member probability, member decision: nearer the member prototype)."""
        z = self.embedding(torch.as_tensor(features, dtype=torch.float32))
        distances = torch.cdist(z, self.prototypes)
        return F.softmax(-distances, dim=1)[:, 1].numpy().astype(np.float64), (distances[:, 1] < distances[:, 0]).numpy()

    def state(self) -> dict[str, torch.Tensor]:
        return {**{f"embedding.{k}": v for k, v in self.embedding.state_dict().items()}, "prototypes": self.prototypes}


def fit_prototypical(features: np.ndarray, labels: np.ndarray, settings: ProtoSettings) -> PrototypicalNet:
    labels = np.asarray(labels).astype(bool)
    by_class = [np.flatnonzero(~labels), np.flatnonzero(labels)]
    if min(len(c) for c in by_class) < 2:
        raise ValueError(f"a prototypical network needs at least 2 labelled samples per class, got {[len(c) for c in by_class]}")
    shots = min(settings.shots, *(len(c) // 2 for c in by_class))
    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    x = torch.as_tensor(features, dtype=torch.float32)
    net = _Embedding(x.shape[1], settings.hidden, settings.bottleneck)
    optimizer = torch.optim.Adam(net.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay)
    net.train()
    for _ in range(settings.epochs * settings.episodes):
        picks = [rng.choice(c, 2 * shots, replace=False) for c in by_class]
        z = net(x[np.concatenate(picks)]).view(2, 2 * shots, -1)
        prototypes = z[:, :shots].mean(dim=1)
        queries = z[:, shots:].reshape(2 * shots, -1)
        distances = torch.cdist(queries, prototypes) ** 2
        targets = torch.arange(2).repeat_interleave(shots)
        loss = F.cross_entropy(-distances, targets) + settings.beta * torch.log1p(queries.var(dim=0)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    net.eval()
    with torch.no_grad():
        z = net(x)
        prototypes = torch.stack([z[torch.as_tensor(c)].mean(dim=0) for c in by_class])
    return PrototypicalNet(net, prototypes)
