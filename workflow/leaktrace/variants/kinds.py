"""The kinds of text in a variants table (``variants.parquet``) and which of
them each reader takes: the original (variant 0), the detectors' renamings
(``rename``, which SrDetection's pre-exposure filter reads too, under the
base model) and other generators' sets (:data:`VARIANT_SETS`, one
SrDetection instance each)."""

from __future__ import annotations

from pathlib import Path

from leaktrace.artifacts import read_records

VARIANT_SETS = ("ast", "ast+tt", "llm")  # other generators' variant sets
DETECTOR_KINDS = ("original", "rename")  # the texts detectors (and the pre-exposure filter) see


def valid_texts(variants: Path, kinds: tuple[str, ...] = DETECTOR_KINDS) -> list[dict]:
    """The valid rows of ``kinds`` (sample_id, variant_id, kind, text, valid)."""
    return [
        v
        for v in read_records(variants, ["sample_id", "variant_id", "kind", "text", "valid"])
        if v["valid"] and v["kind"] in kinds
    ]


def detector_variant_counts(variants: list[dict], kind: str = "rename") -> dict[str, int]:
    """sample_id -> valid variants a detector compares the original with: the
    main set ("rename"), or another generator's set (its kind, e.g. "ast+tt")."""
    counts = {v["sample_id"]: 0 for v in variants}
    for v in variants:
        if v["valid"] and v["kind"] == kind:
            counts[v["sample_id"]] += 1
    return counts
