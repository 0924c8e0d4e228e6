"""The function filter (``leaktrace filter-functions``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import settings_of


@settings_of("filter-functions", block="filter.functions")
@dataclass(frozen=True)
class FunctionFilterSettings:
    """``filter.functions``: the function-level filters a sample must pass (``data.functions.FunctionFilter``)."""

    min_body_lines: int
    max_body_lines: int | None
    min_chars: int
    exclude_init: bool
