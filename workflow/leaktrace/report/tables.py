"""Markdown rendering of tidy tables, with numbers formatted for reading."""

from __future__ import annotations

import math
from collections.abc import Sequence


def _cell(value: object, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def markdown_table(rows: Sequence[dict], columns: Sequence[str], digits: int = 3) -> str:
    if not rows:
        return "_(no rows)_\n"
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join(" --- " for _ in columns) + "|"]
    lines += ["| " + " | ".join(_cell(r.get(c), digits) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def mean_pm_std(mean: float, std: float, digits: int = 3) -> str:
    return f"{mean:.{digits}f} ± {std:.{digits}f}"
