"""What a local input file holds, for reruns: the SHA-256 of its bytes, so
that a job reruns when the benchmark, control ids or corpus it read change,
and not when a file is only touched or copied.

Snakemake compares the digests at every planning (rules/inputs.smk), so they
are cached on disk by the file's resolved path, size, mtime, ctime and inode:
an unchanged file is stat'ed, never read again. The ctime catches a file
rewritten with its old mtime put back (``cp -p``, ``rsync -t``; nothing sets a
ctime back), the size and mtime the rest. A file changed (its ctime) less than
:data:`RACY_SECONDS` before it was hashed is not cached: a second write within
the file system's timestamp granularity could leave its stamp as it was
(git's "racily clean" files). A cache that cannot be read or written is
only slower."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from pathlib import Path

log = logging.getLogger(__name__)

BLOCK = 1 << 20  # bytes hashed at a time
RACY_SECONDS = 2  # a file modified this recently is hashed again next time
ANNOUNCE_BYTES = 1 << 30  # planning says so before it hashes this much


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


class DigestCache:
    """SHA-256 digests of files, kept in a JSON file between plannings
    (``path`` None: in memory only)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else None
        self.entries: dict[str, list] = {}
        self.dirty = False
        if self.path and self.path.is_file():
            try:
                self.entries = json.loads(self.path.read_text())
            except (OSError, ValueError):
                self.entries = {}

    def sha256(self, path: str | Path) -> tuple[int, str]:
        """The file's size and SHA-256 (links followed), from the cache when
        its stamp is unchanged."""
        real = os.path.realpath(path)
        st = os.stat(real)
        stamp = _stamp(st)
        cached = self.entries.get(real)
        if cached and cached[:4] == stamp:
            return st.st_size, cached[4]
        started = time.time_ns()
        digest = _sha256(real)
        if started - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_SECONDS * 10**9:
            self.entries[real] = [*stamp, digest]
            self.dirty = True
        else:
            self.entries.pop(real, None)
        return st.st_size, digest

    def announce(self, label: str, paths: list[str]) -> None:
        """Print one line when the files not in the cache add up to more than
        :data:`ANNOUNCE_BYTES`: planning is then reading them once."""
        todo = 0
        for path in paths:
            real = os.path.realpath(path)
            try:
                st = os.stat(real)
            except OSError:
                continue
            cached = self.entries.get(real)
            if not (cached and cached[:4] == _stamp(st)):
                todo += st.st_size
        if todo > ANNOUNCE_BYTES:
            print(
                f"leaktrace: hashing {todo / 2**30:.1f} GiB of {label} once (then cached by size and mtime)",
                file=sys.stderr,
            )

    def save(self) -> None:
        """Write the cache (atomically: a concurrent planning loses at most its own entries)."""
        if not (self.path and self.dirty):
            return
        live = {}
        for real, entry in self.entries.items():  # entries of files that still are as they were
            try:
                if _stamp(os.stat(real)) == entry[:4]:
                    live[real] = entry
            except OSError:
                continue
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(live, sort_keys=True))
            os.replace(tmp, self.path)
            self.dirty = False
        except OSError as err:
            log.warning("input digest cache %s not written: %s", self.path, err)


def file_entry(path: str | Path, cache: DigestCache, name: str | None = None) -> dict:
    """One file of an input: its name (as configured, or ``name``), size and SHA-256."""
    size, digest = cache.sha256(path)
    return {"name": str(path) if name is None else name, "size": size, "sha256": digest}


def input_digest(entries: list[dict], **about: object) -> dict:
    """An input's digest as a rule's params compare it: what it is (``about``),
    how many entries it has and the SHA-256 of their listing, so that the
    params stay small for a corpus of many files."""
    listing = json.dumps(entries, sort_keys=True).encode()
    return {**about, "entries": len(entries), "sha256": hashlib.sha256(listing).hexdigest()}
