# Everything that is not a rule: config validation, paths, wildcard
# constraints, and the input functions and params helpers the rules share.

import json
import re
import sys

from snakemake.utils import validate

from leaktrace.models.backend import is_hub_id


validate(config, schema="../config/schema.yaml", set_default=True)

RESULTS = f"results/{config['run']}"
# Rules call the package CLI with the interpreter that runs Snakemake (the
# project's virtual environment), or with the rule's conda environment under
# `--sdm conda`.
USE_CONDA = any("conda" in str(m).lower() for m in workflow.deployment_settings.deployment_method)
LEAKTRACE = "python -m leaktrace" if USE_CONDA else f"{sys.executable} -m leaktrace"
CONDA_ENV = "../envs/leaktrace.yaml"
BENCHMARKS = list(config["benchmarks"])
CORPORA = list(config["corpora"])
EPOCHS = sorted(config["train"]["epochs"])
MODELS = ["reference"] + [f"target-e{e}" for e in EPOCHS]
BASE_MODEL = config["base_model"]["path"]


def _alternatives(names):
    return "|".join(re.escape(n) for n in names)


wildcard_constraints:
    benchmark=_alternatives(BENCHMARKS),
    corpus=_alternatives(CORPORA),
    model=r"reference|target-e\d+",
    part=r"\d+",
    epoch=r"\d+",


def settings(*keys):
    """The config slice at ``keys`` as JSON: a rule's params, so Snakemake re-runs
    exactly the stages whose slice changed."""
    value = config
    for key in keys:
        value = value[key]
    return json.dumps(value, sort_keys=True)


def model_settings():
    """What every model-loading stage needs to know about the base model."""
    return json.dumps({k: config["base_model"][k] for k in ("path", "dtype", "device")}, sort_keys=True)


def corpus_parts(corpus):
    if corpus not in config["corpora"]:
        raise ValueError(f"config names corpus {corpus!r}, which is not under `corpora`")
    n = config["corpora"][corpus]["shards"]
    return [f"{RESULTS}/data/corpora/{corpus}/part-{i}.parquet" for i in range(n)]


def base_model_files():
    """The base model as rule input, when it is a local directory (a hub id is
    resolved by the backend at run time)."""
    if is_hub_id(BASE_MODEL):
        return []
    return [f"{BASE_MODEL}/config.json", f"{BASE_MODEL}/model.safetensors", f"{BASE_MODEL}/tokenizer.json"]


def adapter_dir(benchmark, epoch):
    return f"{RESULTS}/train/{benchmark}/adapter/epoch-{epoch}"


def model_adapter(wildcards):
    """Input function: the adapter directory behind a ``target-e{epoch}`` model."""
    if wildcards.model == "reference":
        return []
    return [adapter_dir(wildcards.benchmark, wildcards.model.removeprefix("target-e"))]


def counterfactual_epoch():
    epoch = config["counterfactual"]["epoch"] or EPOCHS[-1]
    if epoch not in EPOCHS:
        raise ValueError(f"counterfactual.epoch {epoch} is not one of train.epochs {EPOCHS}")
    return epoch


def aggregate_outputs(benchmark):
    base = f"{RESULTS}/aggregate/{benchmark}"
    return [f"{base}/{name}" for name in ("detection.parquet", "perplexity.parquet", "counterfactual.parquet", "report.md", "roc.png", "delta_vs_bleu.png")]


LEAKAGE_OUTPUTS = ("pairs.parquet", "summary.parquet", "sources.parquet", "accounting.parquet", "membership.parquet",
                   "clean.parquet", "report.md")


def leakage_outputs():
    """The gathered outputs of every configured leakage scan (rules/leakage.smk);
    ``report.md`` is the Markdown fragment for the aggregate report."""
    return [f"{RESULTS}/leakage/{scan}/{name}" for scan in config["leakage"]["scans"] for name in LEAKAGE_OUTPUTS]


def get_final_output():
    return [path for benchmark in BENCHMARKS for path in aggregate_outputs(benchmark)] + leakage_outputs()


def benchmark_settings(wildcards):
    return json.dumps(config["benchmarks"][wildcards.benchmark], sort_keys=True)


def corpus_settings(wildcards):
    return json.dumps(config["corpora"][wildcards.corpus], sort_keys=True)


def adapter_args(wildcards):
    """The ``--adapter`` option of a stage for a ``target-e{epoch}`` model."""
    return " ".join(f"--adapter {path}" for path in model_adapter(wildcards))
