"""SrDetection's null check under the base model: today's variants against naturalness-matched ones.

The rule, fixed before any run (``variants/natural.py``): draw a pool of
``pool`` renamings per sample with the
stage's own generator, keep of the valid ones the n whose
per-token loss under the SELECTION model (the shipped
``leaktrace-tiny-ref``, never the base model) is nearest the original's,
ties broken by the run seed. The null check is then measured under the BASE
model (``leaktrace-tiny``, which never saw HumanEval): the share of samples
whose original has a lower loss than all its detector variants, with Wilson
and Clopper-Pearson 95% intervals, beside the mean of 1 / (n_i + 1). A
sample counts when the function filter kept it, its original passes its
tests and it has at least ``split.min_valid_variants`` valid detector
variants (the samples that enter the split). SrDetection's pre-exposure
filter reads the same comparison (the same variants, the base model), so its
flags are the samples counted here. For contrast only, the same rule with the base model as
selection model (not held out: the measuring model picks the variants, so it
is no evidence) is printed too. ``--limit K`` keeps the first K kept problems
(HumanEval order), for a machine that cannot spare the full run. It runs the
variants and natural-variants stage jobs themselves, because what it
measures is the null check on the sets those whole jobs draw and select.

    PYTHONPATH=workflow .venv/bin/python benchmarks/natural_variants.py \\
        results/<run>/variants/lexicon.parquet results/<run>/filter/humaneval.functions.parquet OUT_DIR --pool 30 [--limit K]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from scipy.stats import binomtest

from leaktrace.artifacts import read_records
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.evaluate.null_check import null_check
from leaktrace.models.backend import ModelSpec
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.score import TokenBatch
from leaktrace.settings.variants import NaturalRule, NaturalSettings
from leaktrace.stages.variants import make_variants_table, select_natural_variants
from leaktrace.variants.kinds import VARIANT_SETS
from leaktrace.variants.natural import choose_natural, variants_settings

ROOT = Path(__file__).resolve().parents[1]


def _losses(model_path: str, texts: list[str], batch_size: int) -> list[float]:
    from leaktrace.models.hf import HFLanguageModel

    lm = HFLanguageModel(ModelSpec(name_or_path=model_path, dtype="float32", device="cpu"), batch_size=batch_size)
    stats = lm.score(texts, moments=[False] * len(texts))
    return [-float(np.mean(s.logprobs, dtype=np.float64)) for s in stats]


def _summary(
    name: str, rows: list[dict], base: dict[tuple[str, str], float], kept: set[str], n: int, min_valid: int
) -> dict:
    """Null check of one variants table under the base model (its flags are the pre-exposure filter's)."""
    sets: dict[tuple[str, str], list[str]] = defaultdict(list)
    original = {}
    for r in rows:
        if r["kind"] == "original" and r["valid"]:
            original[r["sample_id"]] = r["text"]
        elif r["valid"] and r["kind"] == "rename":
            sets[(r["sample_id"], r["kind"])].append(r["text"])
    eligible = sorted(s for s in original if s in kept and len(sets[(s, "rename")]) >= min_valid)
    loss = {s: base[(s, original[s])] for s in eligible}
    decisions = {s: loss[s] < min(base[(s, t)] for t in sets[(s, "rename")]) for s in eligible}
    counts = {s: len(sets[(s, "rename")]) for s in eligible}
    check = null_check(decisions, counts)
    exact = binomtest(check["n_flagged"], check["n_samples"]).proportion_ci(0.95, method="exact")
    return {
        "table": name,
        "eligible": len(eligible),
        "full_n": sum(c == n for c in counts.values()),
        **check,
        "cp_low": float(exact.low),
        "cp_high": float(exact.high),
    }


def _line(r: dict) -> str:
    return (
        f"{r['table']:44s} {r['eligible']:3d} samples ({r['full_n']:3d} with all n), mean n {r['mean_variants']:.1f}: "
        f"original beats all {r['n_flagged']:3d} = {r['rate']:.3f} Wilson [{r['rate_low']:.3f}, {r['rate_high']:.3f}] "
        f"CP [{r['cp_low']:.3f}, {r['cp_high']:.3f}] vs 1/(n+1) {r['expected_rate']:.3f} ({r['verdict']})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lexicon", type=Path)
    parser.add_argument("functions", type=Path, help="the run's filter/humaneval.functions.parquet (kept samples)")
    parser.add_argument("out", type=Path)
    parser.add_argument("--pool", type=int, nargs="+", default=[30], help="pool sizes to try (each reported)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="only the first LIMIT kept problems (HumanEval order)")
    a = parser.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    seed, variants, batch = config["seed"], config["variants"], config["score"]["tokens"]
    n, min_valid = variants["n"], config["filter"]["split"]["min_valid_variants"]
    base_model, selection_model = config["base_model"]["path"], config["reference_model"]["path"]
    problems = load_humaneval(shipped_humaneval_path(), "humaneval")
    benchmark = a.out / "benchmark.parquet"
    pq.write_table(
        pa.Table.from_pylist(
            [{"sample_id": p.sample_id, "code": p.code, "test": p.test, "entry_point": p.entry_point} for p in problems]
        ),
        benchmark,
    )
    kept = [r["sample_id"] for r in read_records(a.functions, ["sample_id", "kept"]) if r["kept"]][: a.limit]
    functions = a.out / "functions.parquet"
    pq.write_table(pa.Table.from_pylist([{"sample_id": s, "kept": True} for s in kept]), functions)
    kept = set(kept)
    tables: dict[str, list[dict]] = {}

    def stage(name: str, settings: dict) -> Path:
        path = a.out / f"{name}.parquet"
        if path.exists():  # the stage is deterministic: a re-run reuses what an interrupted one wrote
            return path
        start = time.perf_counter()
        make_variants_table(benchmark, functions, a.lexicon, variants_settings(**settings), seed, a.workers, path)
        print(f"variants stage, {name}: {time.perf_counter() - start:.1f} s", flush=True)
        return path

    tables["today (n = 10, no matching)"] = read_records(stage("today", variants))
    model = ModelSettings(
        path=selection_model, dtype="float32", device="cpu", max_length=config["base_model"]["max_length"]
    )
    matching = NaturalSettings(
        n=n, natural=NaturalRule(rule="nearest"), tokens=TokenBatch(batch["batch_size"], batch.get("token_budget"))
    )
    pools = {}
    for pool in a.pool:
        settings = {**variants, "natural": {"enabled": True, "pool": pool, "rule": "nearest", "model": None}}
        path = stage(f"pool-{pool}", settings)
        pools[pool] = (settings, read_records(path))
        start = time.perf_counter()
        select_natural_variants(path, model, matching, seed, a.out / f"natural-{pool}.parquet")
        print(f"selection under {selection_model}, pool {pool}: {time.perf_counter() - start:.1f} s", flush=True)
        tables[f"matched, pool {pool}, selection = ref model"] = read_records(a.out / f"natural-{pool}.parquet")
    texts = sorted(
        {
            (r["sample_id"], r["text"])
            for rows in [*tables.values(), *(p[1] for p in pools.values())]
            for r in rows
            if r["valid"] and r["kind"] in ("original", "rename")
        }
    )
    start = time.perf_counter()
    base = dict(zip(texts, _losses(base_model, [t for _, t in texts], batch["batch_size"]), strict=True))
    print(f"base-model pass over {len(texts)} texts: {time.perf_counter() - start:.1f} s", flush=True)
    for pool, (settings, rows) in pools.items():
        losses = {
            (r["sample_id"], r["variant_id"]): base[(r["sample_id"], r["text"])]
            for r in rows
            if r["valid"] and r["kind"] in ("original", "rename")
        }
        for r in rows:  # an original that fails its tests still needs a loss to be passed over
            losses.setdefault((r["sample_id"], r["variant_id"]), np.nan)
        tables[f"contrast: pool {pool}, selection = BASE (not held out)"] = choose_natural(
            rows, losses, settings["n"], settings["natural"]["rule"], seed, VARIANT_SETS
        )
    results = [_summary(name, rows, base, kept, n, min_valid) for name, rows in tables.items()]
    for r in results:
        print(_line(r))
    (a.out / "summary.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
