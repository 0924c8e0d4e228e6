"""The functional-memorization tables and figures (``leaktrace counterfactual-aggregate``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import settings_of


@settings_of("counterfactual-aggregate", block="similarity.aggregate")
@dataclass(frozen=True)
class FunctionalAggregateSettings:
    """The thresholds of near-verbatim text and functional equivalence, and
    the resamples of the percentile intervals."""

    tau_text: float
    tau_func: float
    bootstrap_resamples: int
