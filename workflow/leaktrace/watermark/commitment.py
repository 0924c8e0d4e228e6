"""The commitment a maintainer publishes beside the release.

``commitment.json`` holds the SHA-256 of the secret, of the private forms
table and of the published file, with what the test needs to read the
release back (its layout). Published at release time, it fixes the choice:
a later secret, forms table or release file that hashes otherwise is not
the one committed to, and the test refuses it. The secret's hash reveals
nothing of 256 random bits; the forms table's reveals no form."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from leaktrace.errors import InputError

SCHEME = "leaktrace randomized publication v1"
COMMITTED = {"seed_sha256": "the secret", "forms_sha256": "the forms table", "published_sha256": "the published file"}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def secret_sha256(secret: bytes) -> str:
    return hashlib.sha256(secret).hexdigest()


def write_commitment(path: Path, *, secret: bytes, forms: Path, published: Path, details: dict) -> dict:
    commitment = {
        "scheme": SCHEME,
        "seed_sha256": secret_sha256(secret),
        "forms_sha256": sha256_of(forms),
        "published_sha256": sha256_of(published),
        **details,
    }
    path.write_text(json.dumps(commitment, indent=2, sort_keys=True) + "\n")
    return commitment


def read_commitment(path: Path) -> dict:
    try:
        commitment = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise InputError(str(path), None, f"cannot read the commitment: {err}") from None
    missing = [key for key in ("scheme", *COMMITTED) if key not in commitment]
    if missing or commitment["scheme"] != SCHEME:
        raise InputError(str(path), None, f"not a commitment of this scheme ({SCHEME}): missing {missing}")
    return commitment


def check_commitment(
    commitment: dict, commitment_path: Path, *, secret: bytes, secret_file: Path, forms: Path, published: Path
) -> None:
    """Refuse a secret, forms table or published file that differs from what ``commitment`` committed to."""
    found = {
        "seed_sha256": (secret_sha256(secret), secret_file),
        "forms_sha256": (sha256_of(forms), forms),
        "published_sha256": (sha256_of(published), published),
    }
    for key, (digest, path) in found.items():
        if digest != commitment[key]:
            raise InputError(
                str(path),
                None,
                f"differs from the commitment ({commitment_path}): {COMMITTED[key]} hashes "
                f"to SHA-256 {digest}, the commitment says {commitment[key]}; only the "
                "committed release can be tested",
            )
