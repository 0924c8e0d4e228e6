"""What several test modules share: the repository's paths, Snakemake and the
CLI run as a test runs them, a micro config written for a test's own
directory, and the README's smoke run. Test modules import from here, never
from each other."""

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from filelock import FileLock
from repo_copy import MICRO_COMMAND, fresh_copy

from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path

REPO = Path(__file__).resolve().parents[1]
BASE_MODEL = REPO / "resources" / "models" / "leaktrace-tiny"
REFERENCE_MODEL = REPO / "resources" / "models" / "leaktrace-tiny-ref"


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    """Snakemake in ``workdir`` with the workdir's Snakefile when it is a copy
    of the repository, else with the repository's."""
    snakefile = workdir / "Snakefile" if (workdir / "Snakefile").exists() else REPO / "Snakefile"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--snakefile",
            str(snakefile),
            "--directory",
            str(workdir),
            "--cores",
            "2",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )


def session_root(tmp_path_factory) -> Path:
    """The directory every pytest-xdist worker of this test session sees (the
    parent of the workers' own base directories), or the session's base
    directory when the tests run in one process."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def shared_once(tmp_path_factory, name: str, make) -> Path:
    """``root/name``, built by ``make(directory)`` once for the whole session:
    the first worker to ask builds it under a file lock, the others wait and
    reuse it (pytest-xdist's documented pattern for session fixtures). A
    failed build is not retried by each worker: its error is kept and raised."""
    root = session_root(tmp_path_factory)
    directory, done, failed = root / name, root / f"{name}.done", root / f"{name}.failed"
    with FileLock(str(root / f"{name}.lock")):
        if failed.exists():
            pytest.fail(f"{name}, built by another worker, failed:\n{failed.read_text()}")
        if not done.exists():
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True)
            try:
                make(directory)
            except BaseException as error:
                failed.write_text(str(error)[-4000:])
                raise
            done.touch()
    return directory


def shared_plan(tmp_path_factory, copy: Path, argv: list[str]) -> subprocess.CompletedProcess:
    """A dry run's ``argv`` in ``copy``, run once per session and kept as
    JSON, so that tests asking for the same plan share it (the ``plan`` fixture)."""
    key = hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]

    def make(directory):
        result = subprocess.run(argv, cwd=copy, capture_output=True, text=True, timeout=600)
        (directory / "plan.json").write_text(json.dumps([result.returncode, result.stdout, result.stderr]))

    returncode, stdout, stderr = json.loads(
        (shared_once(tmp_path_factory, f"plan-{key}", make) / "plan.json").read_text()
    )
    return subprocess.CompletedProcess(argv, returncode, stdout, stderr)


def write_config(workdir: Path, overrides: dict, base: str = "micro.yaml") -> Path:
    config = yaml.safe_load((REPO / "config" / base).read_text())
    absolute_model_paths(config)
    _merge(config, overrides)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def absolute_model_paths(config: dict) -> None:
    """The shipped models by absolute path, for runs from another directory."""
    config["base_model"]["path"] = str(BASE_MODEL)
    config.setdefault("reference_model", {})["path"] = str(REFERENCE_MODEL)
    for model in config.get("audit", {}).get("models", []):
        if model.get("path") == "resources/models/leaktrace-tiny":
            model["path"] = str(BASE_MODEL)


def _merge(into: dict, update: dict) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "leaktrace", *args], capture_output=True, text=True, timeout=120)


def assert_one_line_error(result, *parts):
    """Exit status 2, one line on stderr naming what is wrong, no traceback
    (a scan's progress bar may come before it)."""
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("scan ")]
    assert len(lines) == 1 and "bad input: " in lines[0] and "Traceback" not in result.stderr, result.stderr
    for part in parts:
        assert part in lines[0]


TRAINING_TEXT = [s.code for s in load_humaneval(shipped_humaneval_path(), "h")[:40]]


def run_micro(workdir):
    """The README's smoke run (repo_copy.MICRO_COMMAND), literally,
    from the root of a fresh copy of the repository."""
    fresh_copy(workdir)
    result = subprocess.run(shlex.split(MICRO_COMMAND), cwd=workdir, capture_output=True, text=True, timeout=2400)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]


# A toy split. Calibration: members 0.9, 0.7, non-members 0.8, 0.4 (the
# control set). Evaluation: members 0.6, 0.5, 0.9, non-members 0.3, 0.56,
# 0.1 and 0.2 (flagged pre-exposed). A prefix sample scoring 100 must be in
# neither fold. Conformal p-values (1 + #{controls >= x}) / 3: 0.9 -> 1/3;
# 0.6, 0.5, 0.56 -> 2/3 (0.8 reaches them); 0.3, 0.1, 0.2 -> 1.
TOY = [  # sample, member, fold, pre-exposed, loss score
    ("c1", True, "calibration", False, 0.9),
    ("c2", True, "calibration", False, 0.7),
    ("c3", False, "calibration", False, 0.8),
    ("c4", False, "calibration", False, 0.4),
    ("e1", True, "evaluation", False, 0.6),
    ("e2", True, "evaluation", False, 0.5),
    ("e3", True, "evaluation", False, 0.9),
    ("e4", False, "evaluation", False, 0.3),
    ("e5", False, "evaluation", False, 0.56),
    ("e6", False, "evaluation", False, 0.1),
    ("e7", False, "evaluation", True, 0.2),
    ("p1", False, "recall-prefix", False, 100.0),
]
ALPHA = 0.7  # flags p <= 2/3: e1, e2, e3 and e5


def toy_split(flip_evaluation_labels=False):
    """The toy split's (scores, samples) tables: loss and two identical SrDetection instances."""
    samples = [
        {
            "sample_id": sid,
            "kept": True,
            "reason": None,
            "pre_exposed": pre,
            "split": "member" if member != (flip_evaluation_labels and fold == "evaluation") else "non-member",
            "fold": fold,
        }
        for sid, member, fold, pre, _ in TOY
    ]
    scores = []
    for sid, _, _, _, score in TOY:
        scores.append({"sample_id": sid, "method": "loss", "family": "loss", "score": score, "decision": None})
        for method in ("srdetection_graybox", "srdetection_graybox_n1"):  # identical: Δ 0 on every replicate
            scores.append(
                {
                    "sample_id": sid,
                    "method": method,
                    "family": "srdetection_graybox",
                    "score": score - 0.55,
                    "decision": score > 0.55,
                }
            )
    return scores, samples
