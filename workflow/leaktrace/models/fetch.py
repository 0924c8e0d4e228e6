"""A hub model copied once into a local directory (the submit host's job,
rules/cluster.smk), so that jobs on nodes without internet load it as a local
path. Only what loading needs is copied: config, tokenizer, safetensors
weights (no pickled .bin, no other framework's files)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from huggingface_hub import snapshot_download
from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

from leaktrace.errors import InputError

PATTERNS = ["*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken", "*.py"]


def fetch_model(
    model: Annotated[str, "a hub id"], output_dir: Path, revision: Annotated[str | None, "a commit or tag"] = None
) -> Path:
    """Download the hub model ``model`` (at ``revision``) into ``output_dir``:
    config, tokenizer and safetensors weights only.

    config.json, the rule's output, exists once every file is in place."""
    try:
        snapshot_download(model, revision=revision, local_dir=output_dir, allow_patterns=PATTERNS)
    except RevisionNotFoundError:
        raise InputError(model, None, f"the hub repository has no revision {revision!r}") from None
    except RepositoryNotFoundError:
        raise InputError(model, None, "no such hub repository (or it is gated and no token is set)") from None
    if not (output_dir / "config.json").exists():
        raise FileNotFoundError(f"{model}: the hub repository has no config.json")
    return output_dir
