"""audit-blind: the blind baseline of every audited benchmark against the
user's control ids (:mod:`leaktrace.calibration.blind_baseline`): can a
text-only classifier, with no model, tell the suspects (the benchmark's
other samples) from the controls? Each sample's text is what the leakage
scan indexes (its problem text and code: :func:`leaktrace.data.samples.document`).
Where it rejects at contamination.alpha the control set differs from the suspects,
and every audit test that assumes them exchangeable is gated
(:mod:`leaktrace.calibration.audit_verdicts`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from leaktrace.artifacts import read_records, write_table
from leaktrace.calibration.blind_baseline import TABLE_SCHEMA, table_row
from leaktrace.data.sample_ids import match_ids, read_id_list
from leaktrace.data.samples import document
from leaktrace.seeding import derive_seed
from leaktrace.settings.audit_blind import AuditBlindSettings

log = logging.getLogger(__name__)


def audit_blind(
    benchmarks: Mapping[str, Path], control_ids: Path, settings: AuditBlindSettings, seed: int, output: Path
) -> None:
    """Write the blind baseline of every audited benchmark against the control ids, one row each.

    ``benchmarks``: benchmark -> its ingested table."""
    tables = {b: sorted(read_records(p), key=lambda r: r["sample_id"]) for b, p in benchmarks.items()}
    everything = {r["sample_id"] for rows in tables.values() for r in rows}
    control = match_ids(read_id_list(control_ids), everything, str(control_ids))
    rows = [
        table_row(
            b,
            [document(r) for r in records],
            [r["sample_id"] not in control for r in records],
            settings.contamination_alpha,
            settings.blind_permutations,
            derive_seed(seed, "blind-baseline", b),
            settings.blind_repeats,
        )
        for b, records in sorted(tables.items())
    ]
    write_table(rows, TABLE_SCHEMA, output)
    for r in rows:
        log.info(
            "blind baseline %s: %d suspects, %d controls, AUC %s, p %s",
            r["benchmark"],
            r["n_suspect"],
            r["n_control"],
            r.get("auc"),
            r.get("p_value"),
        )
