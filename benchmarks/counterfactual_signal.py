"""Members' against non-members' counterfactual delta, with a bootstrap CI of
the difference, and the counterfactual memorisation counts, for one
counterfactual run (docs/results.md, "A real functional-memorisation signal").

    .venv/bin/python benchmarks/counterfactual_signal.py results/counterfactual-signal [--similarity-dir DIR]
    .venv/bin/python benchmarks/counterfactual_signal.py results/counterfactual-signal --sweep 20 30 [--overlay FILE]

``--sweep``: listed epochs of config/experiments/counterfactual-signal.yaml's
grid through the counterfactual stage, not only the one its loss rule
chose: per epoch, Snakemake runs the stage (``--cores``) with the experiment,
``--overlay`` (another grid setting: its ``train`` keys; the adapters are
retrained when they change) and a one-line overlay setting
``counterfactual.epoch``; its tables are kept under
``<run>/sweep/<overlay name or "chosen">/epoch-N/`` and their figures printed.
The run's own outputs are then those of the last epoch listed.

Reads ``counterfactual/<benchmark>/similarity*.parquet`` (today's text table
and every ``similarity_<family>.parquet`` in the long format every similarity family writes; a
row whose delta is null is left out and counted), the split of
``filter/<benchmark>.samples.parquet`` (ReCaLL's prefix samples excluded, as
the aggregate does) and the training log of the counterfactual target's run.
The CI resamples members and non-members independently (the groups hold
different samples, so no pairing exists): seeded, percentile, 95%.
Prints Markdown."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from scipy.stats import bootstrap

from leaktrace.data.split import RECALL_PREFIX

TAU = 0.75  # the paper's threshold for a memorised generation (Table 2)
GROUPS = ("member", "non-member")


def split_of(samples: Path) -> dict[str, str]:
    rows = pq.read_table(samples, columns=["sample_id", "kept", "split", "fold"]).to_pylist()
    return {r["sample_id"]: r["split"] for r in rows if r["kept"] and r["fold"] != RECALL_PREFIX}


def similarity_rows(paths: list[Path]) -> list[dict]:
    columns = ["sample_id", "metric", "target", "reference", "delta"]
    return [r for p in paths for r in pq.read_table(p, columns=columns).to_pylist()]


def delta_difference(
    members: np.ndarray, non_members: np.ndarray, resamples: int, seed: int
) -> tuple[float, float, float]:
    """mean(members) - mean(non-members) and its percentile 95% bootstrap CI,
    each group resampled with replacement on its own."""
    result = bootstrap(
        (members, non_members),
        lambda a, b, axis: a.mean(axis) - b.mean(axis),
        paired=False,
        vectorized=True,
        n_resamples=resamples,
        method="percentile",
        confidence_level=0.95,
        random_state=np.random.default_rng(seed),
    )
    return (
        float(members.mean() - non_members.mean()),
        float(result.confidence_interval.low),
        float(result.confidence_interval.high),
    )


def metric_table(rows: list[dict], split: dict[str, str], resamples: int, seed: int) -> list[str]:
    lines = [
        "| metric | n (m / nm) | member target / reference / Δ | non-member target / reference / Δ "
        "| Δ member − non-member [95% CI] | target ≥ 0.75 > reference (m / nm) | left out (null) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for metric in sorted({r["metric"] for r in rows}):
        sel = [r for r in rows if r["metric"] == metric and r["sample_id"] in split]
        ok = [r for r in sel if r["delta"] is not None]
        by = {g: [r for r in ok if split[r["sample_id"]] == g] for g in GROUPS}
        if not all(by.values()):
            lines.append(
                f"| {metric} | {len(by['member'])} / {len(by['non-member'])} | – | – | – | – | {len(sel) - len(ok)} |"
            )
            continue
        deltas = {g: np.array([r["delta"] for r in by[g]]) for g in GROUPS}
        diff, low, high = delta_difference(deltas["member"], deltas["non-member"], resamples, seed)
        means = {
            g: " / ".join(f"{np.mean([r[k] for r in by[g]]):.3f}" for k in ("target", "reference", "delta"))
            for g in GROUPS
        }
        # counterfactually memorised: the target reproduces (>= tau), the reference does not
        memorised = {g: sum(r["target"] >= TAU and r["reference"] < TAU for r in by[g]) for g in GROUPS}
        lines.append(
            f"| {metric} | {len(by['member'])} / {len(by['non-member'])} | {means['member']} | {means['non-member']} "
            f"| {diff:+.3f} [{low:+.3f}, {high:+.3f}] | {memorised['member']} / {memorised['non-member']} "
            f"| {len(sel) - len(ok)} |"
        )
    return lines


def loss_table(training_log: Path) -> list[str]:
    rows = pq.read_table(training_log, columns=["epoch", "loss"]).to_pylist()
    return ["| epoch | mean training loss |", "| --- | --- |"] + [f"| {r['epoch']} | {r['loss']:.3f} |" for r in rows]


EXPERIMENT = "config/experiments/counterfactual-signal.yaml"


def run_epoch(run: Path, benchmark: str, epoch: int, setting: Path | None, cores: int) -> Path:
    """The counterfactual stage at ``epoch`` (Snakemake: the experiment, the
    ``setting`` overlay, an epoch overlay); its tables copied to
    ``<run>/sweep/<setting>/epoch-<epoch>/``."""
    stage = run / "counterfactual" / benchmark
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as overlay:
        overlay.write(f"counterfactual: {{epoch: {epoch}}}\n")
        overlay.flush()
        configs = [EXPERIMENT, *([str(setting)] if setting else []), overlay.name]
        subprocess.run(
            [
                sys.executable,
                "-m",
                "snakemake",
                "--cores",
                str(cores),
                "--configfile",
                *configs,
                "--",
                str(stage / "similarity.parquet"),
            ],
            check=True,
        )
    out = run / "sweep" / (setting.stem if setting else "chosen") / f"epoch-{epoch}"
    out.mkdir(parents=True, exist_ok=True)
    for name in ("generations.parquet", "similarity.parquet"):
        shutil.copyfile(stage / name, out / name)
    return out


def report(run: Path, sim_dir: Path, a: argparse.Namespace) -> None:
    paths = sorted(sim_dir.glob("similarity*.parquet"))
    if not paths:
        raise SystemExit(f"no similarity*.parquet under {sim_dir}")
    split = split_of(run / "filter" / f"{a.benchmark}.samples.parquet")
    print(f"Similarity tables: {', '.join(str(p) for p in paths)}\n")
    print("\n".join(metric_table(similarity_rows(paths), split, a.resamples, a.seed)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="results/<run>")
    parser.add_argument("--benchmark", default="humaneval")
    parser.add_argument("--similarity-dir", type=Path, help="default: <run>/counterfactual/<benchmark>")
    parser.add_argument(
        "--training-log", type=Path, help="default: <run>/train/<benchmark>/ratio-0/seed-0/training_log.parquet"
    )
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sweep", type=int, nargs="+", metavar="EPOCH", help="run the stage at these epochs first")
    parser.add_argument(
        "--overlay", type=Path, help="--sweep with this config file over the experiment (another grid setting)"
    )
    parser.add_argument("--cores", type=int, default=1, help="Snakemake's --cores for --sweep")
    a = parser.parse_args()
    for epoch in a.sweep or ():
        print(f"\n## epoch {epoch}\n", flush=True)
        report(a.run, run_epoch(a.run, a.benchmark, epoch, a.overlay, a.cores), a)
    if not a.sweep:
        report(a.run, a.similarity_dir or a.run / "counterfactual" / a.benchmark, a)
    log = a.training_log or a.run / "train" / a.benchmark / "ratio-0" / "seed-0" / "training_log.parquet"
    if log.exists():
        print(f"\nTraining log {log}:\n")
        print("\n".join(loss_table(log)))


if __name__ == "__main__":
    main()
