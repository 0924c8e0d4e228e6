"""The learned verifier: a small model over :mod:`~leaktrace.leakage.features`
fitted on human labels, and the rule, stated before any result was seen,
that chooses it.

**Selection rule.** Candidates (:data:`GRID`, simplest first): logistic
regression on standardised features (C 0.1, 1, 10) and scikit-learn's
gradient boosting (learning rate 0.1, no subsampling; depth 1, 2, 3 x 50,
100, 200 trees). Each is scored by grouped cross-validation on the training
pairs (:data:`INNER_FOLDS` folds of :func:`grouped_folds`: every pair of a
benchmark sample in one fold): its out-of-fold probabilities, cut at each
threshold of :data:`THRESHOLDS`, give an MCC; the threshold with the highest
MCC is the setting's (ties: the one nearest 0.5). The setting with the
highest MCC wins (ties: the first in the grid), and is refitted on all
training pairs with its threshold. Every setting tried is kept in the model
file (``selection``).

**Model file.** JSON, no pickled code: the feature names, the chosen setting
and threshold, the selection table, and the fitted model as numbers (a
logistic regression's means, scales, coefficients and intercept; a boosted
model's prior log-odds, learning rate and trees as arrays of feature,
threshold, children and leaf value, written exactly as fitted).
:class:`Combiner` predicts from it without scikit-learn, as scikit-learn
does (trees compare float32 features, as scikit-learn casts them).
Training is deterministic, so the same data and seed give the same bytes
(``python -m leaktrace train-verifier``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np

from leaktrace.leakage.features import FEATURES

FORMAT = "leaktrace-verifier/1"
GRID: tuple[tuple[str, dict], ...] = (
    *(("logistic_regression", {"C": c}) for c in (0.1, 1.0, 10.0)),
    *(("gradient_boosting", {"max_depth": d, "n_estimators": n}) for d in (1, 2, 3) for n in (50, 100, 200)),
)
THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(1, 20))
INNER_FOLDS = 4
SHIPPED = Path(__file__).resolve().parents[3] / "resources" / "verify" / "verifier.json"


class Combiner:
    """A model file, ready to score pairs' features. A boosted model's trees
    are walked all at once, level by level (arrays of pairs x trees): a few
    array operations for a whole batch of pairs, whatever the number of trees."""

    def __init__(self, spec: dict, source: str = "<model>"):
        if spec.get("format") != FORMAT:
            raise ValueError(
                f"{source}: not a verifier model file (format {spec.get('format')!r}, expected {FORMAT!r})"
            )
        if tuple(spec["features"]) != FEATURES:
            raise ValueError(f"{source}: features {spec['features']} differ from this version's {list(FEATURES)}")
        self.spec = spec
        self.family = spec["family"]
        self.threshold = float(spec["threshold"])
        model = spec["model"]
        if self.family == "logistic_regression":
            self._mean, self._scale = np.array(model["mean"]), np.array(model["scale"])
            self._coef, self._intercept = np.array(model["coef"]), float(model["intercept"])
            return
        trees = model["trees"]
        width = max(len(t["left"]) for t in trees)

        def padded(key, dtype, fill):
            out = np.full((len(trees), width), fill, dtype=dtype)
            for i, t in enumerate(trees):
                out[i, : len(t[key])] = t[key]
            return out

        self._left, self._right = padded("left", np.int64, -1), padded("right", np.int64, -1)
        self._feature, self._split = padded("feature", np.int64, 0), padded("threshold", np.float64, 0.0)
        self._value = padded("value", np.float64, 0.0)
        self._rows = np.arange(len(trees))
        self._init, self._rate = float(model["init"]), float(model["learning_rate"])
        self._depth = max(_depth(t["left"], t["right"]) for t in trees)

    def probabilities(self, X) -> np.ndarray:
        """The probability of a duplicate of each row of features (one array pass for all rows)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if self.family == "logistic_regression":
            raw = ((X - self._mean) / self._scale) @ self._coef + self._intercept
        else:
            x32 = X.astype(np.float32).astype(np.float64)  # scikit-learn's trees read float32 features
            trees, rows = self._rows[None, :], np.arange(len(X))[:, None]
            node = np.zeros((len(X), len(self._rows)), dtype=np.int64)
            for _ in range(self._depth):
                left = self._left[trees, node]
                go_left = x32[rows, self._feature[trees, node]] <= self._split[trees, node]
                node = np.where(left < 0, node, np.where(go_left, left, self._right[trees, node]))
            raw = self._init + self._rate * self._value[trees, node].sum(axis=1)
        return 1.0 / (1.0 + np.exp(-raw))

    def probability(self, x: list[float]) -> float:
        return float(self.probabilities([x])[0])

    def duplicate(self, x: list[float]) -> bool:
        return self.probability(x) >= self.threshold


def _depth(left: list[int], right: list[int], node: int = 0) -> int:
    if left[node] < 0:
        return 0
    return 1 + max(_depth(left, right, left[node]), _depth(left, right, right[node]))


@cache
def load(path: str | Path | None = None) -> Combiner:
    """The model file at ``path`` (None or ``"shipped"``: the one shipped in resources/verify)."""
    path = SHIPPED if path in (None, "shipped") else Path(path)
    try:
        spec = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"verifier model {path}: {err}") from None
    return Combiner(spec, str(path))


# --- training (scikit-learn, imported only here) ------------------------------


def grouped_folds(y: np.ndarray, groups: np.ndarray, n_splits: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) index arrays of a stratified cross-validation in which
    every group (benchmark sample) is in exactly one test fold."""
    from sklearn.model_selection import StratifiedGroupKFold

    splitter = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed % 2**32)
    return list(splitter.split(np.zeros(len(y)), y, groups))


def estimator(family: str, setting: dict, seed: int):
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if family == "logistic_regression":
        return make_pipeline(StandardScaler(), LogisticRegression(C=setting["C"], max_iter=1000))
    return GradientBoostingClassifier(learning_rate=0.1, subsample=1.0, random_state=seed % 2**32, **setting)


def mcc(y: np.ndarray, pred: np.ndarray) -> float:
    from sklearn.metrics import matthews_corrcoef

    return float(matthews_corrcoef(y, pred))


def best_threshold(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    """(threshold, MCC): the threshold of :data:`THRESHOLDS` with the highest MCC (ties: nearest 0.5)."""
    scored = [(mcc(y, p >= t), -abs(t - 0.5), t) for t in THRESHOLDS]
    score, _, t = max(scored)
    return t, score


def out_of_fold(X: np.ndarray, y: np.ndarray, folds: list, seed: int) -> list[np.ndarray]:
    """Each GRID setting's out-of-fold probabilities. A boosted model of n
    trees is the first n trees of a larger one with the same depth and seed
    (no subsampling), so each depth is fitted once a fold, at the most trees,
    and read off at every tree count (``staged_predict_proba``)."""
    out = [np.zeros(len(y)) for _ in GRID]
    for train, test in folds:
        for i, (family, setting) in enumerate(GRID):
            if family == "logistic_regression":
                out[i][test] = estimator(family, setting, seed).fit(X[train], y[train]).predict_proba(X[test])[:, 1]
        for depth in sorted({s["max_depth"] for f, s in GRID if f == "gradient_boosting"}):
            grown = {
                s["n_estimators"]: i
                for i, (f, s) in enumerate(GRID)
                if f == "gradient_boosting" and s["max_depth"] == depth
            }
            model = estimator("gradient_boosting", {"max_depth": depth, "n_estimators": max(grown)}, seed).fit(
                X[train], y[train]
            )
            for n_trees, p in enumerate(model.staged_predict_proba(X[test]), 1):
                if n_trees in grown:
                    out[grown[n_trees]][test] = p[:, 1]
    return out


def select(X: np.ndarray, y: np.ndarray, groups: np.ndarray, seed: int) -> tuple[int, float, list[dict]]:
    """(index into GRID, threshold, the table of every setting tried) by the selection rule."""
    table = []
    for (family, setting), p in zip(
        GRID, out_of_fold(X, y, grouped_folds(y, groups, INNER_FOLDS, seed), seed), strict=True
    ):
        t, score = best_threshold(y, p)
        table.append({"family": family, "setting": setting, "threshold": t, "mcc": float(score)})
    best = max(range(len(GRID)), key=lambda i: (table[i]["mcc"], -i))
    return best, table[best]["threshold"], table


def _export(family: str, fitted) -> dict:
    if family == "logistic_regression":
        scaler, lr = fitted.named_steps["standardscaler"], fitted.named_steps["logisticregression"]
        return {
            "mean": [float(x) for x in scaler.mean_],
            "scale": [float(x) for x in scaler.scale_],
            "coef": [float(x) for x in lr.coef_[0]],
            "intercept": float(lr.intercept_[0]),
        }
    prior = fitted.init_.class_prior_[1]
    trees = []
    for (est,) in fitted.estimators_:
        t = est.tree_
        leaf = t.children_left < 0
        trees.append(
            {
                "feature": [int(f) if not is_leaf else 0 for f, is_leaf in zip(t.feature, leaf, strict=True)],
                "threshold": [float(x) if not is_leaf else 0.0 for x, is_leaf in zip(t.threshold, leaf, strict=True)],
                "left": [int(x) for x in t.children_left],
                "right": [int(x) for x in t.children_right],
                "value": [float(x) for x in t.value[:, 0, 0]],
            }
        )
    return {"init": float(np.log(prior / (1 - prior))), "learning_rate": fitted.learning_rate, "trees": trees}


def fit(X: np.ndarray, y: np.ndarray, groups: np.ndarray, seed: int, provenance: dict | None = None) -> dict:
    """The model file (as a dict) chosen by the selection rule and fitted on all of ``X``."""
    best, threshold, table = select(X, y, groups, seed)
    family, setting = GRID[best]
    fitted = estimator(family, setting, seed).fit(X, y)
    return {
        "format": FORMAT,
        "features": list(FEATURES),
        "family": family,
        "setting": setting,
        "threshold": threshold,
        "seed": seed,
        "trained_on": provenance or {},
        "selection": table,
        "model": _export(family, fitted),
    }


def dumps(spec: dict) -> str:
    """The file's text: a key a line, and a line per setting tried and per tree."""

    def value(key, v):
        if key == "selection":
            return "[\n" + ",\n".join(f"  {json.dumps(r, sort_keys=True)}" for r in v) + "\n ]"
        if key == "model" and "trees" in v:
            rest = {k: x for k, x in v.items() if k != "trees"}
            return (
                "{\n"
                + "".join(f"  {json.dumps(k)}: {json.dumps(x)},\n" for k, x in sorted(rest.items()))
                + '  "trees": [\n'
                + ",\n".join(f"   {json.dumps(t, sort_keys=True)}" for t in v["trees"])
                + "\n  ]\n }"
            )
        return json.dumps(v, sort_keys=True)

    return "{\n" + ",\n".join(f" {json.dumps(k)}: {value(k, v)}" for k, v in sorted(spec.items())) + "\n}\n"
