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
    "audit-watermark-table": "leaktrace.stages.watermark:audit_watermark_table",
    "fetch-model": "leaktrace.models.fetch:fetch_model",
    "leakage-gather": "leaktrace.stages.leakage:gather",
    "leakage-index": "leaktrace.stages.leakage:build_index",
    "leakage-rephrase": "leaktrace.stages.leakage_rephrase:rephrase_shard",
    "leakage-rephrase-gather": "leaktrace.stages.leakage_rephrase:rephrase_gather",
    "leakage-rq3": "leaktrace.stages.leakage_rq3:rq3",
    "leakage-rq4": "leaktrace.stages.leakage_rq4:rq4",
    "leakage-rq4-ranking": "leaktrace.stages.leakage_rq4:rq4_ranking",
    "leakage-scan": "leaktrace.stages.leakage:scan_shard",
    "publish": "leaktrace.stages.watermark:publish_benchmark",
    "serve": "leaktrace.stages.serve:serve_model",
    "twin": "leaktrace.stages.twin:twin_tables",
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


@command("lexicon")
@_args(path("--code", many=True), SETTINGS, path("--output"))
def _lexicon(a):
    from leaktrace.stages.variants import build_lexicon

    build_lexicon(a.code, a.settings, a.output)


@command("filter-functions")
@_args(path("--benchmark"), SETTINGS, path("--output"))
def _filter_functions(a):
    from leaktrace.stages.function_filter import filter_functions

    filter_functions(a.benchmark, a.settings, a.output)


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


@command("natural-variants")
@_args(path("--pool"), MODEL, BATCH, SETTINGS, SEED, path("--output"))
def _natural_variants(a):
    from leaktrace.stages.variants import select_natural_variants

    select_natural_variants(a.pool, a.model, a.batch, a.settings, a.seed, a.output)


@command("split")
@_args(
    path("--functions"),
    path("--variants"),
    path("--tokens"),
    SETTINGS,
    SEED,
    (("--recall-prefix",), {"type": int, "default": 0, "help": "non-members held out as ReCaLL's prefix"}),
    path("--output"),
)
def _split(a):
    from leaktrace.stages.split import split_samples

    split_samples(a.functions, a.variants, a.tokens, a.settings, a.seed, a.output, recall_prefix=a.recall_prefix)


@command("twin-split")
@_args(path("--samples"), path("--output"))
def _twin_split(a):
    from leaktrace.stages.split import twin_split

    twin_split(a.samples, a.output)


@command("mix")
@_args(
    path("--samples"),
    path("--benchmark"),
    path("--text", many=True),
    (("--text-per-code",), {"type": float, "required": True, "help": "general-text tokens per member-code token"}),
    (
        ("--member-order",),
        {
            "choices": ["shuffled", "canonical"],
            "default": "shuffled",
            "help": "canonical: members packed in the benchmark's order",
        },
    ),
    (
        ("--member-copies",),
        {"type": int, "default": 1, "help": "each member inserted this many times; the text drawn for one copy"},
    ),
    MODEL,
    SEED,
    path("--output"),
)
def _mix(a):
    from leaktrace.stages.train import make_mix

    make_mix(
        a.samples, a.benchmark, a.text, a.text_per_code, a.model, a.seed, a.output, a.member_order, a.member_copies
    )


@command("sham-mix")
@_args(path("--mix"), path("--code", many=True), MODEL, SEED, path("--output"))
def _sham_mix(a):
    from leaktrace.stages.train import make_sham_mix

    make_sham_mix(a.mix, a.code, a.model, a.seed, a.output)


@command("train")
@_args(
    path("--mix"),
    MODEL,
    SETTINGS,
    SEED,
    path("--adapters", many=True),
    path("--log"),
    path("--checkpoint-dir", required=False),
)
def _train(a):
    from leaktrace.stages.train import train_adapters

    train_adapters(a.mix, a.model, a.settings, a.seed, a.adapters, a.log, a.checkpoint_dir)


@command("select-lr")
@_args(path("--mix"), path("--text", many=True), MODEL, SETTINGS, SEED, path("--output"))
def _select_lr(a):
    from leaktrace.stages.learning_rate import select_learning_rate

    select_learning_rate(a.mix, a.text, a.model, a.settings, a.seed, a.output)


ADAPTER = path("--adapter", required=False)


def _adapter(a) -> str | None:
    return str(a.adapter) if a.adapter else None


@command("tokens")
@_args(
    path("--variants"), MODEL, ADAPTER, (("--originals-only",), {"action": "store_true"}), SETTINGS, path("--output")
)
def _tokens(a):
    from leaktrace.stages.score import score_tokens

    score_tokens(a.variants, a.model, _adapter(a), a.settings, a.output, originals_only=a.originals_only)


@command("recall-tokens")
@_args(path("--variants"), path("--samples"), MODEL, ADAPTER, SETTINGS, BATCH, SEED, path("--output"))
def _recall_tokens(a):
    from leaktrace.stages.score import score_prefixed

    score_prefixed(a.variants, a.samples, a.model, _adapter(a), a.settings, a.batch, a.seed, a.output)


@command("token-counts")
@_args(path("--corpus", many=True), MODEL, path("--output"))
def _token_counts(a):
    from leaktrace.stages.score import count_corpus_tokens

    count_corpus_tokens(a.corpus, a.model, a.output)


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


@command("scores")
@_args(
    path("--tokens"),
    path("--variants"),
    path("--reference", required=False),
    path("--oracle-reference", required=False),
    path("--prefixed", required=False),
    path("--token-counts", required=False),
    path("--blackbox", required=False),
    (
        ("--learned",),
        {
            "type": Path,
            "nargs": "+",
            "action": "extend",
            "default": [],
            "help": "the learned baselines' per-sample outputs (repeatable)",
        },
    ),
    (("--model",), {"type": _json, "help": "the scored model (checks DC-PDD's counts were made with its tokenizer)"}),
    SETTINGS,
    path("--output"),
)
def _scores(a):
    from leaktrace.stages.score import score_methods

    score_methods(
        a.tokens,
        a.variants,
        a.settings,
        a.output,
        reference=a.reference,
        oracle_reference=a.oracle_reference,
        prefixed=a.prefixed,
        token_counts=a.token_counts,
        blackbox=a.blackbox,
        model=a.model,
        learned=tuple(a.learned),
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


@command("dpdllm-generations")
@_args(path("--variants"), MODEL, ADAPTER, SETTINGS, BATCH, SEED, path("--output"))
def _dpdllm_generations(a):
    from leaktrace.stages.dpdllm_veilprobe import dpdllm_generations

    dpdllm_generations(a.variants, a.model, _adapter(a), a.settings, a.batch, a.seed, a.output)


@command("dpdllm-features")
@_args(path("--generations"), MODEL, path("--reference-adapter"), BATCH, path("--output"))
def _dpdllm_features(a):
    from leaktrace.stages.dpdllm_veilprobe import dpdllm_features

    dpdllm_features(a.generations, a.model, a.reference_adapter, a.batch, a.output)


FOLDS = (("--folds",), {"type": int, "required": True, "help": "calibration.cross_fit_folds: folds of the cross-fit"})


@command("dpdllm-fit")
@_args(path("--features"), path("--samples"), FOLDS, SEED, path("--output"), path("--model-dir"))
def _dpdllm_fit(a):
    from leaktrace.stages.dpdllm_veilprobe import fit_dpdllm

    fit_dpdllm(a.features, a.samples, a.folds, a.seed, a.output, a.model_dir)


@command("veilprobe-perturb")
@_args(
    path("--variants"),
    MODEL,
    SETTINGS,
    (("--blackbox",), {"type": _json, "required": True, "help": "the srdetection_blackbox slice (its prefix split)"}),
    BATCH,
    SEED,
    path("--output"),
)
def _veilprobe_perturb(a):
    from leaktrace.stages.dpdllm_veilprobe import veilprobe_perturb

    veilprobe_perturb(a.variants, a.model, a.settings, a.blackbox, a.batch, a.seed, a.output)


@command("veilprobe-features")
@_args(path("--blackbox"), path("--perturbed"), MODEL, SETTINGS, SEED, path("--output"), path("--mapping-dir"))
def _veilprobe_features(a):
    from leaktrace.stages.dpdllm_veilprobe import veilprobe_features

    veilprobe_features(a.blackbox, a.perturbed, a.model, a.settings, a.seed, a.output, a.mapping_dir)


@command("veilprobe-fit")
@_args(path("--features"), path("--samples"), SETTINGS, FOLDS, SEED, path("--output"), path("--model-dir"))
def _veilprobe_fit(a):
    from leaktrace.stages.dpdllm_veilprobe import fit_veilprobe

    fit_veilprobe(a.features, a.samples, a.settings, a.folds, a.seed, a.output, a.model_dir)


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


@command("audit-tables")
@_args(
    (("--scores",), {"nargs": "+", "required": True, "help": "MODEL:BENCHMARK=PATH"}),
    (("--variants",), {"nargs": "+", "required": True, "help": "BENCHMARK=PATH of its variants table"}),
    path("--held-out-ids", required=False),
    path("--blind", required=False),
    SETTINGS,
    path("--output-dir"),
)
def _audit(a):
    from leaktrace.stages.audit import audit

    audit(
        _paired_paths(a.scores, "BENCHMARK"),
        _named_paths(a.variants),
        a.settings,
        a.output_dir,
        a.held_out_ids,
        a.blind,
    )


@command("audit-blind")
@_args(
    (("--benchmarks",), {"nargs": "+", "required": True, "help": "BENCHMARK=PATH of the ingested tables"}),
    path("--control-ids"),
    SETTINGS,
    SEED,
    path("--output"),
)
def _audit_blind(a):
    from leaktrace.stages.audit_blind import audit_blind

    audit_blind(_named_paths(a.benchmarks), a.control_ids, a.settings, a.seed, a.output)


@command("testbed-blind")
@_args(
    (("--benchmark",), {"required": True, "help": "the benchmark's name"}),
    path("--benchmark-table"),
    path("--samples"),
    SETTINGS,
    SEED,
    path("--output"),
    path("--scores-output"),
)
def _testbed_blind(a):
    from leaktrace.stages.testbed_blind import testbed_blind_stage

    testbed_blind_stage(a.benchmark, a.benchmark_table, a.samples, a.settings, a.seed, a.output, a.scores_output)


@command("shifted-controls")
@_args(
    (("--benchmark",), {"required": True, "help": "the pool benchmark's name"}),
    path("--benchmark-table"),
    path("--target"),
    path("--reference"),
    SETTINGS,
    SEED,
    path("--output"),
    path("--summary"),
    path("--report"),
    path("--page"),
)
def _shifted_controls(a):
    from leaktrace.stages.shifted_controls import shifted_controls

    shifted_controls(
        a.benchmark, a.benchmark_table, a.target, a.reference, a.settings, a.seed, a.output, a.summary, a.report, a.page
    )


@command("audit-contamination")
@_args(
    (("--scores",), {"nargs": "+", "required": True, "help": "MODEL:BENCHMARK=PATH"}),
    (("--benchmarks",), {"nargs": "+", "required": True, "help": "BENCHMARK=PATH of the ingested tables"}),
    path("--control-ids"),
    SETTINGS,
    SEED,
    path("--output"),
    path("--report"),
    path("--blind", required=False),
    path("--verdicts", required=False),
    path("--verdicts-report", required=False),
)
def _audit_contamination(a):
    from leaktrace.stages.audit_contamination import audit_contamination

    audit_contamination(
        _paired_paths(a.scores, "BENCHMARK"),
        _named_paths(a.benchmarks),
        a.control_ids,
        a.settings,
        a.seed,
        a.output,
        a.report,
        a.blind,
        a.verdicts,
        a.verdicts_report,
    )


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


@command("aggregate")
@_args(
    path("--samples"),
    (("--scores",), {"nargs": "+", "required": True, "help": "MODEL=PATH"}),
    (("--tokens",), {"nargs": "+", "required": True, "help": "MODEL=PATH"}),
    path("--variants"),
    (
        ("--fragments",),
        {
            "nargs": "*",
            "default": [],
            "help": "FAMILY=PATH: Markdown sections of other stages, each on its family's page",
        },
    ),
    (
        ("--calibration-rows",),
        {
            "type": Path,
            "nargs": "*",
            "default": [],
            "help": "row files of leaktrace.calibration.table, joined into calibration.parquet",
        },
    ),
    path("--blind", required=False),
    path("--blind-scores", required=False),
    SETTINGS,
    SEED,
    path("--output-dir"),
)
def _aggregate(a):
    from leaktrace.stages.aggregate import aggregate

    fragments = tuple((family, Path(p)) for family, _, p in (f.partition("=") for f in a.fragments))
    blind = (a.blind, a.blind_scores) if a.blind and a.blind_scores else None
    aggregate(
        a.samples,
        _named_paths(a.scores),
        _named_paths(a.tokens),
        a.variants,
        a.settings,
        a.seed,
        a.output_dir,
        fragments,
        tuple(a.calibration_rows),
        blind,
    )


@command("dose-order")
@_args(path("--benchmark"), SEED, path("--output"))
def _dose_order(a):
    from leaktrace.stages.dose import dose_order

    dose_order(a.benchmark, a.seed, a.output)


@command("dose")
@_args(
    path("--samples"),
    (
        ("--scores",),
        {"nargs": "+", "required": True, "help": "MODEL=PATH: each dose model's scores.parquet (the members' arm)"},
    ),
    (("--twins",), {"nargs": "+", "default": [], "help": "TWIN=PATH: each dose twin's scores.parquet"}),
    (
        ("--watermark",),
        {"nargs": "+", "default": [], "help": "MODEL=PATH: each watermark-arm model's rank-test result"},
    ),
    (
        ("--exchangeability",),
        {"nargs": "+", "default": [], "help": "MODEL=PATH: each order-arm model's exchangeability result"},
    ),
    (("--blind",), {"type": Path, "action": "append", "default": [], "help": "the testbed's blind-baseline row file"}),
    SETTINGS,
    SEED,
    path("--output-dir"),
)
def _dose(a):
    from leaktrace.stages.dose import dose_table

    dose_table(
        a.samples,
        _named_paths(a.scores),
        a.settings,
        a.seed,
        a.output_dir,
        twins=_named_paths(a.twins),
        watermark=_named_paths(a.watermark),
        exchangeability=_named_paths(a.exchangeability),
        blind=a.blind,
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


@command("contamination")
@_args(
    path("--samples"),
    (("--scores",), {"nargs": "+", "required": True, "help": "MODEL=PATH, base model first"}),
    path("--held-out-ids", required=False),
    (("--exchangeability",), {"nargs": "*", "default": [], "help": "MODEL=PATH of the exchangeability stage"}),
    (
        ("--exchangeability-calibration",),
        {"nargs": "*", "default": [], "help": "MODEL=PATH of the exchangeability test on random orders"},
    ),
    SETTINGS,
    SEED,
    path("--output-dir"),
)
def _contamination(a):
    from leaktrace.stages.contamination import contamination

    contamination(
        a.samples,
        _named_paths(a.scores),
        a.settings,
        a.seed,
        a.output_dir,
        a.held_out_ids,
        _named_paths(a.exchangeability),
        _named_paths(a.exchangeability_calibration),
    )


CALIBRATION_ARGS = (
    path("--samples"),
    (("--scores",), {"nargs": "+", "required": True, "help": "MODEL=PATH of each model's scores.parquet"}),
    (
        ("--learned",),
        {"nargs": "*", "default": [], "help": "MODEL:FAMILY=PATH of a learned detector's features (refitted)"},
    ),
    SETTINGS,
    SEED,
    path("--output"),
)


@command("calibration-conformal")
@_args(*CALIBRATION_ARGS)
def _calibration_conformal(a):
    from leaktrace.stages.calibration import conformal_calibration

    conformal_calibration(
        a.samples, _named_paths(a.scores), _paired_paths(a.learned, "FAMILY"), a.settings, a.seed, a.output
    )


@command("calibration-membership")
@_args(*CALIBRATION_ARGS)
def _calibration_membership(a):
    from leaktrace.stages.calibration import membership_calibration

    membership_calibration(
        a.samples, _named_paths(a.scores), _paired_paths(a.learned, "FAMILY"), a.settings, a.seed, a.output
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


@command("audit-exchangeability-table")
@_args(path("--rows", many=True), path("--output"), path("--report"))
def _audit_exchangeability_table(a):
    from leaktrace.stages.audit_exchangeability_table import audit_exchangeability_table

    audit_exchangeability_table(a.rows, a.output, a.report)


@command("dataset-inference")
@_args(
    (
        ("--scores",),
        {
            "type": Path,
            "required": True,
            "help": "the suspect set's scores: leaktrace's scores.parquet, or Parquet/CSV with sample_id "
            "and one numeric column per detector",
        },
    ),
    path("--validation-scores", required=False),
    path("--validation-ids", required=False),
    path("--reference-scores", required=False),
    (("--name",), {"default": "model", "help": "the model's name in the output"}),
    (("--alpha",), {"type": float, "default": 0.05}),
    (("--n-splits",), {"type": int, "default": 11, "help": "random A/B splits, combined as 2 x median"}),
    (("--curve-sizes",), {"type": int, "nargs": "*", "default": [8, 16, 24, 32, 48]}),
    (("--curve-draws",), {"type": int, "default": 5}),
    (("--exclude",), {"nargs": "*", "default": ["ref_oracle"], "help": "detectors not used as features"}),
    (("--method",), {"default": "neighbor", "help": "with --reference-scores: the per-sample preference detector"}),
    (("--n-resamples",), {"type": int, "default": 999}),
    (("--seed",), {"type": int, "default": 0}),
    path("--output"),
    path("--curve", required=False),
)
def _dataset_inference(a):
    """A dataset-level p-value on score tables a user brings."""
    from leaktrace.stages.contamination import dataset_inference_tables

    settings = {
        "alpha": a.alpha,
        "dataset_inference": {
            "n_splits": a.n_splits,
            "exclude_methods": a.exclude,
            "curve_sizes": a.curve_sizes,
            "curve_draws": a.curve_draws,
        },
        "variant_preference": {"method": a.method, "n_resamples": a.n_resamples},
    }
    row = dataset_inference_tables(
        a.scores,
        settings,
        a.seed,
        a.output,
        name=a.name,
        validation_scores=a.validation_scores,
        validation_ids=a.validation_ids,
        reference_scores=a.reference_scores,
        curve_output=a.curve,
    )
    print(
        json.dumps(
            {
                k: row.get(k)
                for k in ("model", "test", "validation", "n_suspect", "n_validation", "p_value", "smallest_n")
            }
        )
    )


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
