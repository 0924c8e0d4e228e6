"""testbed-blind: the blind baseline on the testbed's member / non-member
split (:mod:`leaktrace.calibration.testbed_blind`): the evaluation fold's
members against its non-members, by their text alone. The aggregate sets
its AUC beside every detector's, with the paired difference."""

from __future__ import annotations

import logging
from pathlib import Path

from leaktrace.artifacts import read_records, write_table
from leaktrace.calibration.blind_baseline import TABLE_SCHEMA
from leaktrace.calibration.testbed_blind import SCORES_SCHEMA, split_blind_baseline
from leaktrace.data.samples import document
from leaktrace.seeding import derive_seed
from leaktrace.settings.testbed_blind import TestbedBlindSettings

log = logging.getLogger(__name__)


def testbed_blind_stage(
    benchmark: str,
    benchmark_table: Path,
    samples: Path,
    settings: TestbedBlindSettings,
    seed: int,
    output: Path,
    scores_output: Path,
) -> None:
    """The blind baseline of the testbed's split of ``benchmark``: its row
    (``output``) and its out-of-fold scores (``scores_output``).

    ``benchmark_table``: the ingested benchmark (the samples' text);
    ``samples``: the testbed's split."""
    texts = {r["sample_id"]: document(r) for r in read_records(benchmark_table)}
    row, scores = split_blind_baseline(
        benchmark,
        read_records(samples),
        texts,
        alpha=settings.contamination_alpha,
        permutations=settings.blind_permutations,
        repeats=settings.blind_repeats,
        seed=derive_seed(seed, "testbed-blind", benchmark),
    )
    write_table([row], TABLE_SCHEMA, output)
    write_table(scores, SCORES_SCHEMA, scores_output)
    log.info(
        "testbed blind baseline %s: %d members, %d non-members, AUC %s, p %s",
        benchmark,
        row["n_suspect"],
        row["n_control"],
        row.get("auc"),
        row.get("p_value"),
    )
