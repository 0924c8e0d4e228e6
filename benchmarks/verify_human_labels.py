"""The learned verifier against LessLeak-Bench's human labels: grouped
cross-validated precision, recall, F1, MCC and balanced accuracy, overall,
per language and per benchmark, with the errors by label.

Data: ``resources/verify/lessleak-human-pairs-dev.jsonl.gz`` (2,695 candidate
pairs of LessLeak-Bench's MinHash step, labelled by its annotators;
duplicate = semantically equivalent or exact copy). The rest of the
released pairs is held aside and measured elsewhere; nothing here reads it.

Rule stated in advance (:mod:`leaktrace.leakage.combiner`): outer
cross-validation in ``--folds`` folds grouped by benchmark sample
(``benchmark``, ``bench_id``: every pair of a sample in one test fold,
asserted below); in each, the selection rule runs on the training folds
alone (inner grouped 4-fold cross-validation over the grid of logistic
regression and gradient boosting settings, each at its MCC-best threshold;
the best MCC wins), the winner is refitted on the training folds and
scores the test fold at its threshold; an exact or renamed copy is a
duplicate by the annotation guideline's definition, as in the verifier
(:func:`leaktrace.leakage.verify.by_definition`). The figures are those of the pooled
out-of-fold decisions (every pair decided once, by a model that never saw
its sample). Every fold's choice is printed, and the shipped model's
selection table (every setting tried on all pairs).

Beside it, on the same pairs: LessLeak's automated flag as its released
script computes it (Jaccard of the two texts' token sets >= 0.7), the
paper's wording of it (Jaccard of the 2-gram shingles >= 0.7), the rules
(``model: rules``, boilerplate removed as for the model) and "every pair a
duplicate".

    .venv/bin/python benchmarks/verify_human_labels.py [--folds 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.metrics import balanced_accuracy_score, matthews_corrcoef

from leaktrace.leakage import combiner
from leaktrace.leakage.features import vector
from leaktrace.leakage.labelled import labels_and_groups, read_labelled
from leaktrace.leakage.pairs import settings_for, verify_records
from leaktrace.leakage.tokens import shingle_set, token_set
from leaktrace.leakage.verify import Verifier, by_definition, decide
from leaktrace.seeding import derive_seed

DATA = Path(__file__).resolve().parents[1] / "resources" / "verify" / "lessleak-human-pairs-dev.jsonl.gz"
LANGUAGES = ("python", "java", "c")
LICENCE_SAMPLES = ("codereview-java", "codereview-new-java")  # one sample each: a licence header, 1,581 pairs


def metrics(y: np.ndarray, pred: np.ndarray) -> dict:
    tp, fp = int(np.sum(y & pred)), int(np.sum(~y & pred))
    fn, tn = int(np.sum(y & ~pred)), int(np.sum(~y & ~pred))
    p = tp / (tp + fp) if tp + fp else float("nan")
    r = tp / (tp + fn) if tp + fn else float("nan")
    two_classes = 0 < y.sum() < len(y)
    return {
        "n": len(y),
        "dup": int(y.sum()),
        "P": p,
        "R": r,
        "F1": 2 * p * r / (p + r) if p + r > 0 else float("nan"),
        "MCC": float(matthews_corrcoef(y, pred)) if two_classes else float("nan"),
        "BA": float(balanced_accuracy_score(y, pred)) if two_classes else float("nan"),
        "TP": tp,
        "FP": fp,
        "FN": fn,
        "TN": tn,
    }


def fmt(x: float) -> str:
    return "–" if x != x else f"{x:.3f}"


def row(name: str, m: dict) -> str:
    return (
        f"| {name} | {m['n']} | {m['dup']} | {fmt(m['P'])} | {fmt(m['R'])} | {fmt(m['F1'])} | {fmt(m['MCC'])} | "
        f"{fmt(m['BA'])} | {m['TP']} / {m['FP']} / {m['FN']} / {m['TN']} |"
    )


HEADER = (
    "| {} | n | duplicates | precision | recall | F1 | MCC | balanced accuracy | TP / FP / FN / TN |\n| --- "
    + "| --- " * 8
    + "|"
)


def cross_validate(
    X: np.ndarray, y: np.ndarray, groups: np.ndarray, copies: np.ndarray, folds: int, seed: int
) -> tuple[np.ndarray, list[dict]]:
    """Pooled out-of-fold decisions of the selection rule (exact and renamed
    copies, ``copies``, are duplicates by definition, as in the verifier),
    and each fold's choice."""
    pred = np.zeros(len(y), dtype=bool)
    choices = []
    seen: set[str] = set()
    for k, (train, test) in enumerate(combiner.grouped_folds(y, groups, folds, derive_seed(seed, "outer"))):
        test_groups = set(groups[test])
        assert not test_groups & set(groups[train]), "a benchmark sample in both the training and the test folds"
        assert not test_groups & seen, "a benchmark sample in two test folds"
        seen |= test_groups
        inner_seed = derive_seed(seed, "inner", k)
        best, threshold, table = combiner.select(X[train], y[train], groups[train], inner_seed)
        family, setting = combiner.GRID[best]
        model = combiner.estimator(family, setting, inner_seed).fit(X[train], y[train])
        pred[test] = copies[test] | (model.predict_proba(X[test])[:, 1] >= threshold)
        choices.append(
            {
                "fold": k,
                "test_pairs": len(test),
                "test_samples": len(test_groups),
                "family": family,
                "setting": setting,
                "threshold": threshold,
                "inner_mcc": table[best]["mcc"],
            }
        )
    assert seen == set(groups), "a benchmark sample in no test fold"
    return pred, choices


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    start = time.process_time()
    pairs = read_labelled(a.data)
    verdicts = verify_records(pairs, Verifier(settings_for("default", False, model="rules")))
    X = np.array([vector(v.as_row()) for v in verdicts])
    y, groups = labels_and_groups(pairs)
    y = y.astype(bool)
    lang = np.array([p["language"] for p in pairs])
    bench = np.array([p["benchmark"] for p in pairs])
    label = np.array([p["label"] for p in pairs])
    print(
        f"{len(pairs)} pairs, {len(set(groups))} benchmark samples, {int(y.sum())} duplicates; features in "
        f"{time.process_time() - start:.1f} s of CPU"
    )

    start = time.process_time()
    copies = np.array([by_definition(v) for v in verdicts])
    pred, choices = cross_validate(X, y, groups, copies, a.folds, a.seed)
    print(
        f"\nGrouped {a.folds}-fold cross-validation ({time.process_time() - start:.0f} s of CPU); each fold's choice "
        "(inner grouped 4-fold CV on its training folds):\n"
    )
    for c in choices:
        print(
            f"- fold {c['fold']}: {c['test_pairs']} pairs of {c['test_samples']} samples; {c['family']} {c['setting']}, "
            f"threshold {c['threshold']:.2f} (inner MCC {c['inner_mcc']:.3f})"
        )

    licence = np.isin(bench, LICENCE_SAMPLES)
    print("\n" + HEADER.format("cross-validated"))
    print(row("all", metrics(y, pred)))
    for language in LANGUAGES:
        print(row(language, metrics(y[lang == language], pred[lang == language])))
    print(row("all but the two licence-header samples", metrics(y[~licence], pred[~licence])))
    print(
        row(
            "java but the two licence-header samples",
            metrics(y[~licence & (lang == "java")], pred[~licence & (lang == "java")]),
        )
    )

    flag_tokens = np.array(
        [
            _jaccard(token_set(p["bench_text"], "lessleak"), token_set(p["corpus_text"], "lessleak")) >= 0.7
            for p in pairs
        ]
    )
    flag_2gram = np.array(
        [
            _jaccard(shingle_set(p["bench_text"], "lessleak", 2), shingle_set(p["corpus_text"], "lessleak", 2)) >= 0.7
            for p in pairs
        ]
    )
    rules = np.array([decide(v, settings_for("default", False, model="rules"))[1] for v in verdicts])
    print("\n" + HEADER.format("all pairs, other deciders"))
    print(row("LessLeak's flag, released script (token-set Jaccard >= 0.7)", metrics(y, flag_tokens)))
    print(row("LessLeak's flag, the paper's words (2-gram Jaccard >= 0.7)", metrics(y, flag_2gram)))
    print(row("the rules (model: rules), boilerplate removed", metrics(y, rules)))
    print(row("every pair a duplicate", metrics(y, np.ones(len(y), dtype=bool))))

    print("\n" + HEADER.format("per benchmark (cross-validated)"))
    for name in sorted(set(bench)):
        k = bench == name
        print(row(name, metrics(y[k], pred[k])))
    errors = Counter(
        (f"FP, label {lab}" if p else f"FN, label {lab}") for lab, t, p in zip(label, y, pred, strict=True) if t != p
    )
    print(
        "\nErrors by the annotators' label (0 unrelated, 1 related, 2 semantically equivalent, 3 exact copy): "
        + ", ".join(f"{k} {v}" for k, v in sorted(errors.items()))
    )

    spec = combiner.load()
    print(
        f"\nShipped model ({combiner.SHIPPED.name}): {spec.family} {spec.spec['setting']}, threshold {spec.threshold:.2f}; "
        "every setting tried on all pairs (inner grouped 4-fold CV, MCC at its best threshold):\n"
    )
    print("| family | setting | threshold | MCC |\n| --- | --- | --- | --- |")
    for r in spec.spec["selection"]:
        print(f"| {r['family']} | {r['setting']} | {r['threshold']:.2f} | {r['mcc']:.3f} |")


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


if __name__ == "__main__":
    main()
