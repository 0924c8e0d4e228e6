"""filter: function-level filters, then (after variants and the reference
model's token pass) the pre-exposure filter and the member / non-member split.
Every sample keeps a row; dropped ones say why."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.functions import FunctionFilter, function_anatomy
from leaktrace.data.split import RECALL_PREFIX, assign_splits, pre_exposure_reason
from leaktrace.models.token_table import losses_by_text
from leaktrace.seeding import rng_for

log = logging.getLogger(__name__)

FUNCTIONS_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("kept", pa.bool_()),
        ("reason", pa.string()),
        ("body_lines", pa.int32()),
        ("n_chars", pa.int32()),
        ("context", pa.string()),
        ("signature", pa.string()),
        ("continuation", pa.string()),
    ]
)

SAMPLES_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("kept", pa.bool_()),
        ("reason", pa.string()),
        ("split", pa.string()),
        ("fold", pa.string()),
        ("original_loss", pa.float64()),
        ("min_variant_loss", pa.float64()),
        ("n_valid_variants", pa.int32()),
    ]
)


def filter_functions(benchmark: Path, settings: dict, output: Path) -> None:
    rule = FunctionFilter(**settings)
    rows = []
    for sample in read_records(benchmark):
        anatomy = function_anatomy(sample["code"], sample["entry_point"])
        reason = rule.reason_to_drop(anatomy)
        rows.append(
            {
                "sample_id": sample["sample_id"],
                "kept": reason is None,
                "reason": reason,
                "body_lines": anatomy.body_lines,
                "n_chars": len(anatomy.function),
                "context": anatomy.context,
                "signature": anatomy.signature,
                "continuation": anatomy.continuation,
            }
        )
    write_table(rows, FUNCTIONS_SCHEMA, output)
    log.info("function filter kept %d of %d samples", sum(r["kept"] for r in rows), len(rows))


def split_samples(functions: Path, variants: Path, reference_tokens: Path, settings: dict, seed: int, output: Path, *,
                  recall_prefix: int = 0) -> None:
    """``recall_prefix`` samples form ReCaLL's non-member prefix (split
    ``non-member``, fold ``recall-prefix``): never trained on, never evaluated.
    They are drawn first from the samples the pre-exposure and variant-count
    filters dropped (valid benchmark functions no evaluation uses), so the
    prefix costs the evaluation nothing; only if too few exist is the rest
    held out of the eligible samples before the member / non-member split."""
    losses = losses_by_text(reference_tokens)
    valid = {(v["sample_id"], v["variant_id"]) for v in read_records(variants, ["sample_id", "variant_id", "valid"]) if v["valid"]}
    variant_losses_of: dict[str, list[float]] = defaultdict(list)
    for (sid, vid), loss in losses.items():
        if vid > 0 and (sid, vid) in valid:
            variant_losses_of[sid].append(loss)
    rows, eligible, spare = [], [], []
    for f in read_records(functions, ["sample_id", "kept", "reason"]):
        sid = f["sample_id"]
        row = {"sample_id": sid, "kept": False, "reason": f["reason"], "split": None, "fold": None,
               "original_loss": None, "min_variant_loss": None, "n_valid_variants": None}
        if f["kept"]:
            variant_losses = variant_losses_of[sid]
            row["n_valid_variants"] = len(variant_losses)
            row["original_loss"] = losses.get((sid, 0))
            row["min_variant_loss"] = min(variant_losses) if variant_losses else None
            if (sid, 0) not in valid:
                row["reason"] = "original fails its own tests"
            elif len(variant_losses) < settings["min_valid_variants"]:
                row["reason"] = f"variants: {len(variant_losses)} valid < {settings['min_valid_variants']}"
            elif settings["pre_exposure"]:
                row["reason"] = pre_exposure_reason(losses[(sid, 0)], variant_losses)
            if row["reason"] is None:
                row["kept"] = True
                eligible.append(sid)
            elif (sid, 0) in valid:
                spare.append(sid)
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
        if row["kept"]:
            row["split"], row["fold"] = assignments[row["sample_id"]].split, assignments[row["sample_id"]].fold
        elif row["sample_id"] in prefix:
            row["split"], row["fold"] = "non-member", RECALL_PREFIX
    write_table(rows, SAMPLES_SCHEMA, output)
    reasons = Counter(r["reason"].split(":")[0] for r in rows if not r["kept"])
    log.info("kept %d of %d samples; dropped by: %s", len(eligible), len(rows), dict(reasons))
