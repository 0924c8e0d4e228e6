"""What a configured model is, for reruns: its resolved path and a cheap
fingerprint of its files, so that everything a model scored reruns when its
path or its files change, and never mixes an old model's outputs with a new
one's.

The fingerprint of a local model directory is, for every regular file at its
top level (links followed, hidden files left out; Hugging Face and PEFT
directories are flat): its name, size, modification time (nanoseconds) and
the SHA-256 of its first and last MiB (of the whole file when it is at most
2 MiB). Why each part: the size and the two MiB catch a different file
copied over the old one even where the copy kept the old mtime (``cp -p``,
``rsync -t``), and ``config.json`` / the tokenizer files are hashed whole;
the mtime catches what the two MiB cannot see, a weight file rewritten in
place with the same size whose change lies in the middle (a merged LoRA
fine-tune leaves the embeddings at the head and ``lm_head`` at the tail of
the file unchanged). The cost is a false alarm, not a wrong table: a
``touch`` or a copy without ``-p`` reruns the model's jobs. Reading is
bounded: 2 MiB a file, so a 30-shard 70B model costs 60 MiB at planning.

A hub id is identified by the id and the pinned revision only (its files
are fetched by a job into the hub cache, whose marker file the rules read);
a directory that does not exist yet has no fingerprint (``files: null``)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

EDGE_BYTES = 1 << 20  # the head and the tail hashed of each file


def _file_fingerprint(path: Path) -> dict:
    st = path.stat()
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        if st.st_size <= 2 * EDGE_BYTES:
            digest.update(fh.read())
        else:
            digest.update(fh.read(EDGE_BYTES))
            fh.seek(st.st_size - EDGE_BYTES)
            digest.update(fh.read(EDGE_BYTES))
    return {"name": path.name, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "edges_sha256": digest.hexdigest()}


def fingerprint(directory: str | Path) -> list[dict] | None:
    """The fingerprint of every regular top-level file of a model directory,
    sorted by name; None when the directory does not exist."""
    root = Path(directory)
    if not root.is_dir():
        return None
    files = sorted(p for p in root.iterdir() if not p.name.startswith(".") and p.is_file())
    return [_file_fingerprint(p) for p in files]


def model_identity(path: str, hub: bool = False, revision: str | None = None) -> dict:
    """A model's identity: a hub id with its revision, or a local directory's
    resolved path with its :func:`fingerprint`."""
    if hub:
        return {"hub_id": path, "revision": revision}
    return {"path": os.path.realpath(path), "files": fingerprint(path)}


def identity_json(identity: dict) -> str:
    """The identity as the rules compare it (a ``params`` value) and write it."""
    return json.dumps(identity, sort_keys=True)


def identity_key(path: str) -> str:
    """A file name for a model path: the path as written (not resolved, so
    two names of one directory are two identities, each checked), with
    ``/`` as ``--`` and every character outside ``[A-Za-z0-9_.@-]`` as ``_``."""
    return re.sub(r"[^A-Za-z0-9_.@-]", "_", path.replace("/", "--")) or "_"
