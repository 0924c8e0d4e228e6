"""The secret and the keyed choice of the published form.

The secret is 256 random bits from the operating system's cryptographic
generator (``secrets``), kept in a file only its owner can read (0600). The
form published for a problem is HMAC-SHA256(secret, problem id) reduced to
one of its m forms by rejection sampling: a digest at or above the largest
multiple of m below 2^256 is redrawn with a counter, so every form has
probability exactly 1/m. Anyone with the secret recomputes every choice;
without it the choices are unpredictable and independent of the forms, which
is what makes the published form's rank uniform under an unexposed model.

A testbed run must give the same bytes on every rerun, so the pipeline
derives its secret from the run seed (``testbed_secret``): reproducible,
hence no secret, and never for a real release."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from leaktrace.errors import InputError

SECRET_BYTES = 32
_DOMAIN = b"leaktrace watermark choice v1\x00"
_SPAN = 1 << 256


def new_secret() -> bytes:
    return secrets.token_bytes(SECRET_BYTES)


def testbed_secret(run_seed: int, source: str) -> bytes:
    """A secret derived from the run seed and the benchmark file's name: reproducible, so for the testbed only."""
    return hashlib.sha256(f"leaktrace watermark testbed secret/{run_seed}/{source}".encode()).digest()


def write_secret(path: Path, secret: bytes) -> None:
    """Create ``path`` (0600, never overwriting) holding the secret in hex."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InputError(str(path), None, "the secret file exists already; it is never overwritten") from None
    with os.fdopen(fd, "w") as handle:
        handle.write(secret.hex() + "\n")


def read_secret(path: Path) -> bytes:
    """The secret in ``path``: 64 hex digits (a trailing line break allowed)."""
    try:
        text = path.read_text().strip()
    except OSError as err:
        raise InputError(str(path), None, f"cannot read the secret: {err}") from None
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        secret = b""
    if len(secret) != SECRET_BYTES:
        raise InputError(str(path), None, f"not a secret: expected {2 * SECRET_BYTES} hex digits")
    return secret


def secret_for(path: Path, *, derived: bytes | None = None) -> bytes:
    """The release's secret: read from ``path`` when it exists, else a new
    random one (or ``derived``, the testbed's) written there. A ``derived``
    secret that differs from the file's is an error."""
    if path.exists():
        secret = read_secret(path)
        if derived is not None and secret != derived:
            raise InputError(str(path), None, "holds another secret than the one derived from the run seed")
        return secret
    secret = derived if derived is not None else new_secret()
    write_secret(path, secret)
    return secret


def choose(secret: bytes, problem_id: str, forms: int) -> int:
    """The published form's index in 0..forms-1, exactly uniform over keys."""
    if forms < 1:
        raise ValueError(f"problem {problem_id!r} has no form to choose from")
    limit = _SPAN - _SPAN % forms
    counter = 0
    while True:
        message = _DOMAIN + problem_id.encode() + b"\x00" + str(counter).encode()
        value = int.from_bytes(hmac.new(secret, message, hashlib.sha256).digest(), "big")
        if value < limit:
            return value % forms
        counter += 1
