"""A fresh copy of the repository, as a new user's clone has it: the files
git tracks (and new ones it does not ignore), with their modification times,
and the project's virtual environment linked in (never reinstalled)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The README's smoke run, run for real by the micro_run fixture.
MICRO_COMMAND = ".venv/bin/snakemake --cores all --configfile config/micro.yaml"
# The README's audit of the shipped tiny models on the shipped 20-problem fixture, run for real by the audit_run fixture.
AUDIT_COMMAND = ".venv/bin/snakemake --cores all --configfile config/experiments/audit.yaml"


def fresh_copy(destination: Path) -> Path:
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (destination / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)  # the environment running the tests
    return destination
