"""The config a person-facing command would run, merged and checked before
Snakemake starts, with the functions rules/common.smk checks it with: a
config error ends the command with its planning message and exit status 2,
not a Snakemake traceback, and a test checks it without a workflow."""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path

from leaktrace.configuration import drop_removed_entries, validate_config
from leaktrace.models.hub_reach import hub_problem
from leaktrace.plan_checks import check_plan


def merged_config(overlay: dict, root: Path) -> dict:
    """``root``'s config/config.yaml with ``overlay`` laid over it as Snakemake lays a
    ``--configfile`` (mappings merged key by key), removed entries dropped,
    the schema's defaults filled in; a schema failure is a ValueError."""
    import yaml
    from snakemake.utils import update_config, validate

    config = yaml.safe_load((root / "config" / "config.yaml").read_text())
    update_config(config, copy.deepcopy(overlay))
    drop_removed_entries(config)
    validate_config(config, str(root / "config" / "schema.yaml"), validate)
    return config


def check_overlay(overlay: dict, root: Path, fetching: bool) -> dict:
    """The merged config, after every planning check, run from the
    repository ``root`` as Snakemake runs them; ``fetching`` (a run, not a dry
    run): hub ids are checked to be fetchable. Raises ValueError (a
    :class:`~leaktrace.plan_checks.PlanError` for the planning checks)."""
    with contextlib.chdir(root):
        config = merged_config(overlay, root)
        hub_cache = Path(config["cluster"]["hub_cache"])
        check_plan(config, hub_problem=(lambda repo: hub_problem(repo, hub_cache)) if fetching else None)
    return config
