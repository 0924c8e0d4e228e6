"""Randomized publication (``leaktrace publish``, ``watermark-test``,
``watermark-calibration``, ``watermark-report``): the report's settings, and
the typed values of the maintainer commands' JSON flags."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from leaktrace.config_slice import read_slice, settings_of
from leaktrace.settings.llm import json_object


@settings_of("watermark-report", block="watermark")
@dataclass(frozen=True)
class WatermarkReportSettings:
    """What the report says of the release: K (each problem's forms are up to
    K + 1) and the transforms that made them."""

    forms: int
    transforms: tuple[str, ...]


@dataclass(frozen=True)
class TestedModel:
    """The model ``watermark-test`` scores the forms under: a local directory
    or hub id, its dtype and device, and the cap on tokens per sequence
    (null: the model's trained context)."""

    __test__ = False  # not a pytest class

    path: str
    dtype: str
    device: str
    max_length: int | None
    revision: str | None

    metavar = "MODEL"

    @classmethod
    def from_flag(cls, text: str) -> TestedModel:
        """A path or hub id (float32 on the CPU), or JSON ``{path, dtype, device, max_length}``
        (the rule's base_model slice); what it leaves out takes those defaults."""
        try:
            spec = json.loads(text) if text.lstrip().startswith("{") else {"path": text}
        except json.JSONDecodeError as err:
            raise ValueError(f"not valid JSON: {err}") from None
        if not isinstance(spec, dict) or "path" not in spec:
            raise ValueError(f"a model is a path or a JSON object with a path, got {text!r}")
        defaults = {"dtype": "float32", "device": "cpu", "max_length": None, "revision": None}
        return read_slice(cls, {**defaults, **spec}, "--model")


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
