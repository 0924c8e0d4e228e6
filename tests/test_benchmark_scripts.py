"""Every speed script under benchmarks/ runs, in a smoke mode: the smallest
inputs its flags allow, exit status 0, its figure line printed. A script the
README lists rots as soon as the code under it moves unless something runs
it; its figures themselves are measured on an idle machine, not here.

The scripts run as forks of one interpreter that imported PyTorch and the
rest once (tests/script_runner.py), from the root of a fresh copy of the
repository; those that read a finished run read the micro run's results
(tests/conftest.py, ``micro_run``). A script without an entry in ``SMOKE``
fails ``test_every_script_has_a_smoke_run``: a new script needs one."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from repo_copy import REPO, fresh_copy

RUN = "{run}"  # replaced by the micro run's results folder (results/micro in its copy)


@dataclass(frozen=True)
class Smoke:
    argv: tuple[str, ...]  # after the script's path; RUN is the micro run's results folder
    figure: str  # a regular expression the output must match: the script's figure line
    uses_run: bool = False  # reads a finished run: runs in the micro run's copy
    in_repository: bool = False  # reads the repository's git history: runs from the repository itself
    slow: bool = (
        False  # its smoke run takes over 5 s: in `make test-all` (marked slow), to keep make test's share <= 60 s
    )


SMOKE = {
    "backend_overhead.py": Smoke(("--prompts", "2", "--tokens", "2", "--concurrency", "1"), r"prompts/s"),
    "check_cfamily_devset.py": Smoke(("--out", "smoke-verify"), r"held-out F1", slow=True),  # 12 s on 2026-11-28
    "counterfactual_signal.py": Smoke(
        (RUN, "--resamples", "20"),
        r"\| metric \| n \(m / nm\) \|",
        uses_run=True,
        slow=True,  # 141 s on 2026-11-28
    ),
    "execution_speed.py": Smoke(("--pairs", "2", "--workers", "1"), r"ms per pair"),
    "execution_steps.py": Smoke(
        ("--samples", "HumanEval/0", "--workers", "1", "--top", "2"), r"\d+ calls of 1 ground truths"
    ),
    "fork_server.py": Smoke(("--target", "lexicon"), r"ratio \(without / with\): \d", in_repository=True, slow=True),
    "generation_throughput.py": Smoke(("--prompts", "2", "--new-tokens", "2", "--batch-size", "2"), r"new tokens/s"),
    "input_memory.py": Smoke(("--skip-mb", "1", "--chunk-mb", "1"), r"peak RSS MB", slow=True),
    "leakage_speed.py": Smoke(("--naive-files", "2", "--benchmarks", "2", "--files", "20"), r"files/s/core"),
    "lora_padding.py": Smoke(
        ("--mix", f"{RUN}/train/humaneval/ratio-1/mix.parquet", "--epochs", "1"),
        r"length-grouped / random: wall time [\d.]+",
        uses_run=True,
        slow=True,  # 37 s on 2026-11-28
    ),
    "model_threads.py": Smoke(("--texts", "2", "--new-tokens", "2"), r"side by side is [\d.]+x faster", slow=True),
    "names_per_variant.py": Smoke(
        (
            RUN,
            "--config",
            "config/micro.yaml",
            "--min-valid",
            "1",
            "--names",
            "1",
            "--resamples",
            "20",
            "--workers",
            "1",
        ),
        r"Null check under the base model",
        uses_run=True,
        slow=True,  # 35 s on 2026-11-28
    ),
    "natural_variants.py": Smoke(
        (
            f"{RUN}/variants/lexicon.parquet",
            f"{RUN}/filter/humaneval.functions.parquet",
            "smoke-natural",
            "--pool",
            "10",
            "--limit",
            "2",
            "--workers",
            "1",
        ),
        r"original beats all +\d+ = [\d.]+ Wilson",
        uses_run=True,
        slow=True,
    ),
    "renamed_channel.py": Smoke(
        ("--stdlib-files", "20", "--short"), r"cost of the renamed channel: shard job x[\d.]+", slow=True
    ),
    "scan_cost.py": Smoke(("--files", "20", "--presets", "default"), r"files per CPU second", slow=True),  # 14 s
    "scan_phases.py": Smoke(("--files", "20"), r"\| whole job \| [\d.]+ \| 100% \|", slow=True),
    "sandbox_speed.py": Smoke(("--runs", "2"), r"runs/s", in_repository=True),
    "scan_kinds.py": Smoke(
        ("--stdlib-files", "5", "--samples", "2"), r"precision of all duplicate pairs: \d+/\d+", slow=True
    ),
    "scoring_speed.py": Smoke(("--naive-samples", "2", "--limit", "4"), r"\(a\) / \(b\) = [\d.]+x faster"),
    "scoring_throughput.py": Smoke(("--repeat", "1", "--limit", "8"), r"tokens/s", slow=True),
    "stdio_speed.py": Smoke(("--cases", "2", "--runs", "1"), r"ms a problem"),
    "structural_speed.py": Smoke(("--pairs", "4", "--apted-pairs", "2"), r"ms wall", slow=True),
    "train_throughput.py": Smoke(("--steps", "2", "--seq-len", "32", "--batch-size", "2"), r"tokens/s", slow=True),
    "variant_generators.py": Smoke(
        (f"{RUN}/variants/lexicon.parquet", "smoke-generators", "--limit", "2"),
        r"exchangeable",
        uses_run=True,
        slow=True,
    ),
    "verify_human_labels.py": Smoke(("--folds", "2"), r"cross-validated", slow=True),
    "verify_cfamily_cv.py": Smoke(
        ("--folds", "2", "--seeds", "0", "--bootstrap", "20"), r"Hard cases .* MCC", slow=True
    ),
    "verify_speed.py": Smoke(("--pairs", "30", "--rounds", "1"), r"pairs/s/core"),
    "verify_devset.py": Smoke(
        ("--cache", "smoke-verify", "--limit", "20", "--workers", "1"), r"held-out half", slow=True
    ),
}
# Scripts that need hardware the tests never have: their own checks run where it is (pytest -m gpu).
OTHER_HARDWARE = {"gpu_checks.sh"}
TIMEOUT_S = 300


def test_every_script_has_a_smoke_run():
    scripts = {p.name for p in (REPO / "benchmarks").iterdir() if p.suffix in (".py", ".sh")}
    assert sorted(scripts - set(SMOKE) - OTHER_HARDWARE) == [], "add a smoke run for each new script to SMOKE"
    assert sorted(set(SMOKE) - scripts) == [], "SMOKE names scripts that do not exist"


class Runner:
    """tests/script_runner.py, started once: each script a fork of it."""

    def __init__(self):
        self.process = subprocess.Popen(
            [sys.executable, str(REPO / "tests" / "script_runner.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        assert json.loads(self.process.stdout.readline()) == {"ready": True}

    def run(self, script: Path, argv: list[str], cwd: Path, output: Path) -> int:
        request = {"script": str(script), "argv": argv, "cwd": str(cwd), "output": str(output), "timeout_s": TIMEOUT_S}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())["status"]

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def runner():
    started = Runner()
    yield started
    started.close()


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    return fresh_copy(tmp_path_factory.mktemp("scripts"))


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.slow) if SMOKE[name].slow else name for name in sorted(SMOKE)]
)
def test_script_runs_in_smoke_mode(name, runner, copy, request, tmp_path):
    smoke = SMOKE[name]
    where = REPO if smoke.in_repository else copy
    argv = list(smoke.argv)
    if smoke.uses_run:
        where, _ = request.getfixturevalue("micro_run")
        argv = [a.replace(RUN, "results/micro") for a in argv]
    output = tmp_path / "output.txt"
    status = runner.run(where / "benchmarks" / name, argv, where, output)
    printed = output.read_text()
    assert status == 0, f"{name} {' '.join(argv)} exited {status}:\n{printed[-3000:]}"
    assert re.search(smoke.figure, printed), (
        f"{name} printed no figure line matching {smoke.figure!r}:\n{printed[-3000:]}"
    )
