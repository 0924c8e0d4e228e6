"""Every detector, registered once: its configured instances, each with a
method name, a scoring function (higher = member) and, for threshold-free
methods, its own decision rule. Adding a detector is a module plus an entry here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

from leaktrace.detect.evidence import SampleEvidence
from leaktrace.detect.loss import loss_score
from leaktrace.detect.lowercase import lowercase_score
from leaktrace.detect.min_k import min_k_score
from leaktrace.detect.min_k_plus_plus import min_k_plus_plus_score
from leaktrace.detect.srdetection_graybox import srdetection_flag, srdetection_gap
from leaktrace.detect.zlib_ratio import zlib_score


@dataclass(frozen=True)
class Method:
    name: str
    family: str
    score: Callable[[SampleEvidence], float]
    decide: Callable[[SampleEvidence], bool] | None = None  # threshold-free methods only
    needs_lowercase: bool = False
    needs_variants: bool = False


def _percent(ratio: float) -> str:
    return f"{round(ratio * 100):d}"


def _loss(params: Mapping) -> list[Method]:
    return [Method("loss", "loss", loss_score)]


def _zlib(params: Mapping) -> list[Method]:
    return [Method("zlib", "zlib", zlib_score)]


def _lowercase(params: Mapping) -> list[Method]:
    return [Method("lowercase", "lowercase", lowercase_score, needs_lowercase=True)]


def _min_k(params: Mapping) -> list[Method]:
    return [Method(f"min_k_{_percent(r)}", "min_k", partial(min_k_score, ratio=r)) for r in params["ratios"]]


def _min_k_plus_plus(params: Mapping) -> list[Method]:
    return [
        Method(f"min_k_pp_{_percent(r)}", "min_k_plus_plus", partial(min_k_plus_plus_score, ratio=r))
        for r in params["ratios"]
    ]


def _srdetection_graybox(params: Mapping) -> list[Method]:
    n = params["n_variants"]
    return [
        Method(
            "srdetection_graybox",
            "srdetection_graybox",
            partial(srdetection_gap, n_variants=n),
            decide=partial(srdetection_flag, n_variants=n),
            needs_variants=True,
        )
    ]


FAMILIES: dict[str, Callable[[Mapping], list[Method]]] = {
    "loss": _loss,
    "zlib": _zlib,
    "lowercase": _lowercase,
    "min_k": _min_k,
    "min_k_plus_plus": _min_k_plus_plus,
    "srdetection_graybox": _srdetection_graybox,
}


def configured_methods(config: Mapping[str, Mapping]) -> list[Method]:
    """Instantiate the methods named in the config's ``score.methods`` block."""
    unknown = set(config) - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown detection methods {sorted(unknown)}; known: {sorted(FAMILIES)}")
    return [m for family, params in config.items() for m in FAMILIES[family](params or {})]
