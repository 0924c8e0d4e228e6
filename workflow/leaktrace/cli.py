"""``leaktrace <command>`` (or ``python -m leaktrace``): the person-facing
commands (``audit``, ``scan``: :mod:`leaktrace.console`) and the stage
commands Snakemake rules call. Each stage command takes its files as paths
and its slice of the config as JSON (``--settings``), so a rule's params are
exactly what the stage depends on."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import textwrap

from leaktrace.errors import InputError

STAGES: dict[str, str] = {
    "aggregate": "leaktrace.stages.aggregate:aggregate",
    "audit-blind": "leaktrace.stages.audit_blind:audit_blind",
    "audit-contamination": "leaktrace.stages.audit_contamination:audit_contamination",
    "audit-exchangeability": "leaktrace.stages.exchangeability:audit_exchangeability",
    "audit-exchangeability-table": "leaktrace.stages.audit_exchangeability_table:audit_exchangeability_table",
    "audit-tables": "leaktrace.stages.audit:audit",
    "audit-watermark-table": "leaktrace.stages.watermark:audit_watermark_table",
    "blackbox": "leaktrace.stages.score:blackbox_generations",
    "calibration-conformal": "leaktrace.stages.calibration:conformal_calibration",
    "calibration-membership": "leaktrace.stages.calibration:membership_calibration",
    "contamination": "leaktrace.stages.contamination:contamination",
    "counterfactual": "leaktrace.stages.counterfactual:counterfactual",
    "counterfactual-aggregate": "leaktrace.stages.counterfactual_aggregate:counterfactual_aggregate",
    "counterfactual-execution": "leaktrace.stages.counterfactual_execution:counterfactual_execution",
    "counterfactual-judges": "leaktrace.stages.counterfactual_judges:counterfactual_judges",
    "counterfactual-structural": "leaktrace.stages.counterfactual_structural:structural_similarity",
    "dataset-inference": "leaktrace.stages.contamination:dataset_inference_command",
    "dose": "leaktrace.stages.dose:dose_table",
    "dose-order": "leaktrace.stages.dose:dose_order",
    "dpdllm-features": "leaktrace.stages.dpdllm_veilprobe:dpdllm_features",
    "dpdllm-fit": "leaktrace.stages.dpdllm_veilprobe:fit_dpdllm",
    "dpdllm-generations": "leaktrace.stages.dpdllm_veilprobe:dpdllm_generations",
    "dpdllm-reference": "leaktrace.stages.dpdllm_veilprobe:train_dpdllm_reference",
    "exchangeability": "leaktrace.stages.exchangeability:exchangeability",
    "exchangeability-calibration": "leaktrace.stages.exchangeability:exchangeability_calibration",
    "fetch-model": "leaktrace.models.fetch:fetch_model",
    "filter-functions": "leaktrace.stages.function_filter:filter_functions",
    "ingest-benchmark": "leaktrace.stages.ingest:ingest_benchmark",
    "ingest-corpus": "leaktrace.stages.ingest:ingest_corpus",
    "leakage-gather": "leaktrace.stages.leakage:gather",
    "leakage-index": "leaktrace.stages.leakage:build_index",
    "leakage-rephrase": "leaktrace.stages.leakage_rephrase:rephrase_shard",
    "leakage-rephrase-gather": "leaktrace.stages.leakage_rephrase:rephrase_gather",
    "leakage-rq3": "leaktrace.stages.leakage_rq3:rq3",
    "leakage-rq3-runs": "leaktrace.stages.leakage_rq3_runs:generate_and_run",
    "leakage-rq4": "leaktrace.stages.leakage_rq4:rq4",
    "leakage-rq4-perplexity": "leaktrace.stages.leakage_rq4_perplexity:perplexities",
    "leakage-rq4-ranking": "leaktrace.stages.leakage_rq4:rq4_ranking",
    "leakage-scan": "leaktrace.stages.leakage:scan_shard",
    "lexicon": "leaktrace.stages.variants:build_lexicon",
    "llm-filter": "leaktrace.stages.counterfactual_llm_filter:llm_filter",
    "mix": "leaktrace.stages.train:make_mix",
    "mutate": "leaktrace.stages.mutate:mutate_jsonl",
    "mutation-study": "leaktrace.stages.mutate:mutation_study",
    "mutation-tokens": "leaktrace.stages.mutate:score_mutations",
    "mutations": "leaktrace.stages.mutate:make_mutations_table",
    "natural-variants": "leaktrace.stages.variants:select_natural_variants",
    "pretrain": "leaktrace.stages.pretrain:pretrain",
    "publish": "leaktrace.stages.watermark:publish_benchmark",
    "recall-tokens": "leaktrace.stages.score:score_prefixed",
    "sample-corpus-functions": "leaktrace.stages.counterfactual_corpus_functions:sample_corpus_functions",
    "scores": "leaktrace.stages.score:score_methods",
    "select-lr": "leaktrace.stages.learning_rate:select_learning_rate",
    "serve": "leaktrace.stages.serve:serve_model",
    "sham-mix": "leaktrace.stages.train:make_sham_mix",
    "shifted-controls": "leaktrace.stages.shifted_controls:shifted_controls",
    "split": "leaktrace.stages.split:split_samples",
    "testbed-blind": "leaktrace.stages.testbed_blind:testbed_blind_stage",
    "token-counts": "leaktrace.stages.score:count_corpus_tokens",
    "tokens": "leaktrace.stages.score:score_tokens",
    "train": "leaktrace.stages.train:train_adapters",
    "train-verifier": "leaktrace.stages.train_verifier:train_verifier",
    "twin": "leaktrace.stages.twin:twin_tables",
    "twin-split": "leaktrace.stages.split:twin_split",
    "variants": "leaktrace.stages.variants:make_variants_table",
    "veilprobe-features": "leaktrace.stages.dpdllm_veilprobe:veilprobe_features",
    "veilprobe-fit": "leaktrace.stages.dpdllm_veilprobe:fit_veilprobe",
    "veilprobe-perturb": "leaktrace.stages.dpdllm_veilprobe:veilprobe_perturb",
    "verdict": "leaktrace.stages.verdict:verdict",
    "verify-pairs": "leaktrace.stages.verify_pairs:verify_pairs",
    "watermark-calibration": "leaktrace.stages.watermark:calibrate",
    "watermark-report": "leaktrace.stages.watermark:report",
    "watermark-test": "leaktrace.stages.watermark:test_release",
}
"""Stage command -> its function; the function's signature is its flags (:mod:`leaktrace.stage_entry`)."""


def parser() -> argparse.ArgumentParser:
    """The person-facing commands first, with a line each; the stage
    commands after them, listed only by name as internal."""
    from leaktrace.console import PERSON_COMMANDS

    top = argparse.ArgumentParser(
        prog="leaktrace",
        description="Audit code language models for benchmark leakage. For a person: `leaktrace audit` and "
        "`leaktrace scan` (each with --help).",
        epilog=textwrap.fill(
            "Internal stage commands, which the pipeline's rules call with their config slice as JSON (not meant "
            "to be typed): " + ", ".join(sorted(STAGES)) + ".",
            break_on_hyphens=False,
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (arguments, _, line) in PERSON_COMMANDS.items():
        arguments(sub.add_parser(name, help=line, description=line))
    return top


def main(argv: list[str] | None = None) -> int:
    from leaktrace.console import PERSON_COMMANDS

    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in STAGES:
        return _run_stage(argv[0], argv[1:])
    args = parser().parse_args(argv)
    args.argv = argv[1:]
    return PERSON_COMMANDS[args.command][1](args)


def _run_stage(command: str, argv: list[str]) -> int:
    from leaktrace.stage_entry import call

    module, _, name = STAGES[command].partition(":")
    function = getattr(importlib.import_module(module), name)
    _log_to_stderr()
    try:
        call(command, function, argv)
    except InputError as err:
        logging.getLogger("leaktrace").error("bad input: %s", one_line(str(err)))
        return 2
    return 0


def _log_to_stderr() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)


def one_line(message: str) -> str:
    """A bad-input report is one line on stderr, whatever a file name or a
    library's message holds: line breaks are written as escapes."""
    return message.replace("\n", "\\n").replace("\r", "\\r")
