"""split: after the variants and the base model's token pass, SrDetection's
pre-exposure filter and then the member / non-member split (with ReCaLL's
held-out prefix fold); and the split as the complement twin sees it. Every
sample keeps a row; dropped ones say why."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, read_table, write_table
from leaktrace.data.split import (
    PRE_EXPOSURE_MODES,
    RECALL_PREFIX,
    SAMPLES_SCHEMA,
    assign_splits,
    complement,
    pre_exposure,
)
from leaktrace.models.token_table import losses_by_text
from leaktrace.seeding import rng_for
from leaktrace.settings.split import SplitSettings

log = logging.getLogger(__name__)


def split_samples(
    functions: Path,
    variants: Path,
    tokens: Path,
    settings: SplitSettings,
    seed: int,
    output: Path,
    recall_prefix: int = 0,
) -> None:
    """SrDetection's pre-exposure filter, then the member / non-member split.

    A sample is eligible when the function filters kept it, its original
    passes its own tests and it has at least ``min_valid_variants`` valid
    detector variants. The filter compares each eligible original's loss
    under the base model with its detector variants' (``data.split.pre_exposure``).
    ``settings``: the rule's slice (:class:`SplitSettings`).
    ``pre_exposure``: ``"remove"`` drops a flagged sample before
    the split (the paper's); ``"mark"`` keeps it, flagged, and draws the split
    within the cleared and the flagged samples apart, so the cleared ones are
    split 1:1 as in the paper and the whole split is evaluated beside them;
    ``False`` judges nothing and splits every eligible sample.

    ``recall_prefix`` samples form ReCaLL's non-member prefix (split
    ``non-member``, fold ``recall-prefix``): never trained on, never evaluated.
    They are drawn first from valid originals no evaluation uses (the
    variant-count filter's, and with ``remove`` the pre-exposure filter's);
    only if too few exist is the rest held out of the eligible samples before the split."""
    mode = settings.pre_exposure
    if mode not in PRE_EXPOSURE_MODES:
        raise ValueError(f"filter.split.pre_exposure must be one of {PRE_EXPOSURE_MODES}, got {mode!r}")
    losses = losses_by_text(tokens)
    variant_rows = read_records(variants, ["sample_id", "variant_id", "kind", "valid"])
    valid = {(v["sample_id"], v["variant_id"]) for v in variant_rows if v["valid"]}
    detector_variants: dict[str, list[int]] = defaultdict(list)
    for v in variant_rows:
        if v["valid"] and v["kind"] == "rename":
            detector_variants[v["sample_id"]].append(v["variant_id"])
    rows, eligible, spare = [], [], []
    for f in read_records(functions, ["sample_id", "kept", "reason"]):
        sid = f["sample_id"]
        ids = detector_variants[sid]
        row = {
            "sample_id": sid,
            "kept": False,
            "reason": f["reason"],
            "split": None,
            "fold": None,
            "pre_exposed": None,
            "pre_exposure": None,
            "original_loss": None,
            "min_variant_loss": None,
            "n_valid_variants": None,
        }
        if f["kept"]:
            row["n_valid_variants"] = len(ids)
            if (sid, 0) not in valid:
                row["reason"] = "original fails its own tests"
            elif len(ids) < settings.min_valid_variants:
                row["reason"] = f"variants: {len(ids)} valid < {settings.min_valid_variants}"
                spare.append(sid)
            else:
                variant_losses = [losses[(sid, vid)] for vid in ids]
                row["original_loss"], row["min_variant_loss"] = losses[(sid, 0)], min(variant_losses)
                row["pre_exposed"], row["pre_exposure"] = (
                    pre_exposure(losses[(sid, 0)], variant_losses) if mode else (False, None)
                )
                if mode == "remove" and row["pre_exposed"]:
                    row["reason"] = row["pre_exposure"]
                    spare.append(sid)
                else:
                    row["kept"] = True
                    eligible.append(sid)
        rows.append(row)
    prefix = set(rng_for(seed, "split", "recall-prefix").sample(sorted(spare), min(recall_prefix, len(spare))))
    if len(eligible) < 2:
        raise ValueError(f"{functions}: only {len(eligible)} samples survive the filters; the split needs at least 2")
    flagged = {r["sample_id"]: bool(r["pre_exposed"]) for r in rows if r["kept"]}
    assignments = assign_splits(
        eligible,
        member_fraction=settings.member_fraction,
        calibration_fraction=settings.calibration_fraction,
        rng=rng_for(seed, "split"),
        recall_prefix=recall_prefix - len(prefix),
        strata=flagged if mode == "mark" else None,
    )
    for row in rows:
        sid = row["sample_id"]
        if sid in assignments:
            row["split"], row["fold"] = assignments[sid].split, assignments[sid].fold
            if row["fold"] == RECALL_PREFIX:
                row["kept"], row["reason"] = False, "held out as ReCaLL's prefix"
        elif sid in prefix:
            row["split"], row["fold"] = "non-member", RECALL_PREFIX
    write_table(rows, SAMPLES_SCHEMA, output)
    kept = [r for r in rows if r["kept"]]
    cleared = [r for r in kept if r["pre_exposed"] is False]
    reasons = Counter(r["reason"].split(":")[0] for r in rows if not r["kept"])
    log.info(
        "pre-exposure filter (%s): %d of %d eligible samples flagged; split %d of %d samples, %d members and %d "
        "non-members cleared by the filter; not split: %s",
        mode,
        sum(r["pre_exposed"] is True for r in rows),
        sum(r["pre_exposed"] is not None for r in rows),
        len(kept),
        len(rows),
        sum(r["split"] == "member" for r in cleared),
        sum(r["split"] == "non-member" for r in cleared),
        dict(reasons),
    )


def twin_split(samples: Path, output: Path) -> None:
    """The split as the complement twin sees it: the samples table with
    members and non-members swapped (``data.split.complement``), every other
    column as it is, so the twin's mix and the fits of its label-dependent
    detectors read it exactly as the target's read the split."""
    table = read_table(samples)
    swapped = [
        complement(s, f)
        for s, f in zip(table.column("split").to_pylist(), table.column("fold").to_pylist(), strict=True)
    ]
    table = table.set_column(
        table.schema.get_field_index("split"), table.schema.field("split"), pa.array(swapped, pa.string())
    )
    write_table(table.to_pylist(), table.schema, output)
    log.info(
        "twin split: %d members, %d non-members (the target's swapped; ReCaLL's prefix kept out of both)",
        swapped.count("member"),
        sum(
            s == "non-member" and f != RECALL_PREFIX
            for s, f in zip(swapped, table.column("fold").to_pylist(), strict=True)
        ),
    )
