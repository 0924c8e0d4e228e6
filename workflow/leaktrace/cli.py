"""``leaktrace <command>`` (or ``python -m leaktrace``): the person-facing
commands (``audit``, ``scan``: :mod:`leaktrace.console`) and the stage
commands Snakemake rules call. Each stage command takes its files as paths
and its slice of the config as JSON (``--settings``), so a rule's params are
exactly what the stage depends on."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from leaktrace.errors import InputError

STAGES: dict[str, str] = {
    "aggregate": "leaktrace.stages.aggregate:aggregate",
    "audit-blind": "leaktrace.stages.audit_blind:audit_blind",
    "audit-contamination": "leaktrace.stages.audit_contamination:audit_contamination",
    "audit-exchangeability-table": "leaktrace.stages.audit_exchangeability_table:audit_exchangeability_table",
    "audit-tables": "leaktrace.stages.audit:audit",
    "audit-watermark-table": "leaktrace.stages.watermark:audit_watermark_table",
    "calibration-conformal": "leaktrace.stages.calibration:conformal_calibration",
    "calibration-membership": "leaktrace.stages.calibration:membership_calibration",
    "contamination": "leaktrace.stages.contamination:contamination",
    "dataset-inference": "leaktrace.stages.contamination:dataset_inference_command",
    "dose": "leaktrace.stages.dose:dose_table",
    "dose-order": "leaktrace.stages.dose:dose_order",
    "dpdllm-features": "leaktrace.stages.dpdllm_veilprobe:dpdllm_features",
    "dpdllm-fit": "leaktrace.stages.dpdllm_veilprobe:fit_dpdllm",
    "dpdllm-generations": "leaktrace.stages.dpdllm_veilprobe:dpdllm_generations",
    "fetch-model": "leaktrace.models.fetch:fetch_model",
    "filter-functions": "leaktrace.stages.function_filter:filter_functions",
    "lexicon": "leaktrace.stages.variants:build_lexicon",
    "mix": "leaktrace.stages.train:make_mix",
    "natural-variants": "leaktrace.stages.variants:select_natural_variants",
    "publish": "leaktrace.stages.watermark:publish_benchmark",
    "recall-tokens": "leaktrace.stages.score:score_prefixed",
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
    "twin": "leaktrace.stages.twin:twin_tables",
    "twin-split": "leaktrace.stages.split:twin_split",
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

COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], None]]] = {}


def command(name: str):
    def register(fn):
        COMMANDS[name] = (fn.arguments, fn)
        return fn

    return register


def _json(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON: {err}") from None


def _named_paths(items: list[str]) -> dict[str, Path]:
    """``name=path`` pairs, order kept."""
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"expected NAME=PATH, got {item!r}")
        out[name] = Path(path)
    return out


def _args(*specs):
    def attach(fn):
        def arguments(parser: argparse.ArgumentParser) -> None:
            for flags, kwargs in specs:
                parser.add_argument(*flags, **kwargs)

        fn.arguments = arguments
        return fn

    return attach


SETTINGS = (("--settings",), {"type": _json, "required": True, "help": "this stage's config slice as JSON"})
SEED = (("--seed",), {"type": int, "required": True})
BATCH = (("--batch",), {"type": _json, "required": True, "help": "the score.tokens slice (batch size, max length)"})
MODEL = (("--model",), {"type": _json, "required": True, "help": "the base_model config slice as JSON"})


def path(flag: str, many: bool = False, required: bool = True):
    return ((flag,), {"type": Path, "nargs": "+" if many else None, "required": required})


@command("ingest-benchmark")
@_args((("--name",), {"required": True}), SETTINGS, path("--output"))
def _ingest_benchmark(a):
    from leaktrace.stages.ingest import ingest_benchmark

    ingest_benchmark(a.name, a.settings, a.output)


@command("ingest-corpus")
@_args((("--name",), {"required": True}), SETTINGS, (("--part",), {"type": int, "required": True}), path("--output"))
def _ingest_corpus(a):
    from leaktrace.stages.ingest import ingest_corpus

    ingest_corpus(a.name, a.settings, a.part, a.output)


@command("pretrain")
@_args(
    (("--corpora",), {"type": _json, "required": True, "help": "code and text corpus configs as JSON"}),
    SETTINGS,
    path("--output-dir"),
    path("--log"),
)
def _pretrain(a):
    from leaktrace.stages.pretrain import pretrain

    pretrain(a.corpora, a.settings, a.output_dir, a.log)


@command("variants")
@_args(
    path("--benchmark"),
    path("--functions"),
    path("--lexicon"),
    SETTINGS,
    SEED,
    (("--workers",), {"type": int, "default": 1, "help": "sandboxed test runs in parallel"}),
    path("--output"),
    (("--llm",), {"type": _json, "default": None, "help": "the llm.variant_llm role as JSON (null: no LLM-made set)"}),
    path("--cache-dir", required=False),
)
def _variants(a):
    from leaktrace.stages.variants import make_variants_table

    make_variants_table(
        a.benchmark, a.functions, a.lexicon, a.settings, a.seed, a.workers, a.output, llm=a.llm, cache_dir=a.cache_dir
    )


ADAPTER = path("--adapter", required=False)


def _adapter(a) -> str | None:
    return str(a.adapter) if a.adapter else None


GENERATOR = (
    ("--generator",),
    {"type": _json, "default": None, "help": "the llm.generator role as JSON (null: transformers)"},
)
CACHE_DIR = path("--cache-dir", required=False)


@command("blackbox")
@_args(path("--variants"), MODEL, ADAPTER, SETTINGS, BATCH, GENERATOR, CACHE_DIR, path("--output"))
def _blackbox(a):
    from leaktrace.stages.score import blackbox_generations

    blackbox_generations(
        a.variants, a.model, _adapter(a), a.settings, a.batch, a.output, generator=a.generator, cache_dir=a.cache_dir
    )


@command("dpdllm-reference")
@_args(
    path("--variants"),
    MODEL,
    (("--train",), {"type": _json, "required": True, "help": "the train config slice"}),
    SETTINGS,
    SEED,
    path("--output-dir"),
)
def _dpdllm_reference(a):
    from leaktrace.stages.dpdllm_veilprobe import train_dpdllm_reference

    train_dpdllm_reference(a.variants, a.model, a.train, a.settings, a.seed, a.output_dir)


def _paired_paths(values: list[str], second: str) -> dict[tuple[str, str], Path]:
    """``MODEL:<second>=PATH`` arguments (``second`` names the key's second
    part, e.g. BENCHMARK) -> {(model, that part): path}."""
    paths = {}
    for key, value in _named_paths(values).items():
        model, sep, part = key.partition(":")
        if not sep:
            raise argparse.ArgumentTypeError(f"expected MODEL:{second}=PATH, got {key}={value}")
        paths[(model, part)] = value
    return paths


@command("sample-corpus-functions")
@_args(
    (("--name",), {"required": True, "help": "the counterfactual source's name (keys the seed)"}),
    (("--source",), {"type": _json, "required": True, "help": "the corpus source as JSON (a leakage-scan source)"}),
    path("--inputs", many=True, required=False),
    SETTINGS,
    SEED,
    path("--functions"),
    path("--accounting"),
)
def _sample_corpus_functions(a):
    from leaktrace.stages.counterfactual_corpus_functions import sample_corpus_functions

    sample_corpus_functions(a.name, a.source, a.settings, a.seed, a.functions, a.accounting, inputs=a.inputs)


COUNTERFACTUAL_MODEL = {
    "type": _json,
    "required": True,
    "help": "path, dtype, device, max_length, optional revision and adapter, as JSON",
}


@command("counterfactual")
@_args(
    path("--samples", required=False),
    path("--functions"),
    (("--target",), COUNTERFACTUAL_MODEL),
    (("--reference",), COUNTERFACTUAL_MODEL),
    SETTINGS,
    GENERATOR,
    CACHE_DIR,
    path("--generations"),
    path("--similarity"),
)
def _counterfactual(a):
    from leaktrace.stages.counterfactual import counterfactual

    counterfactual(
        a.functions,
        a.target,
        a.reference,
        a.settings,
        a.generations,
        a.similarity,
        samples=a.samples,
        generator=a.generator,
        cache_dir=a.cache_dir,
    )


@command("counterfactual-structural")
@_args(
    path("--generations"),
    path("--functions"),
    SETTINGS,
    (("--processes",), {"type": int, "default": 1}),
    path("--output"),
)
def _counterfactual_structural(a):
    from leaktrace.stages.counterfactual_structural import structural_similarity

    structural_similarity(a.generations, a.functions, a.settings, a.output, processes=a.processes)


JUDGE = (("--judge",), {"type": _json, "required": True, "help": "the llm.judge role as JSON"})


@command("counterfactual-judges")
@_args(path("--generations"), path("--functions"), JUDGE, SETTINGS, CACHE_DIR, path("--output"), path("--answers"))
def _counterfactual_judges(a):
    from leaktrace.stages.counterfactual_judges import counterfactual_judges

    counterfactual_judges(a.generations, a.functions, a.judge, a.settings, a.output, a.answers, cache_dir=a.cache_dir)


@command("llm-filter")
@_args(path("--functions"), JUDGE, SETTINGS, CACHE_DIR, path("--output"))
def _llm_filter(a):
    from leaktrace.stages.counterfactual_llm_filter import llm_filter

    llm_filter(a.functions, a.judge, a.settings, a.output, cache_dir=a.cache_dir)


@command("counterfactual-execution")
@_args(
    path("--generations"),
    path("--functions"),
    path("--benchmark", required=False),
    SETTINGS,
    SEED,
    (("--workers",), {"type": int, "default": 1, "help": "sandbox runs in parallel"}),
    path("--output"),
    path("--screen", required=False),
)  # the judges' table: HyClone's Stage-1 screen gates Stage 2
def _counterfactual_execution(a):
    from leaktrace.stages.counterfactual_execution import counterfactual_execution

    counterfactual_execution(
        a.generations, a.functions, a.benchmark, a.settings, a.seed, a.output, workers=a.workers, screen=a.screen
    )


@command("counterfactual-aggregate")
@_args(
    (("--similarity",), {"type": Path, "nargs": "+", "required": True, "help": "the similarity families' tables"}),
    path("--samples", required=False),
    path("--llm-filter", required=False),
    path("--functions", required=False),
    SETTINGS,
    SEED,
    path("--output-dir"),
)
def _counterfactual_aggregate(a):
    from leaktrace.stages.counterfactual_aggregate import counterfactual_aggregate

    counterfactual_aggregate(
        a.similarity,
        a.settings,
        a.seed,
        a.output_dir,
        samples=a.samples,
        llm_filter=a.llm_filter,
        functions=a.functions,
    )


@command("exchangeability")
@_args(path("--benchmark"), path("--samples"), MODEL, ADAPTER, SETTINGS, BATCH, SEED, path("--output"))
def _exchangeability(a):
    from leaktrace.stages.exchangeability import exchangeability

    exchangeability(a.benchmark, a.samples, a.model, _adapter(a), a.settings, a.batch, a.seed, a.output)


@command("exchangeability-calibration")
@_args(path("--benchmark"), path("--samples"), MODEL, ADAPTER, SETTINGS, BATCH, SEED, path("--output"))
def _exchangeability_calibration(a):
    from leaktrace.stages.exchangeability import exchangeability_calibration

    exchangeability_calibration(a.benchmark, a.samples, a.model, _adapter(a), a.settings, a.batch, a.seed, a.output)


@command("audit-exchangeability")
@_args(
    path("--benchmark"),
    (("--benchmark-name",), {"required": True, "help": "the audited benchmark's name"}),
    (("--name",), {"required": True, "help": "the audited model's name"}),
    MODEL,
    ADAPTER,
    SETTINGS,
    BATCH,
    SEED,
    path("--output"),
)
def _audit_exchangeability(a):
    from leaktrace.stages.exchangeability import audit_exchangeability

    audit_exchangeability(
        a.benchmark, a.benchmark_name, a.name, a.model, _adapter(a), a.settings, a.batch, a.seed, a.output
    )


# --- leakage scan (LessLeak-style): index the benchmark, scan corpus shards, gather ---
SCAN = (("--scan",), {"required": True, "help": "the scan's name under leakage.scans"})


def _scan_settings(a) -> dict:
    """The scan's config slice with its name; a bad combination of settings is
    bad input (exit 2) naming the scan."""
    from leaktrace.leakage.settings import resolve

    settings = {**a.settings, "name": a.scan}
    try:
        resolve(a.scan, settings)
    except ValueError as err:
        raise InputError("leakage settings", a.scan, str(err)) from None
    return settings


@command("leakage-index")
@_args(SCAN, path("--benchmark", many=True), SETTINGS, path("--output"))
def _leakage_index(a):
    from leaktrace.stages.leakage import build_index

    build_index(a.benchmark, _scan_settings(a), a.output)


@command("leakage-scan")
@_args(
    SCAN,
    path("--index"),
    path("--benchmark", many=True),
    SETTINGS,
    (("--part",), {"type": int, "required": True}),
    (("--parts",), {"type": int, "required": True}),
    (("--input",), {"type": Path, "nargs": "*", "default": [], "help": "pipeline artifacts the source reads"}),
    path("--pairs"),
    path("--accounting"),
)
def _leakage_scan(a):
    from leaktrace.stages.leakage import scan_shard

    settings = _scan_settings(a)
    scan_shard(a.index, a.benchmark, settings["corpus"], a.part, a.parts, a.input, settings, a.pairs, a.accounting)


@command("leakage-gather")
@_args(
    SCAN,
    path("--index"),
    path("--benchmark", many=True),
    (("--pairs",), {"type": Path, "nargs": "+", "required": True}),
    (("--accounting",), {"type": Path, "nargs": "+", "required": True}),
    SETTINGS,
    path("--samples", required=False),
    path("--output-dir"),
)
def _leakage_gather(a):
    from leaktrace.stages.leakage import gather

    gather(a.index, a.benchmark, a.pairs, a.accounting, _scan_settings(a), a.samples, a.output_dir)


@command("leakage-rephrase")
@_args(
    SCAN,
    path("--benchmark", many=True),
    SETTINGS,
    (("--part",), {"type": int, "required": True}),
    (("--parts",), {"type": int, "required": True}),
    (("--input",), {"type": Path, "nargs": "*", "default": [], "help": "pipeline artifacts the source reads"}),
    (("--pairs",), {"type": Path, "required": True, "help": "the shard's pairs: their duplicates are left out"}),
    path("--output"),
)
def _leakage_rephrase(a):
    from leaktrace.stages.leakage_rephrase import rephrase_shard

    settings = _scan_settings(a)
    rephrase_shard(a.benchmark, settings["corpus"], a.part, a.parts, a.input, settings, a.pairs, a.output)


@command("leakage-rephrase-gather")
@_args(
    SCAN,
    path("--benchmark", many=True),
    (("--parts",), {"type": Path, "nargs": "+", "required": True, "help": "the shards' rephrase candidates"}),
    SETTINGS,
    path("--output"),
    path("--markdown"),
)
def _leakage_rephrase_gather(a):
    from leaktrace.stages.leakage_rephrase import rephrase_gather

    rephrase_gather(a.benchmark, a.parts, _scan_settings(a), a.output, a.markdown)


@command("leakage-rq4")
@_args(
    SCAN,
    (("--benchmark",), {"required": True, "help": "the scanned testbed benchmark's name"}),
    path("--pairs"),
    path("--samples"),
    (("--scores",), {"nargs": "+", "required": True, "help": "MODEL=PATH"}),
    SETTINGS,
    SEED,
    path("--output"),
    path("--markdown"),
)
def _leakage_rq4(a):
    from leaktrace.stages.leakage_rq4 import rq4

    rq4(a.scan, a.benchmark, a.pairs, a.samples, _named_paths(a.scores), a.settings, a.seed, a.output, a.markdown)


@command("leakage-rq4-perplexity")
@_args(
    (("--benchmarks",), {"nargs": "+", "required": True, "help": "NAME=PATH of every benchmark the scan read"}),
    MODEL,
    ADAPTER,
    (("--name",), {"required": True, "help": "the model's name in the tables"}),
    BATCH,
    path("--output"),
)
def _leakage_rq4_perplexity(a):
    from leaktrace.stages.leakage_rq4_perplexity import perplexities

    perplexities(_named_paths(a.benchmarks), a.model, _adapter(a), a.name, a.batch, a.output)


@command("leakage-rq4-ranking")
@_args(
    SCAN,
    path("--pairs"),
    (("--benchmarks",), {"nargs": "+", "required": True, "help": "the scan's benchmarks"}),
    (("--perplexity",), {"nargs": "+", "required": True, "help": "MODEL=PATH"}),
    SETTINGS,
    SEED,
    path("--output"),
    path("--markdown"),
)
def _leakage_rq4_ranking(a):
    from leaktrace.stages.leakage_rq4 import rq4_ranking

    rq4_ranking(a.scan, a.benchmarks, a.pairs, _named_paths(a.perplexity), a.settings, a.seed, a.output, a.markdown)


@command("leakage-rq3-runs")
@_args(
    path("--benchmark"),
    MODEL,
    ADAPTER,
    (("--name",), {"required": True, "help": "the model's name in the tables"}),
    SETTINGS,
    BATCH,
    SEED,
    GENERATOR,
    CACHE_DIR,
    path("--output"),
)
def _leakage_rq3_runs(a):
    from leaktrace.stages.leakage_rq3_runs import generate_and_run

    generate_and_run(
        a.benchmark,
        a.model,
        _adapter(a),
        a.name,
        a.settings,
        a.batch,
        a.seed,
        a.output,
        generator=a.generator,
        cache_dir=a.cache_dir,
    )


@command("leakage-rq3")
@_args(
    SCAN,
    (("--benchmark",), {"required": True, "help": "the benchmark's name"}),
    path("--pairs"),
    (("--runs",), {"nargs": "+", "required": True, "help": "MODEL=PATH"}),
    SETTINGS,
    SEED,
    path("--output"),
    path("--markdown"),
)
def _leakage_rq3(a):
    from leaktrace.stages.leakage_rq3 import rq3

    rq3(a.scan, a.benchmark, a.pairs, _named_paths(a.runs), a.settings, a.seed, a.output, a.markdown)


@command("mutations")
@_args(
    path("--benchmark"),
    path("--samples"),
    path("--variants"),
    path("--lexicon"),
    SETTINGS,
    SEED,
    (("--workers",), {"type": int, "default": 1}),
    path("--output"),
    path("--renames"),
)
def _mutations(a):
    from leaktrace.stages.mutate import make_mutations_table

    make_mutations_table(
        a.benchmark, a.samples, a.variants, a.lexicon, a.settings, a.seed, a.workers, a.output, a.renames
    )


@command("mutation-tokens")
@_args(
    path("--mutations"),
    path("--variants"),
    path("--samples"),
    path("--corpus", many=True),
    MODEL,
    ADAPTER,
    (
        ("--recall",),
        {"type": _json, "default": None, "help": "score.methods.recall as JSON (omit: no prefixed passes)"},
    ),
    (("--neighbors",), {"action": "store_true", "help": "also score the mutated texts' Neighbor neighbours"}),
    BATCH,
    SEED,
    path("--output"),
)
def _mutation_tokens(a):
    from leaktrace.stages.mutate import score_mutations

    score_mutations(
        a.mutations,
        a.variants,
        a.samples,
        a.corpus,
        a.model,
        _adapter(a),
        a.recall,
        a.batch,
        a.seed,
        a.output,
        neighbours=a.neighbors,
    )


@command("mutation-study")
@_args(
    path("--mutations"),
    path("--samples"),
    path("--variants"),
    path("--tokens"),
    path("--mutated-tokens"),
    path("--prefixed", required=False),
    path("--reference", required=False),
    path("--reference-mutated", required=False),
    path("--corpus", many=True),
    (("--methods",), {"type": _json, "required": True, "help": "score.methods as JSON"}),
    SETTINGS,
    SEED,
    path("--output-dir"),
)
def _mutation_study(a):
    from leaktrace.stages.mutate import mutation_study

    mutation_study(
        a.mutations,
        a.samples,
        a.variants,
        a.tokens,
        a.mutated_tokens,
        a.prefixed,
        a.reference,
        a.reference_mutated,
        a.corpus,
        a.methods,
        a.settings,
        a.seed,
        a.output_dir,
    )


@command("mutate")
@_args(
    (("--kind",), {"required": True, "choices": ["T1", "T2a", "T2b", "T3", "hybrid"]}),
    (("--target",), {"type": float, "default": None, "help": "T3 / hybrid target similarity (default 0.7 / 0.8)"}),
    (("--seed",), {"type": int, "default": 0}),
    path("--lexicon", required=False),
    (("input",), {"type": Path, "help": "JSONL: id, code, language, optional tests and entry_point"}),
    (("output",), {"type": Path}),
)
def _mutate(a):
    from leaktrace.stages.mutate import mutate_jsonl

    mutate_jsonl(a.kind, a.target, a.seed, a.input, a.output, lexicon=a.lexicon)


@command("train-verifier")
@_args(
    (("input",), {"type": Path, "help": "JSONL(.gz): verify-pairs' fields plus benchmark, bench_id and dup (0/1)"}),
    (("output",), {"type": Path, "help": "the model file (JSON)"}),
    (("--seed",), {"type": int, "default": 0, "help": "the cross-validation folds' and the model's seed"}),
)
def _train_verifier(a):
    from leaktrace.stages.train_verifier import train_verifier

    train_verifier(a.input, a.output, a.seed)


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
            "to be typed): " + ", ".join(sorted([*STAGES, *COMMANDS])) + ".",
            break_on_hyphens=False,
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (arguments, _, line) in PERSON_COMMANDS.items():
        arguments(sub.add_parser(name, help=line, description=line))
    for name, (arguments, _) in COMMANDS.items():
        arguments(sub.add_parser(name))  # no help: left out of the listing, named in the epilog
    return top


def main(argv: list[str] | None = None) -> int:
    from leaktrace.console import PERSON_COMMANDS

    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in STAGES:
        return _run_stage(argv[0], argv[1:])
    args = parser().parse_args(argv)
    if args.command in PERSON_COMMANDS:
        args.argv = argv[1:]
        return PERSON_COMMANDS[args.command][1](args)
    _log_to_stderr()
    try:
        COMMANDS[args.command][1](args)
    except InputError as err:
        logging.getLogger("leaktrace").error("bad input: %s", one_line(str(err)))
        return 2
    return 0


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
