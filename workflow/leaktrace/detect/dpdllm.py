"""DPDLLM (Zhou et al., Findings of ACL 2024), black-box: the target continues
the first half of each text (sampled, temperature 0.7); a reference language
model fine-tuned on the detection texts reads each generated continuation,
and a Gaussian naive Bayes classifier, trained on labelled texts, decides
from the continuation's features:

- mean token probability,
- mean maximum probability (of the reference model's next-token distribution),
- perplexity,
- lowercase ratio: loss of the lowercased continuation / loss of the continuation
  (the ``lowercase`` detector's ratio),
- loss / zlib bytes of the continuation (the ``zlib`` detector's ratio).

All five are taken over the continuation's tokens, each predicted by the
reference model after the prefix the target continued. Here the reference is
the base model with a LoRA adapter trained by the testbed's own training code
on every detection text (labels unused), and the classifier is fitted on the
split's calibration fold only, cross-fitted (``cross_fit``) so that no
sample is scored by a classifier that saw its label; its member probability
is the score and its prediction the decision."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.naive_bayes import GaussianNB

FEATURES = ("mean_prob", "mean_max_prob", "perplexity", "lowercase_ratio", "zlib_ratio")


@dataclass(frozen=True)
class ContinuationStats:
    """One continuation under the reference model: log p of each of its
    tokens, the maximum next-token probability at each, and the same log
    p for its lowercased form."""

    logprobs: np.ndarray
    max_probs: np.ndarray
    lowercase_logprobs: np.ndarray
    text: str


def continuation_features(stats: ContinuationStats) -> dict[str, float]:
    if len(stats.logprobs) == 0 or len(stats.lowercase_logprobs) == 0:
        raise ValueError("an empty continuation has no DPDLLM features")
    loss = -float(np.mean(stats.logprobs, dtype=np.float64))
    lower_loss = -float(np.mean(stats.lowercase_logprobs, dtype=np.float64))
    return {
        "mean_prob": float(np.mean(np.exp(stats.logprobs.astype(np.float64)))),
        "mean_max_prob": float(np.mean(stats.max_probs, dtype=np.float64)),
        "perplexity": float(np.exp(loss)),
        "lowercase_ratio": lower_loss / loss if loss > 0 else 1.0,
        "zlib_ratio": loss / len(zlib.compress(stats.text.encode("utf-8"))),
    }


def feature_matrix(rows: Sequence[dict]) -> np.ndarray:
    return np.array([[row[name] for name in FEATURES] for row in rows], dtype=np.float64).reshape(
        len(rows), len(FEATURES)
    )


def fit_classifier(features: np.ndarray, labels: np.ndarray) -> GaussianNB:
    """GaussianNB on labelled features (1 = member); both classes needed."""
    labels = np.asarray(labels).astype(int)
    if np.unique(labels).size < 2:
        raise ValueError(
            f"DPDLLM's classifier needs members and non-members to train on, got {labels.size} of one class"
        )
    return GaussianNB().fit(features, labels)


def classify(model: GaussianNB, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(member probability, member decision) of each row."""
    member = list(model.classes_).index(1)
    return model.predict_proba(features)[:, member], model.predict(features) == 1


class DpdllmFitter:
    """``fit_many`` of ``cross_fit``: one classifier per task, each scoring
    every row of ``features``; the fitted classifiers are kept (``classifiers``)."""

    def __init__(self, features: np.ndarray):
        self.features = features
        self.classifiers: list[GaussianNB] = []

    def __call__(self, tasks: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        self.classifiers = [fit_classifier(self.features[train], labels) for train, labels in tasks]
        outputs = [classify(c, self.features) for c in self.classifiers]
        n = len(self.features)
        return (
            np.array([s for s, _ in outputs], dtype=np.float64).reshape(len(tasks), n),
            np.array([d for _, d in outputs], dtype=bool).reshape(len(tasks), n),
        )
