"""The filesystem a sandboxed run sees: the bare interpreter, its standard
library, the shared libraries they load (as `ldd` resolves them), the loader's
cache and four harmless devices, all read-only; nothing of the project, its
virtual environment, /etc, /tmp or the home directories.

The view is a list of operations for `isolation.build_root`: read-only binds of
host paths (at their real paths), the symlinks on the way to them (so /lib ->
usr/lib resolves as on the host), and empty masks over directories inside a
bound tree that must stay hidden (the base interpreter's site-packages).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from leaktrace.sandbox.isolation import MS_NODEV, MS_NOEXEC, MS_NOSUID

DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
LOADER_CACHE = "/etc/ld.so.cache"
# statvfs flag -> mount flag, for the flags a user namespace locks (a remount must keep them)
_LOCKED_FLAGS = {2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC, 1024: 1024, 2048: 2048, 4096: 1 << 21}


class ViewUnavailable(RuntimeError):
    """The interpreter's files cannot be listed (no ldd, or ldd failed)."""


def interpreter() -> str:
    """The real path of the running interpreter's binary (a virtual environment's links resolved)."""
    return os.path.realpath(sys.executable)


@functools.cache
def interpreter_view() -> tuple[tuple, ...]:
    stdlib = Path(os.path.realpath(os.path.dirname(os.__file__)))
    dynload = stdlib / "lib-dynload"
    view: dict[str, tuple] = {}
    expose(str(stdlib), view)
    for library in shared_libraries([interpreter(), *map(str, sorted(dynload.glob("*.so")))]):
        expose(library, view)
    for path in (interpreter(), LOADER_CACHE, *DEVICES):
        if os.path.exists(path):
            expose(path, view)
    site_packages = stdlib / "site-packages"
    if site_packages.is_dir():
        view[f"mask {site_packages}"] = ("mask", str(site_packages))
    return tuple(view.values())


def shared_libraries(binaries: list[str]) -> list[str]:
    ldd = shutil.which("ldd")
    if ldd is None:
        raise ViewUnavailable("ldd is not installed, so the interpreter's shared libraries cannot be listed")
    listing = subprocess.run([ldd, *binaries], capture_output=True, text=True, check=False)
    libraries = set()
    for line in listing.stdout.splitlines():
        fields = line.split()
        if "=>" in fields and len(fields) > fields.index("=>") + 1 and fields[fields.index("=>") + 1].startswith("/"):
            libraries.add(fields[fields.index("=>") + 1])
        elif fields and fields[0].startswith("/") and not line.endswith(":"):
            libraries.add(fields[0])
    if not libraries:
        raise ViewUnavailable(f"ldd found no shared libraries of {binaries[0]}: {listing.stderr.strip()}")
    return sorted(libraries)


def additions(paths: list[str]) -> tuple[tuple, ...]:
    """The operations that make `paths` (those that exist) visible beside the
    interpreter's view: only what that view lacks, so the two concatenate."""
    base = {_key(operation): operation for operation in interpreter_view()}
    view = dict(base)
    for path in paths:
        if os.path.exists(path):
            expose(path, view)
    return tuple(operation for key, operation in view.items() if key not in base)


def _key(operation: tuple) -> str:
    return f"{operation[0]} {operation[1]}"


def _under_bound_directory(path: str, view: dict[str, tuple]) -> bool:
    return any(
        kind == "bind" and rest[1] and path.startswith(rest[0].rstrip("/") + "/") for kind, *rest in view.values()
    )


def expose(path: str, view: dict[str, tuple]) -> None:
    """Add a read-only bind of `path`, recreating every symlink on the way to it.
    A path inside a directory the view binds is visible already (and making
    its mount point there would write into the host's directory): only the
    target of such a path, if it is a symlink, is added."""
    if _under_bound_directory(path, view):
        if os.path.islink(path):
            expose(os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(path))), view)
        return
    current = "/"
    parts = Path(path).parts[1:]
    for index, part in enumerate(parts):
        candidate = os.path.join(current, part)
        if os.path.islink(candidate):
            target = os.readlink(candidate)
            view.setdefault(f"symlink {candidate}", ("symlink", candidate, target))
            resolved = os.path.normpath(os.path.join(current, target))
            expose(os.path.join(resolved, *parts[index + 1 :]), view)
            return
        current = candidate
    is_directory = os.path.isdir(current)
    flags = _locked_flags(current) | MS_NOSUID | (MS_NOEXEC if path in DEVICES else MS_NODEV)
    view.setdefault(f"bind {current}", ("bind", current, is_directory, flags))


def _locked_flags(path: str) -> int:
    flags = os.statvfs(path).f_flag
    return sum(mount_flag for statvfs_flag, mount_flag in _LOCKED_FLAGS.items() if flags & statvfs_flag)
