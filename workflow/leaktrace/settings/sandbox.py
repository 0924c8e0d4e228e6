"""The sandbox's limits as a slice holds them (``leaktrace.sandbox.SandboxLimits``' fields):
every limit (``variants.sandbox``, whose schema gives each a default), or only
the limits a config or flag sets (``leakage.rq3.sandbox``, ``publish --sandbox``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from leaktrace.config_slice import json_object, read_slice


@dataclass(frozen=True)
class SandboxSettings:
    """The limits of each sandbox run of a sample and its variants (``variants.sandbox``)."""

    timeout_s: float
    cpu_s: int
    memory_mb: int
    max_processes: int
    file_size_mb: int
    scratch_mb: int
    isolation: Literal["full", "weak"]


@dataclass(frozen=True)
class SandboxOverrides:
    """Sandbox limits other than the default ones (variants.sandbox's keys):
    ``leakage.rq3.sandbox``, ``publish --sandbox``. A limit the slice leaves
    out (or null) is the sandbox's default."""

    timeout_s: float | None = None
    cpu_s: int | None = None
    memory_mb: int | None = None
    max_processes: int | None = None
    file_size_mb: int | None = None
    scratch_mb: int | None = None
    isolation: Literal["full", "weak"] | None = None

    metavar = "JSON"

    @classmethod
    def from_flag(cls, text: str) -> SandboxOverrides:
        given = json_object(text, "--sandbox")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise ValueError(f"--sandbox: unknown sandbox limits {unknown}; known: {sorted(known)}")
        return read_slice(cls, {name: given.get(name) for name in known}, "--sandbox")

    def given(self) -> dict:
        """The limits set, by name."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}
