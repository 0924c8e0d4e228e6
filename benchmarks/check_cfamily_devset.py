"""The verifier on the Java, C and C++ part of the generated development set
(:func:`leaktrace.leakage.devset.build_cfamily`): held-out precision / recall
/ F1 per language and clone type, for the rules (``model: rules``) with
their shipped thresholds, for the learned verifier (shipped model, fitted on
LessLeak-Bench's human labels: here a regression check on generated pairs)
and for LessLeak's automated criterion (2-gram Jaccard >= 0.7 on their
tokens); then what the rules' tuning rule of ``benchmarks/verify_devset.py``
(highest dev-half F1 over its grid) would choose on these languages, alone
and together with the Python set, and the held-out F1 of both. The shipped
thresholds are not changed here.

Per clone type: the pairs of that true type and every negative of the
language (P: of those called duplicate, the share that are; R: of the type's
pairs, the share called duplicate). Execution equivalence is Python-only
(``leaktrace.leakage.execution``): no pair here is run, so Type-4 pairs are
found only by the statement rule, where the problem text came along.

    .venv/bin/python benchmarks/check_cfamily_devset.py [--out results/verify] [--python-cache results/verify]

``--python-cache``: the folder where ``benchmarks/verify_devset.py`` left
``devset.jsonl`` and ``devset_verdicts.parquet`` (the combined tuning is
skipped without them).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from verify_devset import TYPES, fmt, lessleak_jaccard, prf, tune

from leaktrace.artifacts import read_records
from leaktrace.leakage import combiner, devset
from leaktrace.leakage.features import vector
from leaktrace.leakage.pairs import settings_for, verify_records
from leaktrace.leakage.verify import RULES, Verdict, Verifier, decide
from leaktrace.mutate.statements import line_similarity


def per_type(rows: list[dict], methods: dict[str, np.ndarray]) -> None:
    """The held-out table: per language, all pairs, each clone type against the language's negatives."""
    lang = np.array([r["language"] for r in rows])
    ctype = np.array([r["clone_type"] for r in rows])
    truth = np.array([r["duplicate"] for r in rows])
    print(f"{'language':<9}{'subset':<8}{'n':>5}  " + "  ".join(f"{m:^24}" for m in methods))
    print(f"{'':<22}" + "  ".join(f"{'P':>8}{'R':>8}{'F1':>8}" for _ in methods))
    for language in devset.CFAMILY:
        mine = lang == language
        subsets = [("all", mine)] + [(t, mine & ((ctype == t) | (ctype == "none"))) for t in TYPES]
        for name, mask in subsets:
            n = int(mask.sum()) if name == "all" else int((mine & (ctype == name)).sum())
            cells = [prf(truth[mask], pred[mask]) for pred in methods.values()]
            print(
                f"{language:<9}{name:<8}{n:>5}  " + "  ".join(f"{fmt(p):>8}{fmt(r):>8}{fmt(f):>8}" for p, r, f in cells)
            )
        negatives = mine & (ctype == "none")
        print(
            f"{language:<9}{'none':<8}{int(negatives.sum()):>5}  (false positives: "
            + ", ".join(f"{m} {int(pred[negatives].sum())}" for m, pred in methods.items())
            + ")"
        )


def held_out_f1(verdicts: list[Verdict], rows: list[dict], setting) -> float:
    held = [(v, r) for v, r in zip(verdicts, rows, strict=True) if r["half"] == "held-out"]
    return prf(np.array([r["duplicate"] for _, r in held]), np.array([decide(v, setting)[1] for v, _ in held]))[2]


def report_tuning(label: str, verdicts: list[Verdict], rows: list[dict], shipped, parts: dict[str, list[int]]) -> None:
    """What the tuning rule chooses on ``rows``' dev half, and held-out F1 (all, and per part) of it and of the shipped thresholds."""
    truth = np.array([r["duplicate"] for r in rows])
    dev = np.array([r["half"] == "dev" for r in rows])
    (key, (p, r, f)), _ = tune(verdicts, truth, dev, shipped)
    chosen = replace(shipped, structure=key[0], overlap=key[1], statement=key[2])
    print(
        f"\n{label}: the rule chooses structure {key[0]}, overlap {key[1]}, statement {key[2]} "
        f"(dev P {p:.3f} R {r:.3f} F1 {f:.3f}); shipped: structure {shipped.structure}, overlap {shipped.overlap}, "
        f"statement {shipped.statement}"
    )
    for part, index in {"all": list(range(len(rows))), **parts}.items():
        vs, rs = [verdicts[i] for i in index], [rows[i] for i in index]
        print(
            f"  held-out F1 {part:<8} shipped {held_out_f1(vs, rs, shipped):.3f}  chosen {held_out_f1(vs, rs, chosen):.3f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("results/verify"), help="where the pairs are written (JSONL)")
    ap.add_argument(
        "--python-cache",
        type=Path,
        default=None,
        help="folder with verify_devset.py's devset.jsonl and devset_verdicts.parquet",
    )
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rows = devset.build_cfamily()
    devset.write_jsonl(rows, a.out / "cfamily_devset.jsonl")
    t1 = time.perf_counter()
    shipped = settings_for("default", execute=False, model="rules")
    verdicts = verify_records(rows, Verifier(shipped))
    learned = combiner.load()
    t2 = time.perf_counter()
    counts = {x: sum(r["language"] == x for r in rows) for x in devset.CFAMILY}
    print(
        f"C-family dev set: {len(rows)} pairs ({sum(r['duplicate'] for r in rows)} duplicates), "
        f"{sum(r['half'] == 'dev' for r in rows)} dev / {sum(r['half'] == 'held-out' for r in rows)} held-out "
        f"({', '.join(f'{x} {counts[x]}' for x in devset.CFAMILY)}); "
        f"built in {t1 - t0:.1f} s, verified in {t2 - t1:.1f} s (no pair executed: execution is Python-only)"
    )
    for kind in ("T3-0.7", "T3-0.5"):
        sims = [line_similarity(r["bench_text"], r["corpus_text"]) for r in rows if r["kind"] == kind]
        print(
            f"{kind}: achieved line similarity mean {np.mean(sims):.2f}, within 0.05 of the target "
            f"{np.mean([s <= float(kind[3:]) + 0.05 for s in sims]):.0%} of {len(sims)}"
        )

    held = [i for i, r in enumerate(rows) if r["half"] == "held-out"]
    held_rows = [rows[i] for i in held]
    decisions = [decide(verdicts[i], shipped) for i in held]
    methods = {
        "2-gram Jaccard >= 0.7": np.array([lessleak_jaccard(r) >= 0.7 for r in held_rows]),
        "rules (shipped)": np.array([d[1] for d in decisions]),
        "learned (shipped)": np.array(
            [
                decide(
                    replace(verdicts[i], score=learned.probability(vector(verdicts[i].as_row()))),
                    shipped,
                    learned.threshold,
                )[1]
                for i in held
            ]
        ),
    }
    print(
        f"\nheld-out half, shipped thresholds (structure {shipped.structure}, overlap {shipped.overlap}, "
        f"statement {shipped.statement}), no execution:"
    )
    per_type(held_rows, methods)
    rules = [d[2] for d in decisions]
    print("verifier, decided by: " + ", ".join(f"{k} {rules.count(k)}" for k in RULES if rules.count(k)))
    positive_kinds = sorted({r["kind"] for r in held_rows if r["duplicate"]})
    print(
        "verifier recall by construction: "
        + ", ".join(
            f"{k} {np.mean([d[1] for d, r in zip(decisions, held_rows, strict=True) if r['kind'] == k]):.2f}"
            for k in positive_kinds
        )
    )

    report_tuning(
        "tuning rule on the Java/C/C++ dev half",
        verdicts,
        rows,
        shipped,
        {x: [i for i, r in enumerate(rows) if r["language"] == x] for x in devset.CFAMILY},
    )
    if a.python_cache is not None:
        py_rows = [json.loads(line) for line in (a.python_cache / "devset.jsonl").read_text().splitlines()]
        py_verdicts = [
            Verdict(**{k: r[k] for k in Verdict.__dataclass_fields__})
            for r in read_records(a.python_cache / "devset_verdicts.parquet")
        ]
        both_rows, both_verdicts = py_rows + rows, py_verdicts + verdicts
        n = len(py_rows)
        report_tuning(
            "tuning rule on the Python + Java/C/C++ dev half",
            both_verdicts,
            both_rows,
            shipped,
            {
                "python": [i for i in range(n) if both_rows[i]["language"] == "python"],
                "text": [i for i in range(n) if both_rows[i]["language"] == "text"],
                "java/c/cpp": list(range(n, len(both_rows))),
            },
        )


if __name__ == "__main__":
    main()
