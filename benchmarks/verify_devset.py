"""The rules (``model: rules``) against the generated development set
(:mod:`leaktrace.leakage.devset`: the Python and text part, ``build``, and
the Java, C and C++ part, ``build_cfamily``): thresholds chosen on the
``dev`` half of both parts together, precision / recall / F1 on the
``held-out`` half, before and after; and the learned verifier as shipped
(fitted on LessLeak-Bench's human labels, ``verify_human_labels.py``), here
a regression check on generated pairs.

Rule stated in advance: every setting of the grid below is scored on the dev
half; the chosen one has the highest F1 there, ties broken by the higher
precision, then by the higher thresholds (structure, overlap, statement, in
that order). The held-out half is only read to report the chosen setting.

Compared on the held-out half:
- ``lessleak``: LessLeak's automated criterion (2-gram Jaccard >= 0.7 on their tokens);
- ``before``: the verifier as it was (Type-1, Type-2 with equal literals or
  flagged, Type-3 at similarity 0.8 and flagged), from the same values;
- ``after``: :func:`leaktrace.leakage.verify.decide` with the chosen thresholds
  (execution in the sandbox where both sides run);
- ``learned``: the shipped model at its threshold, execution off.

Per clone type: recall over the pairs of that true type, precision over the
pairs predicted duplicate with that predicted type.

    .venv/bin/python benchmarks/verify_devset.py [--cache results/verify] [--rebuild] [--workers 2] [--all] [--reuse] [--limit N]

``--reuse`` reuses the Python part's cached values (its sandbox runs take
minutes); the Java/C/C++ part's are computed each time (seconds).
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.leakage import combiner, devset
from leaktrace.leakage.execution import Executor
from leaktrace.leakage.features import vector
from leaktrace.leakage.pairs import VERDICTS_SCHEMA, settings_for, verify_records
from leaktrace.leakage.tokens import shingle_set
from leaktrace.leakage.verify import RULES, Verdict, Verifier, decide
from leaktrace.sandbox import SandboxLimits

GRID = {  # 1.0 on structure or statement: that rule only for perfect matches
    "structure": [round(x, 2) for x in np.arange(0.60, 1.001, 0.05)],
    "overlap": [round(x, 2) for x in np.arange(0.1, 1.001, 0.1)],
    "statement": [round(x, 2) for x in np.arange(0.4, 1.001, 0.05)],
}
TYPES = ("type-1", "type-2", "type-3", "type-4")


def before(v) -> tuple[str, bool]:
    if v.layout_equal:
        return "type-1", True
    if v.renamed_equal:
        return "type-2", v.literals_equal or v.flagged
    if v.similarity >= 0.8:
        return "type-3", v.flagged
    return "none", False


def prf(truth: np.ndarray, pred: np.ndarray) -> tuple[float, float, float]:
    tp = float(np.sum(truth & pred))
    p = tp / pred.sum() if pred.sum() else float("nan")
    r = tp / truth.sum() if truth.sum() else float("nan")
    f = 2 * p * r / (p + r) if p + r > 0 else float("nan")
    return p, r, f


def fmt(x: float) -> str:
    return "  -  " if x != x else f"{x:.3f}"


def table(rows: list[dict], methods: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    truth = np.array([r["duplicate"] for r in rows])
    lang = np.array([r["language"] for r in rows])
    true_type = np.array([r["clone_type"] for r in rows])
    print(f"{'subset':<16}{'n':>6}  " + "  ".join(f"{m:^23}" for m in methods))
    print(f"{'':<22}" + "  ".join(f"{'P':>7}{'R':>8}{'F1':>8}" for _ in methods))
    subsets = [("all", np.ones(len(rows), bool))] + [(f"lang={x}", lang == x) for x in sorted(set(lang))]
    for name, mask in subsets:
        cells = [prf(truth[mask], pred[mask]) for pred, _ in methods.values()]
        print(f"{name:<16}{mask.sum():>6}  " + "  ".join(f"{fmt(p):>7}{fmt(r):>8}{fmt(f):>8}" for p, r, f in cells))
    for t in TYPES:
        cells = []
        for pred, ptype in methods.values():
            r = pred[true_type == t].mean() if (true_type == t).any() else float("nan")
            mine = pred & (ptype == t)
            p = truth[mine].mean() if mine.any() else float("nan")
            cells.append((p, r, 2 * p * r / (p + r) if p + r > 0 else float("nan")))
        print(
            f"{t:<16}{(true_type == t).sum():>6}  "
            + "  ".join(f"{fmt(p):>7}{fmt(r):>8}{fmt(f):>8}" for p, r, f in cells)
        )
    print(
        f"{'none':<16}{(true_type == 'none').sum():>6}  (negatives: false positives "
        + ", ".join(f"{m} {int(pred[true_type == 'none'].sum())}" for m, (pred, _) in methods.items())
        + ")"
    )


def tune(verdicts: list, truth: np.ndarray, dev: np.ndarray, base) -> tuple[tuple, list]:
    """The rule stated above: every grid setting scored on the ``dev`` pairs; the best
    ((structure, overlap, statement), (P, R, F1)) and every one tried."""
    tried = []
    for structure, overlap, statement in itertools.product(GRID["structure"], GRID["overlap"], GRID["statement"]):
        s = replace(base, structure=structure, overlap=overlap, statement=statement)
        pred = np.array([decide(v, s)[1] for v in verdicts])
        tried.append(((structure, overlap, statement), prf(truth[dev], pred[dev])))
    return max(tried, key=lambda t: (np.nan_to_num(t[1][2]), np.nan_to_num(t[1][0]), t[0])), tried


def lessleak_jaccard(r: dict) -> float:
    """LessLeak's automated criterion's value: 2-gram Jaccard on their tokens."""
    a, b = shingle_set(r["bench_text"], "lessleak", 2), shingle_set(r["corpus_text"], "lessleak", 2)
    return len(a & b) / len(a | b) if a | b else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", type=Path, default=Path("results/verify"))
    ap.add_argument("--rebuild", action="store_true", help="rebuild the dev set even if cached")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--all", action="store_true", help="print every setting of the grid with its dev-half figures")
    ap.add_argument(
        "--reuse", action="store_true", help="reuse the cached verdicts (values only: decisions are recomputed)"
    )
    ap.add_argument(
        "--limit",
        type=int,
        default=None,
        help="only every k-th pair of each part, k chosen to keep about LIMIT pairs in all (default: all)",
    )
    a = ap.parse_args()
    a.cache.mkdir(parents=True, exist_ok=True)
    path = a.cache / "devset.jsonl"
    t0 = time.perf_counter()
    if a.rebuild or not path.exists():
        devset.write_jsonl(devset.build(), path)
    cfamily_path = a.cache / "cfamily_devset.jsonl"
    if a.rebuild or not cfamily_path.exists():
        devset.write_jsonl(devset.build_cfamily(), cfamily_path)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    cfamily_rows = [json.loads(line) for line in cfamily_path.read_text().splitlines()]
    if a.limit:
        step = max(1, (len(rows) + len(cfamily_rows)) // a.limit)
        rows, cfamily_rows = rows[::step], cfamily_rows[::step]
    t1 = time.perf_counter()
    shipped = settings_for("default", execute=True, model="rules")
    cached = a.cache / (f"devset_verdicts-limit-{a.limit}.parquet" if a.limit else "devset_verdicts.parquet")
    if a.reuse and cached.exists():
        verdicts = [Verdict(**{k: r[k] for k in Verdict.__dataclass_fields__}) for r in read_records(cached)]
    else:
        verifier = Verifier(shipped, Executor(SandboxLimits(timeout_s=5, cpu_s=5), a.workers))
        verdicts = verify_records(rows, verifier, always_execute=True)
        write_table(
            [
                {"id": r["id"], "language": r["language"], **v.as_row(), "judge_label": None}
                for r, v in zip(rows, verdicts, strict=True)
            ],
            VERDICTS_SCHEMA,
            cached,
        )
    # execution equivalence is Python-only: the C-family pairs' values take seconds and are not cached
    rows, verdicts = (
        rows + cfamily_rows,
        verdicts + verify_records(cfamily_rows, Verifier(replace(shipped, execute=False))),
    )
    t2 = time.perf_counter()
    n_exec = sum(v.execution is not None for v in verdicts)
    print(
        f"dev set: {len(rows)} pairs ({sum(r['duplicate'] for r in rows)} duplicates; {len(cfamily_rows)} of them "
        f"Java/C/C++), {sum(r['half'] == 'dev' for r in rows)} dev / {sum(r['half'] == 'held-out' for r in rows)} "
        f"held-out; built/read in {t1 - t0:.1f} s, verified in {t2 - t1:.1f} s ({n_exec} pairs executed in the sandbox)"
    )

    dev = np.array([r["half"] == "dev" for r in rows])
    truth = np.array([r["duplicate"] for r in rows])
    best, tried = tune(verdicts, truth, dev, shipped)
    print(
        f"grid: {len(tried)} settings (structure {GRID['structure'][0]}..{GRID['structure'][-1]}, overlap "
        f"{GRID['overlap'][0]}..{GRID['overlap'][-1]}, statement {GRID['statement'][0]}..{GRID['statement'][-1]}); "
        f"chosen on the dev half (max F1): structure {best[0][0]}, overlap {best[0][1]}, statement {best[0][2]} "
        f"(dev P {best[1][0]:.3f} R {best[1][1]:.3f} F1 {best[1][2]:.3f}); shipped defaults: structure "
        f"{shipped.structure}, overlap {shipped.overlap}, statement {shipped.statement}"
    )
    write_table(
        [
            {"structure": k[0], "overlap": k[1], "statement": k[2], "dev_precision": p, "dev_recall": r, "dev_f1": f}
            for k, (p, r, f) in tried
        ],
        pa.schema(
            [(n, pa.float64()) for n in ("structure", "overlap", "statement", "dev_precision", "dev_recall", "dev_f1")]
        ),
        a.cache / "grid.parquet",
    )
    if a.all:
        for k, (p, r, f) in tried:
            print(f"  structure {k[0]:.2f} overlap {k[1]:.2f} statement {k[2]:.2f}: dev P {p:.3f} R {r:.3f} F1 {f:.3f}")
    chosen = replace(shipped, structure=best[0][0], overlap=best[0][1], statement=best[0][2])
    lessleak = np.array([lessleak_jaccard(r) >= 0.7 for r in rows])
    held = ~dev
    held_rows = [r for r, h in zip(rows, held, strict=True) if h]
    methods = {}
    for name, decisions in (
        ("before", [before(v) for v in verdicts]),
        ("after", [decide(v, chosen)[:2] for v in verdicts]),
    ):
        methods[name] = (np.array([d[1] for d in decisions])[held], np.array([d[0] for d in decisions])[held])
    learned = combiner.load()  # the learned verifier as shipped, execution off: a regression check on generated pairs
    decisions = [
        decide(replace(v, execution=None, score=learned.probability(vector(v.as_row()))), chosen, learned.threshold)
        for v in verdicts
    ]
    methods["learned"] = (np.array([d[1] for d in decisions])[held], np.array([d[0] for d in decisions])[held])
    methods = {
        "lessleak": (lessleak[held], np.full(held.sum(), "none")),
        **methods,
    }  # no clone type: no per-type precision
    print("\nheld-out half:")
    table(held_rows, methods)
    rules = [decide(v, chosen)[2] for v, h in zip(verdicts, held, strict=True) if h]
    print("after, decided by: " + ", ".join(f"{k} {rules.count(k)}" for k in RULES if k != "judge"))


if __name__ == "__main__":
    main()
