"""The blind baseline: can the suspects be told from the controls by their
text alone, with no model?

A user's control set (problems released after a cutoff, problems written
for the audit) may differ from the suspects in ways unrelated to exposure:
topic, length, style, era. Every model-based test against that control set
then mixes membership with that shift (Duan et al. 2024, MIMIR; Das, Zhang
& Tramèr 2024, "Blind baselines beat membership inference attacks for
foundation models"). This classifier measures the shift.

The feature set is fixed here, before any data is seen, and never tuned:

- character 3- to 5-grams of the raw text (case kept: casing is a code
  cue), TF-IDF with sublinear term frequency, L2-normalised per text;
- six simple features, standardised over all texts: log(1 + characters),
  log(1 + lines), mean line length, the share of comment lines (first
  non-blank character ``#``), the share of whitespace characters, and
  log(1 + the number of lines that start a ``def`` or ``class``).

Both are fitted without the labels (on all texts), so they are the same
under every relabelling. A logistic regression (scikit-learn, liblinear,
C = 1; fitted on the texts' coordinates in the span of their features, the
same fit: ``span_coordinates``) is cross-fitted over stratified folds (``min(5, smaller class)``),
and the fold assignment is repeated ``repeats`` times (fold seeds seed,
seed + 1, ...): the statistic is the mean over the repeats and folds of the
AUC within each fold (each fold's texts scored by one fit), suspect =
positive. Not the AUC of the folds' scores pooled: fits differ in offset
and scale, so pooling compares scores of different fits, whereas a fold's
AUC compares texts the same fit scored, none of them in its training (over
60 random labellings of 104 HumanEval problems, 5 folds: pooled mean 0.493,
within-fold mean 0.505, both with sd 0.075; a single random split's AUC
thus strays from 0.5 by 0.15 one time in twenty, which the permutation
p-value accounts for and DeLong's interval, ignoring the fits' variability,
does not: it is narrower than the null's spread). One split's AUC
moves with its fold seed (on the shipped audit fixture, 20 texts, p went
from 0.022 to 0.059 over fold seeds 0-4, so the gate's verdict flipped);
the mean over repeated splits averages the split out of the statistic,
but on that fixture its p still spans 0.027 to 0.075 over fold seeds 0-4
(5 repeats each): a control set at the gate's edge stays there. Its
95% interval is centred on that mean with DeLong's variance (normal, from
the out-of-fold scores' placement values) averaged over the repeats (the pooled scores' placements: an approximation); it
ignores the fits' own variability and is clipped to [0, 1]. Its p-value is
a permutation test of the set labels: the whole procedure (the same fold
seeds, every repeat refitted) on relabelled data. When the
distinct labellings C(n + m, n) number at most ``permutations`` every one
is enumerated and p = #{T >= T_obs} / C(n + m, n) (the observed one
counted); otherwise ``permutations`` random labellings give
p = (1 + #{T >= T_obs}) / (R + 1) (Phipson & Smyth 2010). Under
exchangeable suspects and controls each labelling is equally likely, so
both are valid; a small p says the control set differs from the suspects."""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from scipy.sparse import csr_matrix, hstack
from scipy.stats import norm
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from leaktrace.calibration.power import POWER

PERMUTATIONS = 1000  # random labellings, when there are more distinct ones than this
REPEATS = 5  # repeated stratified cross-validation splits, their AUCs averaged
MAX_FOLDS = 5
MIN_PER_CLASS = 2  # a stratified fold needs one of each class outside it
FEATURES = (
    "char 3-5-gram TF-IDF (sublinear tf, case kept) + log chars, log lines, mean line length, "
    "comment-line share, whitespace share, log def/class lines"
)
CI_METHOD = "DeLong 95% around the mean AUC (out-of-fold scores; variance averaged over the repeats)"
_DEF = re.compile(r"^\s*(async\s+def|def|class)\s", re.MULTILINE)


@dataclass(frozen=True)
class BlindBaseline:
    auc: float  # cross-validated AUC, suspects positive
    ci_low: float  # DeLong 95%, clipped to [0, 1]
    ci_high: float
    p_value: float  # one-sided permutation p-value of the set labels
    exact: bool  # every distinct labelling enumerated
    n_labellings: int  # the labellings counted (the enumeration's size, or the random ones)
    n_suspect: int
    n_control: int
    folds: int
    repeats: int  # repeated cross-validation splits averaged
    null_mean: float  # the statistic's mean over the labellings counted (its permutation null)
    null_sd: float  # and its standard deviation: the power's spread

    def detectable_auc(self, alpha: float, power: float = POWER) -> float | None:
        """The AUC this baseline detects with ``power`` at ``alpha``, by the
        normal approximation on its own permutation null (mean + (z_{1-alpha} +
        z_power) sd): the cross-validated AUC's null spreads wider than the
        Mann-Whitney one of a single fit. None above 1."""
        found = self.null_mean + (norm.ppf(1 - alpha) + norm.ppf(power)) * self.null_sd
        return None if found > 1.0 else float(found)


def simple_features(text: str) -> list[float]:
    """The six numeric features of one text (see the module docstring)."""
    lines = text.splitlines() or [""]
    stripped = [line.lstrip() for line in lines]
    nonblank = [s for s in stripped if s]
    return [
        math.log1p(len(text)),
        math.log1p(len(lines)),
        float(np.mean([len(line) for line in lines])),
        sum(s.startswith("#") for s in nonblank) / max(len(nonblank), 1),
        sum(c.isspace() for c in text) / max(len(text), 1),
        math.log1p(len(_DEF.findall(text))),
    ]


def feature_matrix(texts: Sequence[str]) -> csr_matrix:
    """The fixed features of every text, fitted without labels."""
    tfidf = TfidfVectorizer(analyzer="char", ngram_range=(3, 5), lowercase=False, sublinear_tf=True).fit_transform(
        texts
    )
    simple = np.array([simple_features(t) for t in texts], dtype=float)
    sd = simple.std(axis=0)
    simple = (simple - simple.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    return hstack([tfidf, csr_matrix(simple)], format="csr")


def span_coordinates(x: csr_matrix) -> np.ndarray:
    """Z (N, N) with Z Z^T = X X^T: the texts' coordinates in the span of
    their own feature vectors. An L2-penalised linear fit's weights lie in the
    span of its training rows, so fitting on Z is the same fit as on X (the
    same objective at its optimum, the same scores), in N dimensions instead
    of tens of thousands: what makes a thousand refits cheap."""
    gram = (x @ x.T).toarray()
    values, vectors = np.linalg.eigh(gram)
    return vectors * np.sqrt(np.clip(values, 0.0, None))


def out_of_fold(x: np.ndarray, labels: np.ndarray, folds: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The logistic regression's decision score of every text, fitted without
    its fold, and each text's fold."""
    scores, fold_of = np.empty(labels.size), np.empty(labels.size, dtype=int)
    split = StratifiedKFold(folds, shuffle=True, random_state=seed % 2**32).split(np.zeros(labels.size), labels)
    for k, (train, test) in enumerate(split):
        fit = LogisticRegression(C=1.0, solver="liblinear").fit(x[train], labels[train])
        scores[test], fold_of[test] = fit.decision_function(x[test]), k
    return np.round(scores, 9), fold_of  # solver noise never breaks a tie


def out_of_fold_scores(x: np.ndarray, labels: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """The out-of-fold scores alone."""
    return out_of_fold(x, labels, folds, seed)[0]


def repeated_out_of_fold(
    x: np.ndarray, labels: np.ndarray, folds: int, seed: int, repeats: int
) -> tuple[np.ndarray, np.ndarray]:
    """(repeats, N) out-of-fold scores and folds, repeat r over the folds of seed + r."""
    runs = [out_of_fold(x, labels, folds, seed + r) for r in range(repeats)]
    return np.stack([s for s, _ in runs]), np.stack([f for _, f in runs])


def fold_mean_auc(
    scores: np.ndarray, fold_of: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """The mean over folds of the AUC within each fold (each fold's scores
    come from one fit), per row of ``weights`` (B, N): sample multiplicities,
    a bootstrap's; None: each sample once (a scalar). A fold without a
    weighted sample of either class is left out of the mean."""
    scores, fold_of, labels = np.asarray(scores, float), np.asarray(fold_of), np.asarray(labels, bool)
    w = np.ones((1, scores.size)) if weights is None else np.asarray(weights, float)
    per_fold = []
    for k in np.unique(fold_of):
        pos, neg = np.flatnonzero((fold_of == k) & labels), np.flatnonzero((fold_of == k) & ~labels)
        psi = _psi(scores[pos], scores[neg])
        den = w[:, pos].sum(axis=1) * w[:, neg].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_fold.append(np.einsum("bp,pn,bn->b", w[:, pos], psi, w[:, neg]) / den)
    stacked = np.stack(per_fold)
    counted = np.isfinite(stacked)
    with np.errstate(invalid="ignore"):
        out = np.where(counted, stacked, 0.0).sum(axis=0) / counted.sum(axis=0)  # nan where no fold counts
    return float(out[0]) if weights is None else out


def _psi(positive: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """psi[i, j] = 1 if positive i scores above negative j, 1/2 if tied, else 0."""
    return (positive[:, None] > negative[None, :]) + 0.5 * (positive[:, None] == negative[None, :])


def auc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """The Mann-Whitney AUC: P(positive > negative) + P(tie) / 2."""
    return float(_psi(np.asarray(positive, float), np.asarray(negative, float)).mean())


def delong_interval(
    positive: Sequence[float], negative: Sequence[float], confidence: float = 0.95
) -> tuple[float, float]:
    """DeLong et al. (1988): AUC +- z sqrt(var(V10) / n + var(V01) / m), the
    placement values V10_i = mean_j psi(x_i, y_j), V01_j = mean_i psi(x_i, y_j)
    (sample variances), clipped to [0, 1]."""
    return _interval(auc(positive, negative), delong_variance(positive, negative), confidence)


def delong_variance(positive: Sequence[float], negative: Sequence[float]) -> float:
    """DeLong's variance of the AUC: var(V10) / n + var(V01) / m."""
    positive, negative = np.asarray(positive, float), np.asarray(negative, float)
    if positive.size < 2 or negative.size < 2:
        raise ValueError(f"DeLong's interval needs at least 2 of each class, got {positive.size} and {negative.size}")
    psi = _psi(positive, negative)
    return float(psi.mean(axis=1).var(ddof=1) / positive.size + psi.mean(axis=0).var(ddof=1) / negative.size)


def _interval(centre: float, variance: float, confidence: float = 0.95) -> tuple[float, float]:
    half = norm.ppf(0.5 + confidence / 2) * math.sqrt(variance)
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


def labellings(n_total: int, n_positive: int, permutations: int, seed: int) -> tuple[list[np.ndarray], bool]:
    """Every labelling with ``n_positive`` positives when there are at most
    ``permutations`` of them (exact), else ``permutations`` seeded random ones."""
    if math.comb(n_total, n_positive) <= permutations:
        out = []
        for chosen in itertools.combinations(range(n_total), n_positive):
            y = np.zeros(n_total, dtype=bool)
            y[list(chosen)] = True
            out.append(y)
        return out, True
    rng = np.random.default_rng(seed)
    base = np.zeros(n_total, dtype=bool)
    base[:n_positive] = True
    return [rng.permutation(base) for _ in range(permutations)], False


def permutation_null(
    statistic: Callable[[np.ndarray], float], labels: Sequence[bool], permutations: int = PERMUTATIONS, seed: int = 0
) -> tuple[float, float, bool, np.ndarray]:
    """(T_obs, one-sided p, exact, the null's values) of ``statistic`` (of a
    boolean label vector) over relabellings that keep the class sizes."""
    y = np.asarray(labels, dtype=bool)
    observed = statistic(y)
    draws, exact = labellings(y.size, int(y.sum()), permutations, seed)
    values = np.array([statistic(d) for d in draws])
    at_least = int(np.sum(values >= observed - 1e-12))
    p = at_least / len(draws) if exact else (1 + at_least) / (len(draws) + 1)
    return float(observed), float(p), exact, values


def permutation_p(
    statistic: Callable[[np.ndarray], float], labels: Sequence[bool], permutations: int = PERMUTATIONS, seed: int = 0
) -> tuple[float, float, bool, int]:
    """(T_obs, one-sided p, exact, labellings counted): ``permutation_null`` without the values."""
    observed, p, exact, values = permutation_null(statistic, labels, permutations, seed)
    return observed, p, exact, int(values.size)


def blind_baseline(
    texts: Sequence[str],
    is_suspect: Sequence[bool],
    *,
    seed: int,
    permutations: int = PERMUTATIONS,
    repeats: int = REPEATS,
) -> BlindBaseline:
    """The blind baseline of ``texts`` labelled suspect (True) or control (False)."""
    return blind_scores(texts, is_suspect, seed=seed, permutations=permutations, repeats=repeats)[0]


def blind_scores(
    texts: Sequence[str],
    is_suspect: Sequence[bool],
    *,
    seed: int,
    permutations: int = PERMUTATIONS,
    repeats: int = REPEATS,
) -> tuple[BlindBaseline, np.ndarray, np.ndarray]:
    """The blind baseline, its (repeats, N) out-of-fold scores of the
    observed labelling and each score's fold, in the order of ``texts``."""
    y = np.asarray(is_suspect, dtype=bool)
    if len(texts) != y.size:
        raise ValueError(f"{len(texts)} texts but {y.size} labels")
    n, m = int(y.sum()), int((~y).sum())
    if min(n, m) < MIN_PER_CLASS:
        raise ValueError(
            f"the blind baseline needs at least {MIN_PER_CLASS} suspects and {MIN_PER_CLASS} controls, got {n} and {m}"
        )
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    x = span_coordinates(feature_matrix(list(texts)))
    folds = min(MAX_FOLDS, n, m)

    def statistic(labels: np.ndarray) -> float:
        scores, fold_of = repeated_out_of_fold(x, labels, folds, seed, repeats)
        return float(np.mean([fold_mean_auc(s, f, labels) for s, f in zip(scores, fold_of, strict=True)]))

    observed, p, exact, null = permutation_null(statistic, y, permutations, seed)
    scores, fold_of = repeated_out_of_fold(x, y, folds, seed, repeats)
    low, high = _interval(observed, float(np.mean([delong_variance(s[y], s[~y]) for s in scores])))
    return (
        BlindBaseline(
            auc=observed,
            ci_low=low,
            ci_high=high,
            p_value=p,
            exact=exact,
            n_labellings=int(null.size),
            n_suspect=n,
            n_control=m,
            folds=folds,
            repeats=repeats,
            null_mean=float(null.mean()),
            null_sd=float(null.std()),
        ),
        scores,
        fold_of,
    )


# The audit's table of blind baselines, one row per benchmark (results/<run>/audit/blind_baseline.parquet).
TABLE_SCHEMA = pa.schema(
    [
        ("benchmark", pa.string()),
        ("n_suspect", pa.int32()),
        ("n_control", pa.int32()),
        ("auc", pa.float64()),  # cross-validated, suspects positive
        ("ci_low", pa.float64()),
        ("ci_high", pa.float64()),
        ("p_value", pa.float64()),  # permutation p-value of the set labels
        ("exact", pa.bool_()),
        ("n_labellings", pa.int32()),
        ("folds", pa.int32()),
        ("repeats", pa.int32()),  # repeated cross-validation splits whose AUCs are averaged
        ("null_mean", pa.float64()),  # the statistic over the labellings counted: its permutation null
        ("null_sd", pa.float64()),
        ("alpha", pa.float64()),
        ("blind_rejected", pa.bool_()),  # p <= alpha: the sets differ; false: not refuted; null where it could not run
        ("detectable_auc", pa.float64()),  # the AUC detected with 80% power at alpha (its permutation null); null: none
        ("features", pa.string()),
        ("interval", pa.string()),
        ("note", pa.string()),
    ]
)


def table_row(
    benchmark: str,
    texts: Sequence[str],
    is_suspect: Sequence[bool],
    alpha: float,
    permutations: int,
    seed: int,
    repeats: int = REPEATS,
) -> dict:
    """The table row of one benchmark's blind baseline; not run (a note says
    why) with fewer than MIN_PER_CLASS of either set."""
    return table_row_and_scores(benchmark, texts, is_suspect, alpha, permutations, seed, repeats)[0]


def table_row_and_scores(
    benchmark: str,
    texts: Sequence[str],
    is_suspect: Sequence[bool],
    alpha: float,
    permutations: int,
    seed: int,
    repeats: int = REPEATS,
) -> tuple[dict, tuple[np.ndarray, np.ndarray] | None]:
    """``table_row`` and the (repeats, N) out-of-fold scores and their folds (None where it did not run)."""
    n = int(sum(is_suspect))
    m = len(texts) - n
    row = {
        "benchmark": benchmark,
        "n_suspect": n,
        "n_control": m,
        "alpha": alpha,
        "features": FEATURES,
        "interval": CI_METHOD,
    }
    if min(n, m) < MIN_PER_CLASS:
        return row | {"note": f"not run: needs at least {MIN_PER_CLASS} suspects and {MIN_PER_CLASS} controls"}, None
    result, scores, fold_of = blind_scores(texts, is_suspect, seed=seed, permutations=permutations, repeats=repeats)
    return row | dataclasses.asdict(result) | {
        "blind_rejected": result.p_value <= alpha,
        "detectable_auc": result.detectable_auc(alpha),
    }, (scores, fold_of)


def from_row(row: dict) -> BlindBaseline | None:
    """A table row back as a result (None where it did not run)."""
    if row.get("p_value") is None:
        return None
    return BlindBaseline(**{f.name: row[f.name] for f in dataclasses.fields(BlindBaseline)})
