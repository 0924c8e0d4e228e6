"""SrDetection's null check with and without tau_t, on every HumanEval problem.

Builds the variants stage's table with the default config's variant settings
(n = 10 AST renamings by meaning, one name each, tau_t composed into every
one where it applies) and every headline renaming again without tau_t (set
"ast", untransformed = n), scores every valid text under the base model,
and prints the null check (the share of samples whose original beats all
its variants, Wilson 95% CI, beside the mean of 1 / (n_i + 1)) for the
headline set, the headline cut to 3, and, on the samples tau_t changed, the
headline and the same renamings without tau_t (all of them, and the first
3). Timings of both stages are printed too. It runs the variants and score
stage jobs themselves, because what it measures is the null check on the
tables those whole jobs write.

    .venv/bin/python benchmarks/variant_generators.py results/<run>/variants/lexicon.parquet OUT_DIR [--limit K]

The token pass runs on one torch thread, as the default config's model jobs
do (on 2 shared cores more threads only contend).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from leaktrace.artifacts import read_records
from leaktrace.config_slice import read_slice
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.detect.evidence import SampleEvidence
from leaktrace.detect.srdetection_graybox import srdetection_flag
from leaktrace.evaluate.null_check import null_check, null_check_rows
from leaktrace.models.token_table import read_token_stats
from leaktrace.settings.aggregate import GrayboxInstances
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.score import ScoreMethods, TokenBatch
from leaktrace.stages.score import score_methods, score_tokens
from leaktrace.stages.variants import make_variants_table
from leaktrace.variants.kinds import detector_variant_counts
from leaktrace.variants.natural import variants_settings

MODEL = ModelSettings(path="resources/models/leaktrace-tiny", dtype="float32", device="cpu", max_length=None)
GRAYBOX = {"n_variants": 10, "sensitivity": [3], "generators": ["ast"]}
SANDBOX = {"timeout_s": 10, "cpu_s": 10, "memory_mb": 1024}


def _line(name: str, r: dict) -> str:
    return (
        f"{name:48s} {r['n_samples']:4d} samples, {r['n_flagged']:4d} flagged: {r['rate']:.3f} "
        f"[{r['rate_low']:.3f}, {r['rate_high']:.3f}], exchangeable {r['expected_rate']:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lexicon", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--names", type=int, default=1, help="names per variant (the default config's 1)")
    parser.add_argument(
        "--limit", type=int, default=None, help="only the first LIMIT HumanEval problems (default: all)"
    )
    a = parser.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    problems = load_humaneval(shipped_humaneval_path(), "humaneval")[: a.limit]
    pq.write_table(
        pa.Table.from_pylist(
            [{"sample_id": p.sample_id, "code": p.code, "test": p.test, "entry_point": p.entry_point} for p in problems]
        ),
        a.out / "benchmark.parquet",
    )
    pq.write_table(
        pa.Table.from_pylist([{"sample_id": p.sample_id, "kept": True} for p in problems]), a.out / "functions.parquet"
    )
    settings = variants_settings(
        n=10,
        names_per_variant=a.names,
        io_cases=None,
        test_cases={"compose": True, "untransformed": 10},
        sandbox=SANDBOX,
    )
    variants = a.out / "variants.parquet"
    if variants.exists():  # a run cut short after the variants stage: score what it made
        print(f"variants stage: {variants} reused")
    else:
        start = time.perf_counter()
        make_variants_table(
            a.out / "benchmark.parquet", a.out / "functions.parquet", a.lexicon, settings, 0, 2, variants
        )
        print(f"variants stage: {time.perf_counter() - start:.1f} s")
    import torch

    torch.set_num_threads(1)
    start = time.perf_counter()
    score_tokens(variants, MODEL, TokenBatch(batch_size=32, token_budget=None), a.out / "tokens.parquet")
    print(f"token pass: {time.perf_counter() - start:.1f} s")
    methods = read_slice(ScoreMethods, {"srdetection_graybox": GRAYBOX}, "score.methods")
    score_methods(a.out / "tokens.parquet", variants, methods, a.out / "scores.parquet")
    rows = read_records(variants, ["sample_id", "variant_id", "kind", "generator", "valid"])
    samples = [{"sample_id": s, "kept": True} for s in sorted({r["sample_id"] for r in rows})]
    for r in null_check_rows(
        read_records(a.out / "scores.parquet"),
        samples,
        detector_variant_counts(rows),
        GrayboxInstances(n_variants=10, sensitivity=(3,), generators=("ast",)),
        {"ast": detector_variant_counts(rows, "ast")},
    ):
        print(_line(r["method"], r))
    stats = read_token_stats(a.out / "tokens.parquet")
    ids: dict[tuple[str, str], list[int]] = {}
    for r in rows:
        if r["valid"]:
            ids.setdefault((r["sample_id"], r["kind"]), []).append(r["variant_id"])
    with_tt = sorted(s for (s, kind) in ids if kind == "ast")
    for k in (10, 3):
        for kind, label in (("rename", "with tau_t"), ("ast", "renaming alone")):
            decisions, counts = {}, {}
            for s in with_tt:
                first = sorted(ids.get((s, kind), []))[:k]
                evidence = SampleEvidence(
                    s, "", stats[(s, 0, "text")], variants=tuple(stats[(s, i, "text")] for i in first)
                )
                decisions[s], counts[s] = srdetection_flag(evidence, n_variants=k), len(first)
            print(_line(f"first {k}, {label}, samples tau_t changed", null_check(decisions, counts)))
    composed = sum(r["kind"] == "rename" and r["generator"].endswith("+tt") for r in rows)
    print(
        f"headline variants {sum(r['kind'] == 'rename' for r in rows)}, of which tau_t changed {composed}; "
        f"samples tau_t changed {len(with_tt)}"
    )


if __name__ == "__main__":
    main()
