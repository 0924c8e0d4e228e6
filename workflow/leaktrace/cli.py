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
    "audit-blind": "leaktrace.stages.audit_blind:audit_blind",
    "audit-contamination": "leaktrace.stages.audit_contamination:audit_contamination",
    "audit-exchangeability": "leaktrace.stages.exchangeability:audit_exchangeability",
    "audit-exchangeability-table": "leaktrace.stages.audit_exchangeability_table:audit_exchangeability_table",
    "audit-tables": "leaktrace.stages.audit:audit",
    "dpdllm-features": "leaktrace.stages.dpdllm_veilprobe:dpdllm_features",
    "dpdllm-fit": "leaktrace.stages.dpdllm_veilprobe:fit_dpdllm",
    "dpdllm-generations": "leaktrace.stages.dpdllm_veilprobe:dpdllm_generations",
    "exchangeability": "leaktrace.stages.exchangeability:exchangeability",
    "exchangeability-calibration": "leaktrace.stages.exchangeability:exchangeability_calibration",
    "recall-tokens": "leaktrace.stages.score:score_prefixed",
    "scores": "leaktrace.stages.score:score_methods",
    "shifted-controls": "leaktrace.stages.shifted_controls:shifted_controls",
    "token-counts": "leaktrace.stages.score:count_corpus_tokens",
    "tokens": "leaktrace.stages.score:score_tokens",
    "twin": "leaktrace.stages.twin:twin_tables",
    "veilprobe-features": "leaktrace.stages.dpdllm_veilprobe:veilprobe_features",
    "veilprobe-fit": "leaktrace.stages.dpdllm_veilprobe:fit_veilprobe",
    "veilprobe-perturb": "leaktrace.stages.dpdllm_veilprobe:veilprobe_perturb",
    "verdict": "leaktrace.stages.verdict:verdict",
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


@command("serve")
@_args(
    (("model",), {"help": "a local model directory or hub id"}),
    (("--adapter",), {"help": "a PEFT adapter directory"}),
    (("--revision",), {}),
    (("--dtype",), {"default": "float32"}),
    (("--device",), {"default": "cpu"}),
    (("--name",), {"help": "the model name clients ask for (default: MODEL)"}),
    (("--host",), {"default": "127.0.0.1", "help": "loopback only unless --allow-remote"}),
    (("--port",), {"type": int, "default": 8000, "help": "0: any free port (the log says which)"}),
    (("--allow-remote",), {"action": "store_true"}),
    (("--chat-template",), {"type": Path, "help": "a Jinja chat template for a tokenizer without one"}),
    (("--api-key-env",), {"help": "require the key held by this environment variable"}),
    (("--max-length",), {"type": int, "help": "cap on tokens per sequence"}),
)
def _serve(a):
    from leaktrace.models.backend import ModelSpec
    from leaktrace.models.serve import serve

    spec = ModelSpec(a.model, adapter=a.adapter, dtype=a.dtype, device=a.device, revision=a.revision)
    try:
        serve(
            spec,
            name=a.name,
            host=a.host,
            port=a.port,
            allow_remote=a.allow_remote,
            chat_template=a.chat_template.read_text(encoding="utf-8") if a.chat_template else None,
            api_key_env=a.api_key_env,
            max_length=a.max_length,
        )
    except ValueError as err:
        raise InputError("serve", None, str(err)) from None


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


@command("fetch-model")
@_args(
    (("--model",), {"required": True, "help": "a hub id"}), (("--revision",), {"default": None}), path("--output-dir")
)
def _fetch_model(a):
    from leaktrace.models.fetch import fetch_model

    fetch_model(a.model, a.output_dir, a.revision)


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


@command("verify-pairs")
@_args(
    (("input",), {"type": Path, "help": "JSONL: bench_text, corpus_text, optional id, language, tests, entry_point"}),
    (("output",), {"type": Path, "help": "Parquet: one verdict a pair, with its clone type and the values behind it"}),
    (("--preset",), {"default": "default", "choices": ["default", "lessleak"], "help": "tokeniser and thresholds"}),
    (
        ("--model",),
        {
            "default": None,
            "help": "the verifier: shipped (the preset's: the learned one), rules, or a model file from train-verifier",
        },
    ),
    (("--execute",), {"action": "store_true", "help": "run pairs with tests in the sandbox (execution equivalence)"}),
    (("--isolation",), {"default": "full", "choices": ["full", "weak"], "help": "the sandbox's isolation"}),
    (("--workers",), {"type": int, "default": 1}),
    (("--judge",), {"type": _json, "default": None, "help": 'an LLM judge as JSON: {"model": PATH_OR_HUB_ID, ...}'}),
)
def _verify_pairs(a):
    from leaktrace.sandbox import SandboxLimits
    from leaktrace.stages.verify_pairs import verify_pairs

    verify_pairs(
        a.input,
        a.output,
        preset=a.preset,
        model=a.model,
        execute=a.execute,
        limits=SandboxLimits(isolation=a.isolation),
        workers=a.workers,
        judge=a.judge,
    )


@command("train-verifier")
@_args(
    (("input",), {"type": Path, "help": "JSONL(.gz): verify-pairs' fields plus benchmark, bench_id and dup (0/1)"}),
    (("output",), {"type": Path, "help": "the model file (JSON)"}),
    (("--seed",), {"type": int, "default": 0, "help": "the cross-validation folds' and the model's seed"}),
)
def _train_verifier(a):
    from leaktrace.stages.train_verifier import train_verifier

    train_verifier(a.input, a.output, a.seed)


def _model_argument(text: str) -> dict:
    """A model as JSON ({"path", "dtype", "device", "max_length"}) or a bare path or hub id (float32 on the CPU)."""
    spec = _json(text) if text.lstrip().startswith("{") else {"path": text}
    if not isinstance(spec, dict) or "path" not in spec:
        raise argparse.ArgumentTypeError(f"a model is a path or a JSON object with a path, got {text!r}")
    return {"dtype": "float32", "device": "cpu", **spec}


@command("publish")
@_args(
    (("input",), {"type": Path, "help": "a benchmark file: JSONL (.gz), JSON, Parquet or CSV"}),
    (
        ("out_dir",),
        {"type": Path, "help": "the release: published.jsonl and commitment.json to publish, private/ to keep"},
    ),
    (
        ("--forms",),
        {"type": int, "required": True, "help": "K: each problem gets K + 1 equivalent forms, one published"},
    ),
    (
        ("--seed-file",),
        {
            "type": Path,
            "default": None,
            "help": "the secret (256 random bits in hex), created 0600 where absent; default OUT_DIR/private/secret.key",
        },
    ),
    (
        ("--include-original",),
        {
            "action": "store_true",
            "help": "the original is one of the K + 1 forms (only for an original never made public)",
        },
    ),
    (("--preset",), {"default": "humaneval", "help": "the input's field names (leaktrace/data/benchmarks.py PRESETS)"}),
    (
        ("--format",),
        {"default": None, "choices": ["jsonl", "json", "parquet", "csv"], "help": "default: from the name"},
    ),
    (
        ("--fields",),
        {"type": _json, "default": None, "help": 'field mapping overrides as JSON, e.g. \'{"id": "name"}\''},
    ),
    (("--limit",), {"type": int, "default": None, "help": "the first N problems only"}),
    (
        ("--transforms",),
        {
            "nargs": "+",
            "default": ["rename", "test_cases", "T3"],
            "choices": ["rename", "test_cases", "T3", "T1"],
            "help": "how forms are made, applied in this order",
        },
    ),
    (
        ("--candidates",),
        {"type": int, "default": None, "help": "candidate forms validated per problem; default 2 (K + 1)"},
    ),
    (("--names-per-form",), {"type": int, "default": None, "help": "names each renaming changes; default every name"}),
    (("--t3-target",), {"type": float, "default": 0.9, "help": "T3's target line similarity"}),
    path("--lexicon", required=False),
    (("--seed",), {"type": int, "default": 0, "help": "the forms' generation seed (not the secret)"}),
    (("--workers",), {"type": int, "default": 1, "help": "sandbox runs at a time"}),
    (("--isolation",), {"default": "full", "choices": ["full", "weak"], "help": "the sandbox's isolation"}),
    (("--sandbox",), {"type": _json, "default": {}, "help": "other SandboxLimits fields as JSON"}),
    (
        ("--secret-from-seed",),
        {
            "type": int,
            "default": None,
            "help": "testbed only: derive the secret from this run seed (reproducible, so no secret)",
        },
    ),
)
def _publish(a):
    from leaktrace.sandbox import SandboxLimits
    from leaktrace.stages.watermark import publish
    from leaktrace.watermark.forms import FormSettings
    from leaktrace.watermark.release import layout

    try:
        settings = FormSettings(
            forms=a.forms,
            candidates=a.candidates or 2 * (a.forms + 1),
            transforms=tuple(a.transforms),
            names_per_form=a.names_per_form,
            t3_target=a.t3_target,
            include_original=a.include_original,
        )
    except ValueError as err:
        raise InputError("arguments", None, str(err)) from None
    reader = layout(a.input, a.format, {"preset": a.preset, "fields": a.fields})
    publish(
        a.input,
        a.out_dir,
        reader,
        settings,
        seed=a.seed,
        limits=SandboxLimits(**{"isolation": a.isolation, **a.sandbox}),
        workers=a.workers,
        seed_file=a.seed_file,
        lexicon=a.lexicon,
        limit=a.limit,
        testbed_seed=a.secret_from_seed,
    )


@command("watermark-test")
@_args(
    (("out_dir",), {"type": Path, "help": "the release directory publish wrote"}),
    (
        ("--model",),
        {
            "type": _model_argument,
            "required": True,
            "help": "a path or hub id, or JSON {path, dtype, device, max_length}",
        },
    ),
    ADAPTER,
    (("--name",), {"default": None, "help": "the model's name in the results; default its path"}),
    path("--published", required=False),
    path("--commitment", required=False),
    (("--seed-file",), {"type": Path, "default": None, "help": "default OUT_DIR/private/secret.key"}),
    (("--batch-size",), {"type": int, "default": 32}),
    (("--token-budget",), {"type": int, "default": None, "help": "padded tokens per batch (texts sorted by length)"}),
    (("--seed",), {"type": int, "default": 0, "help": "breaks loss ties"}),
    (("--output-dir",), {"type": Path, "default": None, "help": "default OUT_DIR/private/tests/<name>"}),
)
def _watermark_test(a):
    from leaktrace.stages.watermark import test_release

    name = a.name or a.model["path"]
    output_dir = a.output_dir or a.out_dir / "private" / "tests" / name.replace("/", "--")
    test_release(
        a.out_dir,
        a.model,
        _adapter(a),
        name,
        {"batch_size": a.batch_size, "token_budget": a.token_budget},
        a.seed,
        output_dir,
        published=a.published,
        commitment=a.commitment,
        seed_file=a.seed_file,
    )


@command("audit-watermark-table")
@_args(
    (("--results",), {"nargs": "+", "required": True, "help": "MODEL:BENCHMARK=PATH of each watermark-test result"}),
    path("--output"),
    path("--report"),
)
def _audit_watermark_table(a):
    from leaktrace.stages.watermark import audit_watermark_table

    audit_watermark_table(_paired_paths(a.results, "BENCHMARK"), a.output, a.report)


@command("watermark-calibration")
@_args(
    (
        ("--tokens",),
        {"nargs": "+", "required": True, "help": "MODEL=PATH: the forms' token pass under each unexposed model"},
    ),
    (("--alphas",), {"type": float, "nargs": "+", "required": True}),
    (("--draws",), {"type": int, "required": True, "help": "random publications per model"}),
    SEED,
    path("--output"),
    path("--counts"),
)
def _watermark_calibration(a):
    from leaktrace.stages.watermark import calibrate

    calibrate(_named_paths(a.tokens), a.alphas, a.draws, a.seed, a.output, a.counts)


@command("watermark-report")
@_args(
    (("--results",), {"nargs": "+", "required": True, "help": "MODEL=PATH of each test's result.parquet"}),
    (("--ranks",), {"nargs": "+", "required": True, "help": "MODEL=PATH of each test's ranks.parquet"}),
    path("--calibration"),
    path("--counts"),
    path("--commitment"),
    path("--p-values", required=False),
    SETTINGS,
    path("--output-dir"),
)
def _watermark_report(a):
    from leaktrace.stages.watermark import report

    report(
        _named_paths(a.results),
        _named_paths(a.ranks),
        a.calibration,
        a.counts,
        a.commitment,
        a.settings,
        a.output_dir,
        p_values=a.p_values,
    )


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
