"""The functional-memorization paper's results from the long similarity
tables of the counterfactual stage (one row per sample and metric: target,
reference, delta and each side's outcome): Table 1 (mean ± std with
bootstrap intervals), Table 2 (counterfactual functional memorization at
τ_text and τ_func), the exact and near-verbatim counterfactual counts, Δ by
severity bucket (App. G) and by length (App. H), Pearson correlations
(App. D.3) and failures by cause; in testbed mode each split by member /
non-member, with the member-minus-non-member difference of Δ.

A value is null when it could not be computed (its outcome says why). Every
mean is over complete cases: the samples where both the target's and the
reference's value are known, so target, reference and Δ are averaged over
the same samples and mean Δ = mean target − mean reference. A count needs
every value it compares to be known, so a failed generation, parse or judge
answer never counts as memorized nor as not memorized: counts are over
evaluated samples, shares over all samples of the group (as the paper's
percentages).

The execution metrics (HyClone's screen, the execution similarity and its
clone decision) also get the paper's convention, ``missing = 0``: a pair
with no value (it did not run, the screen did not pass it, the answer was
unparseable) counts as 0. The paper's HyClone rows are computed that way:
Stage 1's .037 ± .189 is 276 candidates over all 7,422 functions (276 /
7,422 = .0372, and a 0/1 variable with that mean has std .189), and the
HyClone similarity's .005 ± .066 is over all 7,422 too, though only 42
target pairs ran (over the 42, with 30 at ≥ 0.75, the mean would exceed
0.5); its Table 2 count (21 counterfactual clones of 30 target clones, with
12 reference clones among 21 reference pairs that ran) needs a reference
that did not run to count as "not a clone". Both conventions are reported,
each row labelled."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
from scipy.stats import bootstrap

from leaktrace.seeding import derive_seed
from leaktrace.similarity.text import TEXT_METRICS

# Which metric is which kind (paper, Sec. 3 and Table 1): the one list every
# table and figure reads. A metric of no kind here (e.g. execution_s_a) is
# reported in Table 1 and the correlations, never counted in Table 2.
METRIC_KINDS: dict[str, tuple[str, ...]] = {
    "text": tuple(TEXT_METRICS),
    "structural": ("codebleu", "codebleu_syntax", "codebleu_dataflow", "tsed"),
    "judge": ("judge_song", "judge_nikiema", "judge_paper"),
    "execution": ("hyclone_screen", "execution"),
}
FUNCTIONAL_KINDS = ("structural", "judge", "execution")
FUNCTIONAL_METRICS = tuple(m for kind in FUNCTIONAL_KINDS for m in METRIC_KINDS[kind])
KIND_OF = {m: kind for kind, metrics in METRIC_KINDS.items() for m in metrics}
LABELS = {
    "exact_match": "Exact match",
    "bleu": "BLEU",
    "edit_similarity": "Edit sim. score",
    "lcs": "LCS score",
    "codebleu": "CodeBLEU (equal)",
    "codebleu_syntax": "CodeBLEU (syntax)",
    "codebleu_dataflow": "CodeBLEU (DFG)",
    "tsed": "TSED",
    "judge_song": "Song et al.",
    "judge_nikiema": "Nikiema et al.",
    "judge_paper": "Ours (func. equiv.)",
    "hyclone_screen": "HyClone Stage 1 (LLM screen)",
    "execution": "Execution sim. (tests + hypothesis inputs)",
    "execution_clone": "Execution clone (S_a, S_b ≥ 0.8)",
    "execution_s_a": "Execution S_a",
    "execution_s_b": "Execution S_b",
}
# Metrics whose missing value the paper counts as 0 (module docstring): the
# execution family's, where "no value" means "not shown to be a clone".
ZERO_WHEN_MISSING = ("hyclone_screen", "execution", "execution_clone")
COMPLETE_CASES = "complete cases"
MISSING_AS_ZERO = "missing = 0"
TEXT_METRIC = "bleu"  # SIM_text of Table 2 and the x axis of Figure 2
EXACT_METRIC = "exact_match"
LENIENT_JUDGE = "judge_nikiema"  # the paper's "unique (excl. Nikiema)" leaves it out
UNIQUE_ANY = "unique (any metric)"
UNIQUE_EXCLUDING_LENIENT = "unique (excl. Nikiema)"
# App. G's severity buckets of the App. B filter's 1-10 score.
SEVERITY_BUCKETS = (("low", 1, 3), ("medium", 4, 7), ("high", 8, 10))
SIDES = ("target", "reference", "delta")
ALL = "all"
SPLITS = ("member", "non-member")


def metric_order(metrics) -> list[str]:
    """Metrics in the paper's order (text, structural, judges, execution),
    then any other in name order."""
    known = [m for kind in METRIC_KINDS.values() for m in kind if m in set(metrics)]
    return known + sorted(set(metrics) - set(known))


def label(metric: str) -> str:
    return LABELS.get(metric, metric)


def groups(sim: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    """("all", every row), then each split present (testbed mode). ``sim``
    has a ``split`` column: "member", "non-member" or None."""
    yield ALL, sim
    for split in SPLITS:
        part = sim[sim["split"] == split]
        if len(part):
            yield split, part


def is_testbed(sim: pd.DataFrame) -> bool:
    return set(SPLITS) <= set(sim["split"].dropna())


def mean_interval(
    values: np.ndarray, n_resamples: int, seed: int, confidence: float = 0.95
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of the mean; None below two values."""
    if len(values) < 2:
        return None, None
    result = bootstrap(
        (values,),
        np.mean,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _std(values: np.ndarray) -> float | None:
    return float(values.std(ddof=1)) if len(values) > 1 else None


def complete_cases(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows whose target and reference values are both known (their Δ is then known too)."""
    return rows[rows["target"].notna() & rows["reference"].notna()]


def missing_as_zero(rows: pd.DataFrame) -> pd.DataFrame:
    """The paper's convention for the execution metrics: an unknown value is 0, Δ recomputed."""
    target, reference = rows["target"].fillna(0.0), rows["reference"].fillna(0.0)
    return rows.assign(target=target, reference=reference, delta=target - reference)


def conventions(metric: str, rows: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(convention, rows it keeps) for one metric's rows: the paper's missing = 0
    first where it applies, then complete cases."""
    chosen = [(COMPLETE_CASES, complete_cases(rows))]
    if metric in ZERO_WHEN_MISSING:
        chosen.insert(0, (MISSING_AS_ZERO, missing_as_zero(rows)))
    return chosen


def side_stats(rows: pd.DataFrame) -> dict:
    """Mean and std of target, reference and Δ over ``rows`` (complete cases)."""
    out = {}
    for side in SIDES:
        values = rows[side].to_numpy(dtype=float)
        out |= {f"{side}_mean": float(values.mean()) if len(values) else None, f"{side}_std": _std(values)}
    return out


def summary_rows(sim: pd.DataFrame, n_resamples: int, seed: int) -> list[dict]:
    """Table 1: per group, metric and convention, mean ± std of target,
    reference and Δ over the same n samples, each with a bootstrap interval
    of the mean; ``n_samples`` is the group's size."""
    rows = []
    for group, part in groups(sim):
        n_samples = part["sample_id"].nunique()
        for metric in metric_order(part["metric"].unique()):
            for convention, chosen in conventions(metric, part[part["metric"] == metric]):
                row = {
                    "group": group,
                    "metric": metric,
                    "kind": KIND_OF.get(metric, "other"),
                    "convention": convention,
                    "n_samples": n_samples,
                    "n": len(chosen),
                    **side_stats(chosen),
                }
                for side in SIDES:
                    values = chosen[side].to_numpy(dtype=float)
                    row[f"{side}_low"], row[f"{side}_high"] = mean_interval(
                        values, n_resamples, derive_seed(seed, "table1", group, metric, convention, side)
                    )
                rows.append(row)
    return rows


def member_difference_rows(sim: pd.DataFrame, n_resamples: int, seed: int, confidence: float = 0.95) -> list[dict]:
    """Per metric, mean Δ of members minus mean Δ of non-members, with a
    bootstrap interval that resamples each split on its own: the testbed's
    signal test (members were trained on, non-members are the control),
    passed where the whole interval lies above 0 (``members_above``).
    Empty outside testbed mode."""
    if not is_testbed(sim):
        return []
    rows = []
    for metric in metric_order(sim["metric"].unique()):
        sel = sim[sim["metric"] == metric]
        member, non_member = (sel.loc[sel["split"] == s, "delta"].dropna().to_numpy(dtype=float) for s in SPLITS)
        row = {
            "metric": metric,
            "kind": KIND_OF.get(metric, "other"),
            "n_member": len(member),
            "n_non_member": len(non_member),
            "member_delta": float(member.mean()) if len(member) else None,
            "non_member_delta": float(non_member.mean()) if len(non_member) else None,
            "difference": None,
            "low": None,
            "high": None,
            "members_above": None,
        }
        if len(member) and len(non_member):
            row["difference"] = row["member_delta"] - row["non_member_delta"]
        if len(member) > 1 and len(non_member) > 1:
            result = bootstrap(
                (member, non_member),
                lambda a, b, axis: a.mean(axis) - b.mean(axis),
                n_resamples=n_resamples,
                confidence_level=confidence,
                method="percentile",
                vectorized=True,
                paired=False,
                rng=np.random.default_rng(derive_seed(seed, "member_difference", metric)),
            )
            row["low"], row["high"] = float(result.confidence_interval.low), float(result.confidence_interval.high)
            row["members_above"] = bool(row["low"] > 0)
        rows.append(row)
    return rows


def _wide(part: pd.DataFrame, side: str) -> pd.DataFrame:
    """sample_id x metric values of one side (target or reference)."""
    return part.pivot(index="sample_id", columns="metric", values=side)


def functional_memorized(part: pd.DataFrame, tau_text: float, tau_func: float) -> pd.DataFrame:
    """sample_id x functional metric: True where the sample is counterfactually
    functionally memorized (Sec. 3): SIM_text(x, x_T) < τ_text,
    SIM_func(x, x_T) >= τ_func and SIM_func(x, x_R) < τ_func; False where
    not; NA where a value it needs is unknown."""
    target, reference = _wide(part, "target"), _wide(part, "reference")
    metrics = [m for m in FUNCTIONAL_METRICS if m in target.columns]
    text = target[TEXT_METRIC] if TEXT_METRIC in target.columns else pd.Series(np.nan, index=target.index)
    out = {}
    for metric in metrics:
        known = text.notna() & target[metric].notna() & reference[metric].notna()
        flag = (text < tau_text) & (target[metric] >= tau_func) & (reference[metric] < tau_func)
        out[metric] = flag.astype("boolean").where(known, pd.NA)
    return pd.DataFrame(out, index=target.index, columns=metrics)


def with_missing_as_zero(part: pd.DataFrame) -> pd.DataFrame:
    """``part`` with the execution metrics' unknown values set to 0 (the paper's convention)."""
    out = part.copy()
    chosen = out["metric"].isin(ZERO_WHEN_MISSING)
    out.loc[chosen, list(SIDES)] = missing_as_zero(out.loc[chosen])[list(SIDES)]
    return out


def memorization_rows(sim: pd.DataFrame, tau_text: float, tau_func: float) -> list[dict]:
    """Table 2: per group, counterfactually functionally memorized samples
    per functional metric (the execution metrics twice: missing = 0, as the
    paper counts them, and complete cases), then the samples memorized under
    any metric, and under any but the lenient Nikiema judge (with the
    execution metrics' missing = 0). ``n_evaluated``: samples whose values
    were all known (for the unique rows, known for at least one metric);
    ``share``: count over all samples of the group."""
    rows = []
    for group, part in groups(sim):
        n_samples = part["sample_id"].nunique()
        flags = functional_memorized(part, tau_text, tau_func)
        paper_flags = functional_memorized(with_missing_as_zero(part), tau_text, tau_func)
        for metric in flags.columns:
            chosen = [(COMPLETE_CASES, flags)]
            if metric in ZERO_WHEN_MISSING:
                chosen.insert(0, (MISSING_AS_ZERO, paper_flags))
            for convention, table in chosen:
                rows.append(
                    {
                        "group": group,
                        "metric": metric,
                        "kind": KIND_OF[metric],
                        "convention": convention,
                        "count": int(table[metric].sum()),
                        "n_evaluated": int(table[metric].notna().sum()),
                        "n_samples": n_samples,
                    }
                )
        for name, columns in (
            (UNIQUE_ANY, list(flags.columns)),
            (UNIQUE_EXCLUDING_LENIENT, [c for c in flags.columns if c != LENIENT_JUDGE]),
        ):
            if columns:
                table = paper_flags[columns]
                convention = MISSING_AS_ZERO if set(columns) & set(ZERO_WHEN_MISSING) else COMPLETE_CASES
                rows.append(
                    {
                        "group": group,
                        "metric": name,
                        "kind": "unique",
                        "convention": convention,
                        "count": int(table.fillna(False).any(axis=1).sum()),
                        "n_evaluated": int(table.notna().any(axis=1).sum()),
                        "n_samples": n_samples,
                    }
                )
    for row in rows:
        row["share"] = row["count"] / row["n_samples"] if row["n_samples"] else None
    return rows


def verbatim_rows(sim: pd.DataFrame, tau_text: float) -> list[dict]:
    """(Near-)verbatim memorization (Sec. 4): exact matches and BLEU >= τ_text
    of the target and of the reference, and the counterfactual ones (the
    target's but not the reference's)."""
    rows = []
    for group, part in groups(sim):
        n_samples = part["sample_id"].nunique()
        target, reference = _wide(part, "target"), _wide(part, "reference")
        for kind, metric, threshold in (("exact", EXACT_METRIC, 1.0), ("near_verbatim", TEXT_METRIC, tau_text)):
            if metric not in target.columns:
                continue
            t, r = target[metric], reference[metric]
            known = t.notna() & r.notna()
            counterfactual = known & (t >= threshold) & (r < threshold)
            rows.append(
                {
                    "group": group,
                    "kind": kind,
                    "metric": metric,
                    "threshold": threshold,
                    "target": int((t >= threshold).sum()),
                    "reference": int((r >= threshold).sum()),
                    "counterfactual": int(counterfactual.sum()),
                    "n_evaluated": int(known.sum()),
                    "n_samples": n_samples,
                    "share": int(counterfactual.sum()) / n_samples if n_samples else None,
                }
            )
    return rows


def severity_bucket(severity: float | None) -> str | None:
    if severity is None or pd.isna(severity):
        return None
    return next((name for name, low, high in SEVERITY_BUCKETS if low <= severity <= high), None)


def pearson(x: pd.Series, y: pd.Series) -> float | None:
    """Pearson r of two aligned series; None below three pairs or when either is constant."""
    if len(x) < 3 or x.nunique() < 2 or y.nunique() < 2:
        return None
    return float(np.corrcoef(x.to_numpy(dtype=float), y.to_numpy(dtype=float))[0, 1])


def severity_rows(sim: pd.DataFrame, severity: dict[str, int]) -> list[dict]:
    """App. G: per group, severity bucket (low 1-3, medium 4-7, high 8-10)
    and metric, mean ± std of target, reference and Δ over complete cases;
    the ``all`` bucket carries the Pearson r between severity and Δ. Samples
    without a severity (the filter said NO, or its answer was unparseable)
    are left out."""
    rated = sim[sim["sample_id"].isin(severity.keys())].assign(
        severity=lambda d: d["sample_id"].map(severity).astype(float)
    )
    rated = complete_cases(rated.assign(bucket=rated["severity"].map(severity_bucket)))
    rows = []
    for group, part in groups(rated):
        for metric in metric_order(part["metric"].unique()):
            sel = part[part["metric"] == metric]
            for bucket in [name for name, _, _ in SEVERITY_BUCKETS] + [ALL]:
                chosen = sel if bucket == ALL else sel[sel["bucket"] == bucket]
                if not len(chosen):
                    continue
                rows.append(
                    {
                        "group": group,
                        "bucket": bucket,
                        "metric": metric,
                        "n": len(chosen),
                        **side_stats(chosen),
                        "severity_delta_r": pearson(chosen["severity"], chosen["delta"]) if bucket == ALL else None,
                    }
                )
    return rows


# App. H's length buckets, (name, low, high) inclusive: the signature's
# characters and the preceding file context's characters (H.1), the ground
# truth's body lines (H.2). The paper's functions have 10-50 body lines; a
# testbed's may have fewer, which get a bucket of their own.
LENGTH_BUCKETS: dict[str, tuple[tuple[str, float, float], ...]] = {
    "signature_chars": (("short", 0, 50), ("medium", 51, 100), ("long", 101, np.inf)),
    "context_chars": (("minimal", 0, 99), ("short", 100, 2000), ("medium", 2001, 5000), ("long", 5001, np.inf)),
    "body_lines": (
        ("under 10", 0, 9),
        ("short", 10, 15),
        ("medium", 16, 25),
        ("long", 26, 50),
        ("over 50", 51, np.inf),
    ),
}
# App. H's four panels: BLEU, edit similarity and the Song and our judges.
LENGTH_METRICS = ("bleu", "edit_similarity", "judge_song", "judge_paper")


def length_bucket(kind: str, length: float) -> str:
    return next(name for name, low, high in LENGTH_BUCKETS[kind] if low <= length <= high)


def length_rows(sim: pd.DataFrame, lengths: pd.DataFrame) -> list[dict]:
    """App. H: per group, length kind (``LENGTH_BUCKETS``), bucket and metric,
    mean ± std of target, reference and Δ over complete cases; the ``all``
    bucket carries the Pearson r of the length with the target's, the
    reference's similarity and with Δ. ``lengths``: sample_id and one column
    per length kind; a sample without lengths is left out."""
    rows = []
    known = complete_cases(sim.merge(lengths, on="sample_id", how="inner"))
    for group, part in groups(known):
        for kind in LENGTH_BUCKETS:
            buckets = part[kind].map(lambda value, kind=kind: length_bucket(kind, value))
            for metric in metric_order(part["metric"].unique()):
                chosen_metric = part["metric"] == metric
                for bucket in [name for name, _, _ in LENGTH_BUCKETS[kind]] + [ALL]:
                    chosen = part[chosen_metric] if bucket == ALL else part[chosen_metric & (buckets == bucket)]
                    if not len(chosen):
                        continue
                    correlations = {
                        f"r_{side}": pearson(chosen[kind], chosen[side]) if bucket == ALL else None for side in SIDES
                    }
                    rows.append(
                        {
                            "group": group,
                            "length": kind,
                            "bucket": bucket,
                            "metric": metric,
                            "n": len(chosen),
                            **side_stats(chosen),
                            **correlations,
                        }
                    )
    return rows


def outcome_rows(sim: pd.DataFrame) -> list[dict]:
    """Per group, metric and model side, how many values were computed
    ("ok") and how many failed, by cause."""
    rows = []
    for group, part in groups(sim):
        for metric in metric_order(part["metric"].unique()):
            sel = part[part["metric"] == metric]
            for side in ("target", "reference"):
                counts = sel[f"{side}_outcome"].value_counts()
                rows += [
                    {"group": group, "metric": metric, "model": side, "outcome": outcome, "count": int(counts[outcome])}
                    for outcome in sorted(counts.index)
                ]
    return rows


def correlation_matrix(sim: pd.DataFrame, side: str = "target") -> pd.DataFrame:
    """Pearson r between every two metrics over the samples where both are
    known, for one side (App. D.3: the target's). Metrics in the paper's order."""
    wide = _wide(sim, side)
    return wide[metric_order(wide.columns)].corr(method="pearson", min_periods=3)


def correlation_rows(sim: pd.DataFrame, side: str = "target") -> list[dict]:
    """The correlation matrix per group, long: one row per pair of metrics."""
    rows = []
    for group, part in groups(sim):
        matrix, wide = correlation_matrix(part, side), _wide(part, side)
        for a in matrix.index:
            for b in matrix.columns:
                r = matrix.loc[a, b]
                rows.append(
                    {
                        "group": group,
                        "model": side,
                        "metric_a": a,
                        "metric_b": b,
                        "r": None if pd.isna(r) else float(r),
                        "n": int((wide[a].notna() & wide[b].notna()).sum()),
                    }
                )
    return rows
