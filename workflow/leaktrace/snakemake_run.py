"""The pipeline run in process through Snakemake's API (``snakemake.api``),
as ``snakemake --cores N --configfile FILE [-n]`` from the repository root
would run it, for the person-facing commands: they need to know whether it
completed, then read its verdict, rather than parse a console."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE_REPOSITORY = Path(__file__).resolve().parents[2]  # the clone this package was installed from


def workflow_root() -> Path:
    """The repository a command runs, whose results/ it writes: the current
    directory where it holds the Snakefile and config/ (a clone, run from
    its root as Snakemake is), else the clone the package was installed from."""
    here = Path.cwd()
    if (here / "Snakefile").is_file() and (here / "config" / "schema.yaml").is_file():
        return here
    return PACKAGE_REPOSITORY


@dataclass(frozen=True)
class RunSettings:
    """The Snakemake flags the commands expose."""

    root: Path  # the Snakefile's folder: rules read paths relative to it
    configfile: Path
    cores: int = 1
    dry_run: bool = False


def run_pipeline(settings: RunSettings) -> bool:
    """Plan and run (or only plan, printing Snakemake's dry-run summary) the
    workflow under ``settings.configfile``; Snakemake's own messages go to
    stderr, a dry run's plan to stdout. True where every job ran (or had
    run), or the plan was printed."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        ExecutionSettings,
        OutputSettings,
        ResourceSettings,
    )

    argv = sys.argv
    # rules/common.smk reads a dry run from the command line, as Snakemake's own
    sys.argv = [argv[0], "--dry-run"] if settings.dry_run else [argv[0]]
    try:
        with SnakemakeApi(OutputSettings(dryrun=settings.dry_run, stdout=settings.dry_run)) as api:
            try:
                workflow = api.workflow(
                    resource_settings=ResourceSettings(cores=settings.cores),
                    config_settings=ConfigSettings(configfiles=[settings.configfile.resolve()]),
                    snakefile=settings.root / "Snakefile",
                    workdir=settings.root,
                )
                workflow.dag(DAGSettings()).execute_workflow(
                    executor="local",
                    pseudo_executor="dryrun" if settings.dry_run else None,
                    execution_settings=ExecutionSettings(),
                )
            except Exception as err:  # noqa: BLE001 - Snakemake's errors have no common base; each is reported
                api.print_exception(err)
                return False
    finally:
        sys.argv = argv
    return True
