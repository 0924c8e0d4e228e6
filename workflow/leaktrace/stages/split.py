"""split: after the variants and the base model's token pass, SrDetection's
pre-exposure filter and the member / non-member split of the kept samples
(with ReCaLL's held-out prefix fold); and the split as the complement twin
sees it. Every sample keeps a row; dropped ones say why."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, read_table, write_table
from leaktrace.data.split import RECALL_PREFIX, assign_splits, complement, pre_exposure
from leaktrace.models.token_table import losses_by_text
from leaktrace.seeding import rng_for

log = logging.getLogger(__name__)

SAMPLES_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("kept", pa.bool_()),  # eligible and in the member / non-member split
        ("reason", pa.string()),  # why a sample is not in the split
        ("split", pa.string()),
        ("fold", pa.string()),
        # SrDetection's pre-exposure filter, judged on its own variants (kind
        # "filter"), never the ones the detectors score: it flags, it does not
        # decide the split, so every method is reported with and without it.
        # null: unknown (no valid filter variant to judge by), left out of the filtered protocol too
        ("pre_exposed", pa.bool_()),
        ("pre_exposure", pa.string()),  # the filter's reason when it flags, or why it could not judge
        ("original_loss", pa.float64()),
        ("min_filter_variant_loss", pa.float64()),
        ("n_valid_variants", pa.int32()),  # detector variants
        ("n_valid_filter_variants", pa.int32()),
    ]
)


def split_samples(functions: Path, variants: Path, reference_tokens: Path, settings: dict, seed: int, output: Path, *,
                  recall_prefix: int = 0) -> None:
    """The member / non-member split over every eligible sample (a function
    the function filters kept, whose original passes its own tests and has at
    least ``min_valid_variants`` valid detector variants), then SrDetection's
    pre-exposure flag from the base model's losses on the separate filter
    variants. The split never looks at a model, so the flag cannot leak into
    which samples are members.

    ``recall_prefix`` samples form ReCaLL's non-member prefix (split
    ``non-member``, fold ``recall-prefix``): never trained on, never evaluated.
    They are drawn first from valid originals the variant-count filter dropped
    (benchmark functions no evaluation uses); only if too few exist is the
    rest held out of the eligible samples before the split."""
    losses = losses_by_text(reference_tokens)
    variant_rows = read_records(variants, ["sample_id", "variant_id", "kind", "valid"])
    valid = {(v["sample_id"], v["variant_id"]) for v in variant_rows if v["valid"]}
    valid_of: dict[tuple[str, str], list[int]] = defaultdict(list)
    for v in variant_rows:
        if v["valid"] and v["kind"] in ("rename", "filter"):
            valid_of[(v["sample_id"], v["kind"])].append(v["variant_id"])
    rows, eligible, spare = [], [], []
    for f in read_records(functions, ["sample_id", "kept", "reason"]):
        sid = f["sample_id"]
        detector_variants, filter_variants = valid_of[(sid, "rename")], valid_of[(sid, "filter")]
        row = {"sample_id": sid, "kept": False, "reason": f["reason"], "split": None, "fold": None,
               "pre_exposed": None, "pre_exposure": None, "original_loss": None, "min_filter_variant_loss": None,
               "n_valid_variants": None, "n_valid_filter_variants": None}
        if f["kept"]:
            row["n_valid_variants"], row["n_valid_filter_variants"] = len(detector_variants), len(filter_variants)
            if (sid, 0) not in valid:
                row["reason"] = "original fails its own tests"
            elif len(detector_variants) < settings["min_valid_variants"]:
                row["reason"] = f"variants: {len(detector_variants)} valid < {settings['min_valid_variants']}"
                spare.append(sid)
            else:
                row["kept"] = True
                eligible.append(sid)
                filter_losses = [losses[(sid, vid)] for vid in filter_variants]
                row["original_loss"] = losses[(sid, 0)]
                row["min_filter_variant_loss"] = min(filter_losses, default=None)
                row["pre_exposed"], row["pre_exposure"] = pre_exposure(losses[(sid, 0)], filter_losses) \
                    if settings["pre_exposure"] else (False, None)
        rows.append(row)
    prefix = set(rng_for(seed, "split", "recall-prefix").sample(sorted(spare), min(recall_prefix, len(spare))))
    if len(eligible) < 2:
        raise ValueError(f"{functions}: only {len(eligible)} samples survive the filters; the split needs at least 2")
    assignments = assign_splits(
        eligible,
        member_fraction=settings["member_fraction"],
        calibration_fraction=settings["calibration_fraction"],
        rng=rng_for(seed, "split"),
        recall_prefix=recall_prefix - len(prefix),
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
    reasons = Counter(r["reason"].split(":")[0] for r in rows if not r["kept"])
    log.info("split %d of %d samples (%d flagged by the pre-exposure filter, %d unknown to it); not split: %s", len(kept),
             len(rows), sum(r["pre_exposed"] is True for r in kept), sum(r["pre_exposed"] is None for r in kept), dict(reasons))
def twin_split(samples: Path, output: Path) -> None:
    """The split as the complement twin sees it: the samples table with
    members and non-members swapped (``data.split.complement``), every other
    column as it is, so the twin's mix and the fits of its label-dependent
    detectors read it exactly as the target's read the split."""
    table = read_table(samples)
    swapped = [complement(s, f) for s, f in zip(table.column("split").to_pylist(), table.column("fold").to_pylist(), strict=True)]
    table = table.set_column(table.schema.get_field_index("split"), table.schema.field("split"), pa.array(swapped, pa.string()))
    write_table(table.to_pylist(), table.schema, output)
    log.info("twin split: %d members, %d non-members (the target's swapped; ReCaLL's prefix kept out of both)",
             swapped.count("member"), sum(s == "non-member" and f != RECALL_PREFIX
                                          for s, f in zip(swapped, table.column("fold").to_pylist(), strict=True)))
