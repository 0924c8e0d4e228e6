"""serve: a local model behind an OpenAI-compatible HTTP server
(:mod:`leaktrace.models.serve`), for the ``openai`` backend's clients."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from leaktrace.errors import InputError
from leaktrace.models.backend import ModelSpec


def serve_model(
    model: Annotated[str, "a local model directory or hub id"],
    /,
    adapter: Annotated[str | None, "a PEFT adapter directory"] = None,
    revision: Annotated[str | None, "a hub id's commit or tag"] = None,
    dtype: str = "float32",
    device: str = "cpu",
    name: Annotated[str | None, "the model name clients ask for (default: MODEL)"] = None,
    host: Annotated[str, "loopback only unless --allow-remote"] = "127.0.0.1",
    port: Annotated[int, "0: any free port (the log says which)"] = 8000,
    allow_remote: Annotated[bool, "serve beyond this machine (a host that is not loopback)"] = False,
    chat_template: Annotated[Path | None, "a Jinja chat template for a tokenizer without one"] = None,
    api_key_env: Annotated[str | None, "require the key held by this environment variable"] = None,
    max_length: Annotated[int | None, "cap on tokens per sequence"] = None,
) -> None:
    """Serve a model (and adapter) over HTTP as an OpenAI-compatible server
    until interrupted; the log says ``serving NAME at URL``."""
    from leaktrace.models.serve import serve

    spec = ModelSpec(model, adapter=adapter, dtype=dtype, device=device, revision=revision)
    try:
        serve(
            spec,
            name=name,
            host=host,
            port=port,
            allow_remote=allow_remote,
            chat_template=chat_template.read_text(encoding="utf-8") if chat_template else None,
            api_key_env=api_key_env,
            max_length=max_length,
        )
    except ValueError as err:
        raise InputError("serve", None, str(err)) from None
