"""Every detector of one scored model evaluated against the testbed's labels,
on two subsets of the split, with refitted-bootstrap intervals and a paired
comparison with SrDetection gray-box.

Subsets: ``filtered`` is SrDetection's protocol (the samples the pre-exposure
filter clears, judged before the split on the detectors' own variants under
the base model, split 1:1 among themselves); ``all`` is the whole member /
non-member split, flagged samples included where the filter only marks them
(``filter.split.pre_exposure: mark``): there no detector is scored on a
selection made with SrDetection's own statistic under the base model. With
``remove`` the two coincide. ReCaLL's prefix samples are in neither. The filtered subset is
evaluated where it keeps at least ``min_per_class`` members and as many
non-members; otherwise, or where it leaves a fold without a class, its rows
carry the method, no figures and a note that says why.

Decisions are conformal (``calibration.conformal``): a sample is flagged
where its p-value against the control set, the calibration fold's
non-members of the subset, is at most alpha; a learned detector's p-value is
cross-conformal over its cross-fit's folds. AUC and TPR at low FPR need no
decision. Beside them, a detector that records its own decision (the
scores' ``decision``: SrDetection's self-referential rule, gray-box PPL_0 <
min_i PPL_i and black-box NGO_0 > max_i NGO_i, which is how the SrDetection
paper's Tables 1-2 decide; a learned classifier's own threshold) is also
evaluated under it, on the same evaluation samples: the ``own_rule_*``
columns, with a stratified bootstrap interval of their macro F1 (no control
set: the rule needs none). Within a subset every
method is evaluated on the samples SrDetection gray-box scored (the
baseline; where it is absent, the widest method's samples), so differences
between methods are paired. A method that scored fewer of them (a variant
generator that covers only some samples, e.g. AST+tau_t) is evaluated on its
own samples beside the baseline restricted to the same ones, with its own
``n_eval``: it never shrinks the other methods' evaluation set.

Beside every method stands the blind baseline (``calibration.blind_baseline``:
a text-only classifier of members against non-members, no model), fitted on
the evaluation fold by repeated cross-validation: its AUC on the same
evaluation samples (the mean over its repeats and folds of the AUC within
each fold; a replicate weights each sample by its multiplicity) and the method's AUC minus it, both on the replicates of
the same bootstrap ("beats blind by ..."). On the testbed's random split it
should sit near 0.5; a detector that does not beat it tells members from
non-members no better than their text alone does.
"""

from __future__ import annotations

import logging
from collections import defaultdict

import numpy as np

from leaktrace.calibration.conformal import exceedances
from leaktrace.calibration.testbed_blind import blind_auc
from leaktrace.data.split import RECALL_PREFIX
from leaktrace.detect.cross_fit import row_conformal_inputs
from leaktrace.evaluate.bootstrap import Folds, bootstrap, percentile_interval, predictions, stratified_draw
from leaktrace.evaluate.metrics import decision_metrics, macro_f1, roc_auc, tpr_at_fpr
from leaktrace.seeding import derive_seed

log = logging.getLogger(__name__)

SUBSETS = ("filtered", "all")
BASELINE = "srdetection_graybox"  # the method every other one is compared with
# Ref scored against the target's own pre-fine-tuning model: a reference no
# real audit has, so its figures are a best case.
ORACLE_METHODS = frozenset({"ref_oracle"})
LOW_FPRS = {"tpr_at_1fpr": 0.01, "tpr_at_5fpr": 0.05}


def subset_samples(samples: list[dict], subset: str) -> dict[str, tuple[bool, str]]:
    """sample_id -> (is a member, fold) for the kept, non-prefix samples of
    ``subset`` (filtered: those the pre-exposure filter cleared)."""
    if subset not in SUBSETS:
        raise ValueError(f"unknown subset {subset!r}; known: {SUBSETS}")
    if samples and "pre_exposed" not in samples[0]:
        raise ValueError("the samples table has no pre_exposed column; re-run the filter stage")
    return {
        s["sample_id"]: (s["split"] == "member", s["fold"])
        for s in samples
        if s["kept"] and s["fold"] != RECALL_PREFIX and (subset == "all" or s["pre_exposed"] is False)
    }


def filtered_shortfall(samples: list[dict], min_per_class: int) -> str | None:
    """Why the filtered subset is not evaluated (None: it is): fewer than
    ``min_per_class`` members or non-members cleared by the pre-exposure filter."""
    split = [s for s in samples if s["kept"] and s["fold"] != RECALL_PREFIX]
    cleared = [s for s in split if s["pre_exposed"] is False]
    members = sum(s["split"] == "member" for s in cleared)
    if min(members, len(cleared) - members) >= min_per_class:
        return None
    flagged = sum(s["pre_exposed"] is True for s in split)
    return (
        f"not evaluated: the pre-exposure filter clears {members} members and {len(cleared) - members} non-members, "
        f"fewer than {min_per_class} per class ({flagged} of the {len(split)} samples of the split flagged pre-exposed)"
    )


def _coverage_groups(
    by_method: dict[str, dict[str, dict]], split: dict[str, tuple[bool, str]]
) -> list[tuple[list[str], set[str]]]:
    """(methods, samples) groups to evaluate: first the methods that scored
    every sample the baseline scored (on those samples), then each method
    with less coverage, paired with the baseline on its own samples."""
    coverage = {m: set(by_method[m]) & set(split) for m in by_method}
    anchor = BASELINE if BASELINE in coverage else max(coverage, key=lambda m: (len(coverage[m]), m))
    main = coverage[anchor]
    full = [m for m in by_method if coverage[m] >= main]
    groups = [(full, main)]
    for m in by_method:
        if m not in full:
            log.warning(
                "%s scored %d of the %d samples the other methods scored; it is evaluated on its own samples",
                m,
                len(coverage[m] & main),
                len(main),
            )
            groups.append(([m, anchor] if anchor != m else [m], coverage[m] & main))
    return groups


def _evaluation_ids(split: dict[str, tuple[bool, str]], samples: set[str]) -> list[str]:
    return [sid for sid in sorted(split) if sid in samples and split[sid][1] == "evaluation"]


def own_rule_row(
    method_scores: dict[str, dict], ids: list[str], labels: np.ndarray, n_resamples: int, rng: np.random.Generator
) -> dict:
    """Accuracy, macro precision / recall / F1 (SrDetection's Tables 1-2 define
    them so: "F1-Macro"), member-class F1 and FPR of the detector's own
    decisions on the evaluation samples ``ids``, with a percentile interval of
    the macro F1 from ``n_resamples`` draws within each class. Empty where the
    method records no decision for one of them (a score-only detector)."""
    decisions = [method_scores[sid]["decision"] for sid in ids]
    if not ids or any(d is None for d in decisions):
        return {}
    predicted = np.array(decisions, dtype=bool)
    metrics = decision_metrics(labels, predicted)
    index, drawn_labels = stratified_draw(labels, n_resamples, rng)
    low, high = percentile_interval(macro_f1(drawn_labels, predicted[index]))
    return {
        "own_rule_" + key: metrics[key]
        for key in ("accuracy", "macro_precision", "macro_recall", "macro_f1", "member_f1")
    } | {
        "own_rule_macro_f1_low": float(low),
        "own_rule_macro_f1_high": float(high),
        "own_rule_fpr": float(predicted[~labels.astype(bool)].mean()),
    }


def _folds(
    by_method: dict[str, dict[str, dict]],
    methods: list[str],
    split: dict[str, tuple[bool, str]],
    samples: set[str],
    alpha: float,
) -> Folds:
    """The evaluation scores of ``methods`` over the split's ``samples``, and
    their exceedances by the calibration fold's non-members."""
    ids = _evaluation_ids(split, samples)
    controls = [sid for sid in sorted(split) if sid in samples and split[sid][1] == "calibration" and not split[sid][0]]
    scores = np.array([[by_method[m][sid]["score"] for sid in ids] for m in methods], dtype=float).reshape(
        len(methods), -1
    )
    exceed = np.stack([exceedances(*row_conformal_inputs(by_method[m], controls, ids)) for m in methods]).reshape(
        len(methods), len(controls), len(ids)
    )
    return Folds(
        evaluation_labels=np.array([split[sid][0] for sid in ids], dtype=bool),
        evaluation_scores=scores,
        exceedances=exceed,
        alpha=alpha,
    )


def _nan_to_none(row: dict) -> dict:
    return {k: None if isinstance(v, float) and np.isnan(v) else v for k, v in row.items()}


def _evaluated_rows(
    folds: Folds,
    methods: list[str],
    n_resamples: int,
    rng: np.random.Generator,
    blind: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[dict]:
    """Point figures, bootstrap intervals and paired differences from
    SrDetection gray-box and from the blind baseline (``blind``: its (repeats,
    n_eval) out-of-fold scores of the evaluation samples and their folds), one
    dict per method."""
    labels = folds.evaluation_labels.astype(int)
    predicted = predictions(folds)[1].astype(int)
    point = {"auc": roc_auc(labels, folds.evaluation_scores), "macro_f1": macro_f1(labels, predicted)}
    replicates = None if blind is not None else bootstrap(folds, n_resamples, rng)
    baseline = methods.index(BASELINE) if BASELINE in methods else None
    blind_columns = {}
    if blind is not None:
        blind_scores, blind_folds = blind
        truth = labels.astype(bool)
        replicates = bootstrap(
            folds, n_resamples, rng, lambda weights: blind_auc(blind_scores, blind_folds, truth, weights)
        )
        blind_point = float(blind_auc(blind_scores, blind_folds, truth))
        blind_replicates = replicates.extra
        low, high = percentile_interval(blind_replicates)
        blind_columns = {"blind_auc": blind_point, "blind_auc_low": float(low), "blind_auc_high": float(high)}
    rows = []
    for i in range(len(methods)):
        metrics = decision_metrics(labels, predicted[i])
        row = {
            "n_control": int(folds.exceedances.shape[1]),
            "n_eval": int(labels.size),
            "n_eval_non_members": int((labels == 0).sum()),
            "alpha": folds.alpha,
            **{key: tpr_at_fpr(labels, folds.evaluation_scores[i], fpr) for key, fpr in LOW_FPRS.items()},
            **metrics,  # accuracy, macro and member-class precision / recall / F1
            "fpr": float(predicted[i][labels == 0].mean()),
        }
        for metric in ("auc", "macro_f1"):
            values = getattr(replicates, metric)
            low, high = percentile_interval(values[i])
            row |= {metric: float(point[metric][i]), f"{metric}_low": float(low), f"{metric}_high": float(high)}
            if baseline is not None:
                delta = values[i] - values[baseline]
                low, high = percentile_interval(delta)
                row |= {
                    f"delta_{metric}": float(point[metric][i] - point[metric][baseline]),
                    f"delta_{metric}_low": float(low),
                    f"delta_{metric}_high": float(high),
                    f"beats_{metric}_share": float(np.mean(delta > 0)),
                }
        if blind is not None:
            delta = replicates.auc[i] - blind_replicates
            low, high = percentile_interval(delta)
            row |= blind_columns | {
                "delta_blind_auc": float(point["auc"][i] - blind_point),
                "delta_blind_auc_low": float(low),
                "delta_blind_auc_high": float(high),
                "beats_blind_auc_share": float(np.mean(delta > 0)),
            }
        rows.append(row)
    return rows


def blind_matrix(
    blind: dict[str, list[tuple[float, int]]] | None, ids: list[str]
) -> tuple[np.ndarray, np.ndarray] | None:
    """The blind baseline's (repeats, len(ids)) scores of ``ids`` and their
    folds; None without a blind baseline or where it did not score one of them."""
    if not blind or any(sid not in blind for sid in ids):
        return None
    pairs = np.array([blind[sid] for sid in ids], dtype=float)  # (n, repeats, 2)
    return pairs[:, :, 0].T, pairs[:, :, 1].T.astype(int)


def detection_rows(
    scores: list[dict],
    samples: list[dict],
    *,
    n_resamples: int,
    seed: int,
    alpha: float,
    min_per_class: int,
    blind: dict[str, list[tuple[float, int]]] | None = None,
) -> tuple[list[dict], dict]:
    """One row per subset and method, and each evaluated subset's ROC inputs
    {subset: {method: (labels, scores)}}. The control set is the calibration
    fold's non-members; metrics come from the evaluation fold, decisions from
    conformal p-values at ``alpha``. TPR at an FPR below 1 / (evaluation
    non-members) is None (not estimable). Δ columns: the method minus
    SrDetection gray-box, per replicate of one shared bootstrap; the ``beats``
    shares count replicates where the method is strictly better. The draws
    depend on the seed and the subset (and, for a method of less coverage,
    its name) only, so models are resampled alike. ``blind``: sample_id ->
    the blind baseline's (out-of-fold score, fold) in each repeat (the
    ``blind_*`` and ``delta_blind_auc*`` columns; absent: null)."""
    by_method: dict[str, dict[str, dict]] = defaultdict(dict)
    for s in scores:
        by_method[s["method"]][s["sample_id"]] = s
    methods = list(by_method)
    rows, curves = [], {}
    for subset in SUBSETS:
        split = subset_samples(samples, subset)
        if not methods:
            continue
        evaluated: dict[str, dict] = {}
        notes: dict[str, str] = {}
        shortfall = filtered_shortfall(samples, min_per_class) if subset == "filtered" else None
        if shortfall:
            log.warning("subset %r %s", subset, shortfall)
            notes = dict.fromkeys(methods, shortfall)
        for group, (group_methods, group_samples) in enumerate(
            _coverage_groups(by_method, split) if split and not shortfall else []
        ):
            try:
                folds = _folds(by_method, group_methods, split, group_samples, alpha)
            except ValueError as err:
                if subset == "all" and group == 0:  # the split itself is too small: a configuration error
                    raise ValueError(f"subset {subset!r}: {err}") from None
                log.warning("subset %r not evaluated for %s: %s", subset, ", ".join(group_methods), err)
                notes |= {m: f"not evaluated: {err}" for m in (group_methods if group == 0 else group_methods[:1])}
                continue
            # the main group's draws depend on the seed and the subset only, so models are resampled alike
            rng = np.random.default_rng(derive_seed(seed, "bootstrap", subset, *(group_methods[:1] if group else ())))
            own = group_methods if group == 0 else group_methods[:1]
            ids = _evaluation_ids(split, group_samples)
            evaluated_rows = _evaluated_rows(folds, group_methods, n_resamples, rng, blind_matrix(blind, ids))
            for method, row in zip(group_methods, evaluated_rows, strict=True):
                if method in own:
                    # its own draws, so adding the column moved no other figure
                    rule_rng = np.random.default_rng(derive_seed(seed, "own_rule", subset, method))
                    evaluated[method] = row | own_rule_row(
                        by_method[method], ids, folds.evaluation_labels, n_resamples, rule_rng
                    )
                    curves.setdefault(subset, {})[method] = (
                        folds.evaluation_labels.astype(int),
                        folds.evaluation_scores[group_methods.index(method)],
                    )
        for m in methods:
            name = {
                "subset": subset,
                "method": m,
                "family": next(iter(by_method[m].values()))["family"],
                "oracle": m in ORACLE_METHODS,
            }
            rows.append(_nan_to_none(name | evaluated[m]) if m in evaluated else name | {"note": notes.get(m)})
        if subset in curves:
            curves[subset] = {m: curves[subset][m] for m in methods if m in curves[subset]}
    return rows, curves
