"""How many names a variant renames (``variants.names_per_variant``): the null check and detection, side by side.

Every name a variant changes moves it away from a convention its original
follows, so with every name renamed at once a model that never
saw the benchmark finds the original the most natural text of its set far
more often than 1 / (n + 1). This script measures, on one finished run, the
run's own sets against sets drawn with ``names_per_variant`` k (each variant
renames k names drawn at random; ``all``: every name), drawn and validated by
the variants stage itself, with the run's seed and lexicon:

- the null check under the BASE model (never saw the benchmark): the share
  of samples whose original has a lower per-token loss than all its n
  variants, with its Wilson interval, beside the mean of 1 / (n_i + 1);
- detection under each TARGET adapter: ROC AUC over members and non-members
  of SrDetection gray-box's gap (min variant loss - original loss) and of the
  mean gap (Neighbor's form), with a paired bootstrap interval of each
  setting's AUC minus the run's own (same resampled samples for all).

Samples: the run's split (members and non-members, not ReCaLL's prefix)
that have at least ``--min-valid`` valid variants in every setting, so all
settings are compared on the same samples. Nothing here chooses a setting:
it reports each one asked for.

    .venv/bin/python benchmarks/names_per_variant.py results/default \\
        --target results/default/train/humaneval/ratio-5/seed-0/adapter/epoch-5 --names all 2 [--out OUT]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from sklearn.metrics import roc_auc_score
from snakemake.utils import update_config

from leaktrace.artifacts import read_records
from leaktrace.evaluate.null_check import null_check
from leaktrace.models.backend import ModelSpec
from leaktrace.stages.variants import make_variants_table
from leaktrace.variants.natural import variants_settings

ROOT = Path(__file__).resolve().parents[1]


def configured(path: Path) -> dict:
    """The config as a run sees it: `path` laid over config/config.yaml (an overlay names only what it changes)."""
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    update_config(config, yaml.safe_load(path.read_text()) or {})
    return config


def drawn_sets(run: Path, benchmark: str, variants: dict, k: int | None, seed: int, workers: int, folder: Path) -> dict:
    """sample_id -> the texts of its valid detector variants, drawn and validated by the variants stage
    itself with names_per_variant k, None for every name (its seed, lexicon, sandbox and tau_t composition; no
    untransformed set)."""
    own = variants.get("test_cases")  # a run from before tau_t was composed: an integer, renaming-only sets
    test_cases = {**own, "untransformed": 0} if isinstance(own, dict) else {"compose": False, "untransformed": 0}
    settings = variants_settings(**{**variants, "test_cases": test_cases, "names_per_variant": k})
    output = folder / f"{benchmark}.names-{k}.parquet"
    make_variants_table(
        run / "data" / "benchmarks" / f"{benchmark}.parquet",
        run / "filter" / f"{benchmark}.functions.parquet",
        run / "variants" / "lexicon.parquet",
        settings,
        seed,
        workers,
        output,
    )
    sets: dict[str, list[str]] = {}
    for r in read_records(output):
        if r["kind"] == "rename" and r["valid"]:
            sets.setdefault(r["sample_id"], []).append(r["text"])
    return sets


def losses(model: str, adapter: str | None, texts: list[str], batch_size: int) -> dict[str, float]:
    from leaktrace.models.hf import HFLanguageModel

    lm = HFLanguageModel(ModelSpec(name_or_path=model, adapter=adapter), batch_size=batch_size, progress=False)
    unique = sorted(set(texts))
    stats = lm.score(unique, moments=[False] * len(unique))
    return {text: -float(np.mean(s.logprobs, dtype=np.float64)) for text, s in zip(unique, stats, strict=True)}


def gaps(sets: dict[str, list[str]], originals: dict[str, str], loss: dict[str, float], samples: list[str]):
    """Per sample: (min gap, mean gap) of its variants' losses over its original's."""
    out = {}
    for sample_id in samples:
        deltas = np.array([loss[t] for t in sets[sample_id]]) - loss[originals[sample_id]]
        out[sample_id] = (float(deltas.min()), float(deltas.mean()))
    return out


def paired_auc_difference(y: np.ndarray, a: np.ndarray, b: np.ndarray, resamples: int, seed: int):
    """AUC(a) - AUC(b) over the same bootstrap resamples of the samples: point, 2.5% and 97.5% quantiles."""
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(resamples):
        i = rng.integers(0, len(y), len(y))
        if y[i].min() == y[i].max():
            continue
        diffs.append(roc_auc_score(y[i], a[i]) - roc_auc_score(y[i], b[i]))
    return roc_auc_score(y, a) - roc_auc_score(y, b), *np.quantile(diffs, [0.025, 0.975])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path, help="a finished run's results folder, e.g. results/default")
    parser.add_argument("--benchmark", default="humaneval")
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument("--target", action="append", default=[], help="a target's LoRA adapter (repeat for seeds)")
    parser.add_argument(
        "--names",
        nargs="+",
        default=["all"],
        help="names_per_variant settings to compare with the run's own: integers, or all (every name)",
    )
    parser.add_argument(
        "--min-valid", type=int, default=3, help="valid variants a sample needs (split.min_valid_variants)"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument(
        "--out", type=Path, default=None, help="folder for per-sample values (names_per_variant.parquet)"
    )
    args = parser.parse_args()
    config = configured(args.config)
    seed, n, base = config["seed"], config["variants"]["n"], config["base_model"]["path"]

    own = str(config["variants"].get("names_per_variant") or "all")  # the run's own sets, the comparisons' reference
    table = list(read_records(args.run / "variants" / f"{args.benchmark}.parquet"))
    originals = {r["sample_id"]: r["text"] for r in table if r["kind"] == "original" and r["valid"]}
    settings = {own: {sid: [] for sid in originals}}
    for r in table:
        if (
            r["kind"] == "rename"
            and r["valid"]
            and r["sample_id"] in originals
            and len(settings[own][r["sample_id"]]) < n
        ):
            settings[own][r["sample_id"]].append(r["text"])
    with tempfile.TemporaryDirectory() as folder:
        for k in dict.fromkeys(args.names):
            if k == own:
                continue
            started = time.perf_counter()
            settings[k] = drawn_sets(
                args.run,
                args.benchmark,
                config["variants"],
                None if k == "all" else int(k),
                seed,
                args.workers,
                Path(folder),
            )
            print(f"names_per_variant {k}: drawn and validated in {time.perf_counter() - started:.0f} s", flush=True)

    split = {
        r["sample_id"]: r["split"]
        for r in read_records(args.run / "filter" / f"{args.benchmark}.samples.parquet")
        if r["split"] in ("member", "non-member") and r["fold"] != "recall-prefix"
    }
    samples = sorted(sid for sid in split if all(len(s.get(sid, [])) >= args.min_valid for s in settings.values()))
    y = np.array([split[sid] == "member" for sid in samples], dtype=int)
    texts = [originals[sid] for sid in samples] + [t for s in settings.values() for sid in samples for t in s[sid]]
    print(
        f"{len(samples)} samples ({int(y.sum())} members) with >= {args.min_valid} valid variants in every setting;"
        f" {len(set(texts))} texts to score per model",
        flush=True,
    )

    rows = []
    models = [("base", None)] + [(f"target {i}", adapter) for i, adapter in enumerate(args.target)]
    for label, adapter in models:
        started = time.perf_counter()
        loss = losses(base, adapter, texts, args.batch_size)
        print(f"{label}: scored in {time.perf_counter() - started:.0f} s", flush=True)
        for name, sets in settings.items():
            for sid, (gap, mean_gap) in gaps(sets, originals, loss, samples).items():
                rows.append(
                    {
                        "model": label,
                        "adapter": adapter,
                        "names_per_variant": name,
                        "sample_id": sid,
                        "member": split[sid] == "member",
                        "n_variants": len(sets[sid]),
                        "gap": gap,
                        "mean_gap": mean_gap,
                    }
                )
    frame = pd.DataFrame(rows)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(args.out / "names_per_variant.parquet", index=False)

    print("\nNull check under the base model (original below all its variants; exchangeable: mean 1/(n_i+1))")
    print(f"{'names per variant':<18}{'samples':>8}{'mean n':>8}{'rate':>8}{'Wilson 95%':>18}{'1/(n+1)':>9}  verdict")
    for name in settings:
        part = frame[(frame.model == "base") & (frame.names_per_variant == name)]
        check = null_check(
            dict(zip(part.sample_id, part.gap > 0, strict=True)),
            dict(zip(part.sample_id, part.n_variants, strict=True)),
        )
        interval = f"[{check['rate_low']:.3f}, {check['rate_high']:.3f}]"
        print(
            f"{name:<18}{check['n_samples']:>8}{check['mean_variants']:>8.1f}{check['rate']:>8.3f}"
            f"{interval:>18}{check['expected_rate']:>9.3f}  {check['verdict']}"
        )
    for label, _ in models[1:]:
        print(
            f"\n{label}: ROC AUC (members vs non-members); difference from the run's own ({own}) with a paired"
            " bootstrap 95% interval"
        )
        print(f"{'names per variant':<18}{'gap AUC':>9}{'  diff [95%]':<28}{'mean gap AUC':>13}{'  diff [95%]':<28}")
        reference = frame[(frame.model == label) & (frame.names_per_variant == own)].set_index("sample_id").loc[samples]
        for name in settings:
            part = frame[(frame.model == label) & (frame.names_per_variant == name)].set_index("sample_id").loc[samples]
            cells = []
            for column in ("gap", "mean_gap"):
                auc = roc_auc_score(y, part[column])
                if name == own:
                    cells.append(f"{auc:>9.3f}{'':<28}")
                else:
                    d, lo, hi = paired_auc_difference(
                        y, part[column].to_numpy(), reference[column].to_numpy(), args.resamples, seed
                    )
                    cells.append(f"{auc:>9.3f}  {d:+.3f} [{lo:+.3f}, {hi:+.3f}]".ljust(37))
            print(f"{name:<18}" + "".join(cells))


if __name__ == "__main__":
    main()
