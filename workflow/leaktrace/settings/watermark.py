"""Randomized publication (``leaktrace publish``, ``watermark-test``,
``watermark-calibration``, ``watermark-report``): the report's settings, and
the typed values of the maintainer commands' JSON flags."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from leaktrace.config_slice import json_object, read_slice, settings_of


@settings_of("watermark-report", block="watermark")
@dataclass(frozen=True)
class WatermarkReportSettings:
    """What the report says of the release: K (each problem's forms are up to
    K + 1) and the transforms that made them."""

    forms: int
    transforms: tuple[str, ...]


@dataclass(frozen=True)
class FieldOverrides:
    """``publish --fields``: record field names that override the preset's,
    key by key (a list concatenates fields; null unmaps a key)."""

    fields: Mapping[str, str | tuple[str, ...] | None]

    metavar = "JSON"

    @classmethod
    def from_flag(cls, text: str) -> FieldOverrides:
        return read_slice(cls, {"fields": json_object(text, "--fields")}, "--fields")

    def as_config(self) -> dict:
        """As the benchmark config's ``fields`` holds them (lists as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.fields.items()}
