"""Whether a hub id a config names can be fetched, asked while Snakemake
plans: a local path mistyped in the shape of a hub id (``models/my-model``)
otherwise passes planning and fails at its fetch job, with the hub client's
"check your internet connection" and no word of the missing directory."""

from __future__ import annotations

import os
from pathlib import Path

HUB_TIMEOUT_S = 10.0  # one metadata request per hub model at planning


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE) or os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")


def _cached(repo_id: str, hub_cache: Path) -> bool:
    """In the pipeline's fetch folder (``cluster.hub_cache``, one copy per
    revision) or in the Hugging Face cache."""
    from huggingface_hub import try_to_load_from_cache

    folder = repo_id.replace("/", "--")
    if hub_cache.is_dir() and any(
        (p / "config.json").is_file() for p in hub_cache.iterdir() if p.name.partition("@")[0] == folder
    ):
        return True
    return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)


def hub_problem(repo_id: str, hub_cache: Path) -> str | None:
    """Why ``repo_id`` cannot be fetched (offline and in no cache, no such
    repository, the hub not answering), or None where it can."""
    if _cached(repo_id, hub_cache):
        return None
    if _offline():
        return f"HF_HUB_OFFLINE is set and it is in no local cache ({hub_cache}, the Hugging Face cache)"
    from huggingface_hub import model_info
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        model_info(repo_id, timeout=HUB_TIMEOUT_S)
    except GatedRepoError:
        return None  # it exists; the fetch job says whether the token opens it
    except RepositoryNotFoundError:
        return "the hub has no such repository (or it is private and no token is set)"
    except Exception as err:  # noqa: BLE001 - any failure to reach the hub is the message
        return f"the hub did not answer ({type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''})"
    return None
