# What every rule file needs that is not a rule: config validation, the run's
# names (benchmarks, corpora, ratios, seeds), wildcard constraints, settings
# slices, environments and the final outputs. Paths are in rules/paths.smk,
# the scored models in rules/models.smk.

import json
import os
import re
import shlex
import sys
from pathlib import Path

from snakemake.io import is_flagged
from snakemake.utils import validate

from leaktrace import forkserver
from leaktrace.configuration import drop_removed_entries, validate_config
from leaktrace.failures import failure_summary
from leaktrace.models.backend import is_hub_id
from leaktrace.models.naming import BASE_MODEL, CONTROLS, REF_MODEL, TRAINED_MODEL, trained_model_labels
from leaktrace.plan_checks import check_plan
from leaktrace.models.hub_reach import hub_problem
from leaktrace.rerun import withdraw_outputs
from leaktrace.run_kind import benchmarks_on_testbed, run_kind, training_notice
from leaktrace.seeding import derive_seed
from leaktrace.stage_entry import stage_settings


# A --configfile's `null` entry removes the default's entry of a named
# collection (benchmarks, corpora, score.methods, leakage.scans, leakage.clean):
# see leaktrace/configuration.py.
drop_removed_entries(config)
# A config that fails the schema stops here with one or two lines naming the key (not the whole schema).
validate_config(config, os.path.join(workflow.basedir, "config", "schema.yaml"), validate)


# --- planning checks: every user input (model paths, benchmark files, control ids,
# corpus globs, output names) checked before any job starts or any output is deleted; all problems
# in one error (leaktrace/plan_checks.py). The shipped models may be missing when a requested
# target rebuilds them (`make base-model`, `make reference-model`).
def _rebuilt_models():
    targets = set(sys.argv)  # the command line's targets (Snakemake knows them only once this file is read)
    return [config[block]["path"] for block, rule_name in (("base_model", "pretrain_base_model"),
                                                             ("reference_model", "pretrain_reference_model"))
            if rule_name in targets and config[block].get("path")]


# A run that will fetch asks whether each hub id can be fetched; a dry run plans offline and asks nothing.
DRY_RUN = any(arg in ("-n", "--dry-run", "--dryrun") for arg in sys.argv)
check_plan(config, buildable=_rebuilt_models(),
           hub_problem=None if DRY_RUN else lambda repo: hub_problem(repo, Path(config["cluster"]["hub_cache"])))
# --- end of planning checks

RESULTS = f"results/{config['run']}"
# Rules call the package CLI with the interpreter that runs Snakemake (the
# project's virtual environment), or with the rule's conda environment under
# `--sdm conda`, or the image's Python under `--sdm apptainer`.
USE_CONDA = any(kind in str(m).lower() for m in workflow.deployment_settings.deployment_method for kind in ("conda", "apptainer"))
LEAKTRACE_ONLINE = "python -m leaktrace" if USE_CONDA else f"{sys.executable} -m leaktrace"
# Jobs never reach the hub: hub models are fetched once (rules/cluster.smk,
# fetch_hub_model) and read from their local copy; only the fetch and the
# leakage rules, which may stream a hub dataset or ask a hub judge, go online.
LEAKTRACE = f"HF_HUB_OFFLINE=1 {LEAKTRACE_ONLINE}"
# A local run's offline jobs fork from one process that imported PyTorch and
# the rest once (leaktrace/forkserver.py; `fork_server` in the config). Jobs it
# cannot run as a fresh interpreter would, it leaves to run as before.
# The same goes for the Snakemake that runs a group of jobs inside a SLURM
# allocation (cluster.one_job): the leaktrace-slurm executor sets
# forkserver.START_VARIABLE there, and since a spawned Snakemake runs no
# `onstart`, it starts its server as it reads this file.
FORK_SERVER = []
RUNS_GROUP_JOB = workflow.remote_exec and os.environ.get(forkserver.START_VARIABLE) == "1"
USE_FORK_SERVER = (config["fork_server"] and workflow.local_exec and not USE_CONDA
                   and (not workflow.remote_exec or RUNS_GROUP_JOB))


def start_fork_server():
    FORK_SERVER.append(forkserver.start({**os.environ, "HF_HUB_OFFLINE": "1"}))


if USE_FORK_SERVER and RUNS_GROUP_JOB:
    start_fork_server()


# --- no mixed state after a failed rerun: before the first job, the old outputs of every
# job this run will remake are removed (leaktrace/rerun.py; docs/architecture.md, "Reruns").
def withdraw_planned_outputs():
    if workflow.touch:
        return
    planned = [(str(f), is_flagged(f, "directory")) for job in workflow.dag.needrun_jobs()
               for f in job.output if not is_flagged(f, "update") and not is_flagged(f, "protected")]
    removed = withdraw_outputs(planned)
    if removed:
        print(f"leaktrace: removed {len(removed)} old outputs this run remakes (none is left beside newer ones if it "
              "fails)", file=sys.stderr)
# --- end of rerun outputs


onstart:
    withdraw_planned_outputs()
    if USE_FORK_SERVER:
        start_fork_server()


def stop_fork_server():
    for server in FORK_SERVER:
        server.stop()


onsuccess:
    stop_fork_server()


onerror:
    stop_fork_server()
    # Each failed job's own error line, under the console's last words (its log file holds it).
    summary = failure_summary(log)
    if summary:
        print(summary, file=sys.stderr)


# Every model spec the config names (the base model, the `llm` roles, the
# audit's models): which environment the model rules need, and which
# partition a one-job SLURM run asks for (rules/cluster.smk).
CONFIGURED_MODELS = [spec for spec in [config["base_model"], *config["llm"].values(), *config["audit"]["models"]]
                     if isinstance(spec, dict)]

# Environments under `--sdm conda`, one per kind of rule (envs/*.yaml; which
# rule uses which is checked against its imports by tests/test_envs.py): the
# CPU stages run without PyTorch, the model stages with CUDA PyTorch, and with
# the vllm extra when a configured model runs on the vLLM backend.
CPU_ENV = "../envs/cpu.yaml"
MODEL_ENV = "../envs/model.yaml"
if any(spec.get("backend") == "vllm" for spec in CONFIGURED_MODELS):
    MODEL_ENV = "../envs/model-vllm.yaml"
CONDA_ENV = MODEL_ENV  # the one environment of before; it holds every rule's packages
BENCHMARKS = list(config["benchmarks"])
# The benchmarks the testbed (filter, variants, training, scoring, aggregate)
# runs on: `testbed`, or when null, those in HumanEval's own format, except in an
# audit, which never trains unless a benchmark says `testbed: true` (and then says
# so here). Any other benchmark is ingested for scans and the audit only (leaktrace/run_kind.py).
TESTBED_BENCHMARKS = benchmarks_on_testbed(config)
RUN_KIND = run_kind(config)
if training_notice(config):
    print(training_notice(config), file=sys.stderr)
CORPORA = list(config["corpora"])
# Counterfactual sample sources besides the testbed benchmarks (rules/counterfactual.smk);
# their names share the `benchmark` wildcard of the counterfactual outputs.
COUNTERFACTUAL_SOURCES = config["counterfactual"]["sources"]
EPOCHS = sorted(config["train"]["epochs"])
# Mixing ratios (general-text tokens per member-code token) as wildcard
# labels: 5 -> "5", 0.5 -> "0.5". One LoRA run per ratio and training seed,
# one adapter per epoch.
RATIOS = [f"{r:g}" for r in config["train"]["text_per_code"]]
# Training seeds (LoRA initialisation and data order; the split and the mix
# stay fixed). The first seed is trained to every epoch; the others repeat
# only the last epoch, where the headline table reports mean +- sd over seeds.
SEEDS = [str(s) for s in config["train"]["seeds"]]

def _alternatives(names):
    return "|".join(re.escape(n) for n in names)


wildcard_constraints:
    benchmark=_alternatives(BENCHMARKS + list(COUNTERFACTUAL_SOURCES)),
    corpus=_alternatives(CORPORA),
    model=r"reference|(target|sham|twin)-r[0-9.]+-s\d+-e\d+|audit-[A-Za-z0-9_.-]+|ref-model"
          r"|dose(-twin|-wm|-ord)?-r[0-9.]+-c\d+-s\d+-e\d+",  # rules/dose.smk
    control=_alternatives(CONTROLS),
    part=r"\d+",
    epoch=r"\d+",
    ratio=r"[0-9.]+",
    seed=r"\d+",


def _config_slice(keys):
    value = config
    for key in keys:
        value = value[key]
    return value


def settings(*keys):
    """The config slice at ``keys`` as JSON: a rule's params, so Snakemake re-runs
    exactly the stages whose slice changed."""
    return json.dumps(_config_slice(keys), sort_keys=True)


def settings_without(keys, *drop):
    """Like ``settings(*keys)`` without the ``drop`` entries: for a rule whose
    wildcards already carry those values (one job per ratio)."""
    return json.dumps({k: v for k, v in _config_slice(keys).items() if k not in drop}, sort_keys=True)


# Snakemake's `priority` of the jobs on the way to the LoRA runs (the lexicon, the
# variants, the base model's token pass that the pre-exposure filter reads, the split,
# the mixes, the runs themselves): everything scored under a target waits on that
# chain, so where several jobs are ready it goes first and the long leaves (LessLeak's
# RQ3 runs, the corpus scans, the mutation study) fill the other cores.
TRAINING_PATH = 1


def held_out_argument(wildcards):
    """--held-out-ids of a rule that reads contamination.held_out_ids, the known-unseen control set (its
    input `held_out` is the file's digest, rules/inputs.smk)."""
    held_out = config["contamination"]["held_out_ids"]
    return f"--held-out-ids {shlex.quote(held_out)}" if held_out else ""


# Row files of the calibration table (leaktrace/calibration/table.py): each
# family that checks a null appends a function benchmark -> its row files;
# the aggregate joins them into aggregate/<benchmark>/calibration.parquet.
CALIBRATION_ROW_FILES = []


def calibration_row_files(benchmark):
    return [path for rows in CALIBRATION_ROW_FILES for path in rows(benchmark)]


def get_final_output():
    return [path for benchmark in TESTBED_BENCHMARKS for path in aggregate_outputs(benchmark) + twin_outputs(benchmark)] \
        + audit_outputs() \
        + leakage_outputs() + rq3_outputs() + rq4_ranking_outputs() + mutate_outputs() + counterfactual_outputs() \
        + [path for name in TESTBED_BENCHMARKS + list(COUNTERFACTUAL_SOURCES) for path in functional_outputs(name)] \
        + dose_outputs()


def benchmark_settings(wildcards):
    """The ingest's slice: the benchmark's entry (benchmarks.<name>, settings/ingest.py BenchmarkEntry)."""
    return stage_settings("ingest-benchmark", config, name=wildcards.benchmark)


def corpus_settings(wildcards):
    """The ingest's slice: the corpus's entry (corpora.<name>, settings/ingest.py CorpusEntry)."""
    return stage_settings("ingest-corpus", config, name=wildcards.corpus)


# --- LLM backends (models/select.py): which jobs run a model on a GPU, and the
# `llm.generator` role the generating stages (counterfactual, SrDetection
# black-box) run the testbed's models through (null: transformers).
GENERATOR = config["llm"]["generator"]


def on_gpu(spec):
    """Whether a model spec (base_model, an audit model, an `llm` role) runs
    on a GPU here: the vLLM backend, or a CUDA device, unless it is served
    elsewhere (the openai backend)."""
    backend = spec.get("backend") or "transformers"
    device = str(spec.get("device") or "cpu")
    return backend == "vllm" or backend == "transformers" and (device.startswith("cuda") or device == "auto")


def generator_args():
    """The generating stages' --generator and --cache-dir options (none for the default)."""
    if GENERATOR is None:
        return ""
    cache = f" --cache-dir {cache_dir()}" if config["llm"]["cache"] else ""
    return f"--generator {shlex.quote(json.dumps(GENERATOR, sort_keys=True))}{cache}"


def corpus_env(wildcards):
    """A package corpus (source package) is read from the environment the
    job runs in: the model environment, which holds PyTorch's own pure-Python
    dependencies (networkx, sympy); every other corpus reads in the CPU one."""
    return MODEL_ENV if config["corpora"][wildcards.corpus]["source"] == "package" else CPU_ENV


def variants_env(wildcards):
    """The variants stage loads a model only for SrDetection's LLM renaming."""
    return MODEL_ENV if config["llm"]["variant_llm"] else CPU_ENV


def leakage_gather_env(wildcards):
    """A scan's gather loads a model only for its LLM judge (transformers)."""
    return MODEL_ENV if config["leakage"]["scans"][wildcards.scan].get("judge", {}).get("model") else CPU_ENV


def leakage_judge_gpu(wildcards):
    judge = config["leakage"]["scans"][wildcards.scan].get("judge", {})
    return 1 if judge.get("model") and on_gpu(judge) else 0


def leakage_rephrase_judged(wildcards):
    """Whether a scan's rephrase candidates go to its judge (a judge model named, rephrase.judge on)."""
    scan = config["leakage"]["scans"][wildcards.scan]
    return bool(scan.get("judge", {}).get("model")) and scan["rephrase"].get("judge", True)


def leakage_rephrase_env(wildcards):
    """A rephrase shard job runs a model only for the hf embedder (transformers); the stand-in needs none."""
    return MODEL_ENV if config["leakage"]["scans"][wildcards.scan]["rephrase"].get("embedder") == "hf" else CPU_ENV


def leakage_rephrase_gather_env(wildcards):
    """The rephrase gather loads a model only for the scan's LLM judge (transformers)."""
    return MODEL_ENV if leakage_rephrase_judged(wildcards) else CPU_ENV


def leakage_rephrase_gpu(wildcards):
    rephrase = config["leakage"]["scans"][wildcards.scan]["rephrase"]
    return 1 if rephrase.get("embedder") == "hf" and on_gpu(rephrase) else 0


def leakage_rephrase_judge_gpu(wildcards):
    return leakage_judge_gpu(wildcards) if leakage_rephrase_judged(wildcards) else 0
