# How the DAG runs on a cluster (config/profiles/slurm, the `cluster` config
# block): what each job asks for (leaktrace.jobsize: memory and time scaled
# from the model and the data it reads), which partition it goes to (a GPU
# job to the GPU partition, everything else to the CPU partition, so the
# leakage scan's shard jobs never wait for a GPU node), which cheap
# bookkeeping rules run on the submit host, and hub models fetched once on
# the submit host (which may reach the hub) into a cache that every job reads
# with HF_HUB_OFFLINE=1. Outside SLURM these resources change nothing.

import math
import os

from leaktrace import jobsize

CLUSTER = config["cluster"]


def _require(paths):
    """Resources read input files; before they exist Snakemake defers the
    evaluation (a FileNotFoundError naming an input)."""
    for path in paths:
        if not os.path.exists(path):
            raise FileNotFoundError(2, "not made yet", path)


def _job_model(wildcards):
    """path/dtype/device of the model a job loads: its ``{model}``, else the base model."""
    return _model_config(wildcards.model)[0] if hasattr(wildcards, "model") else BASE_MODEL_CONFIG


def _job_gpus(wildcards, generator=None, job_model=_job_model):
    """GPUs of a job whose model runs on a GPU here (``on_gpu``: its device,
    or the backend of the `llm.generator` role a generating job runs it
    through): base_model.gpus under device auto (the layers spread over
    them), else 1; 0 on the CPU."""
    spec = {**job_model(wildcards), **(generator or {})}
    if not on_gpu(spec):
        return 0
    return config["base_model"]["gpus"] if spec.get("device") == "auto" else 1


def _parquet_inputs(input):
    return [str(p) for p in input if str(p).endswith(".parquet")]


def _partition(gpus):
    return (CLUSTER["gpu_partition"] if gpus else CLUSTER["cpu_partition"]) or ""


def model_job(kind, *, batch_size, passes=1, generate=None, generator=None, model=None, gpus=None):
    """Resources of a job that runs a model: ``kind`` train or forward,
    ``passes`` over its Parquet inputs' tokens, plus ``generate`` new tokens
    per row of those inputs (greedy decoding, one forward token each);
    ``generator``: the `llm.generator` role a generating job runs through;
    ``model``: wildcards -> the job's model spec (default: ``_job_model``);
    ``gpus``: the GPUs of a job that runs on more than one (DDP training: one
    process per GPU, each holding the weights in host memory first)."""
    job_model = model or _job_model
    count = gpus

    def job_gpus(wildcards):
        return count if count is not None else _job_gpus(wildcards, generator, job_model)

    def size(wildcards):
        spec = job_model(wildcards)
        _require([f"{spec['path']}/config.json"])
        return spec, jobsize.model_size(spec["path"])

    def mem_mb(wildcards):
        # The model, the batch and the context, not the data: known before the
        # job's inputs exist, so a group (cluster.one_job) is sized with it.
        spec, model = size(wildcards)
        context = min(model.max_positions, spec.get("max_length") or model.max_positions)
        return jobsize.memory_mb(model, dtype=spec["dtype"], batch_size=batch_size, context=context,
                                 on_gpu=bool(job_gpus(wildcards)), training=kind == "train",
                                 overhead_mb=CLUSTER["overhead_mb"], processes=max(1, job_gpus(wildcards)))

    def runtime(wildcards, input, threads):
        spec, model = size(wildcards)
        parquet = _parquet_inputs(input)
        _require(parquet)
        tokens = jobsize.parquet_tokens(parquet) * passes
        if generate:
            tokens += generate * sum(jobsize.parquet_rows(p) for p in parquet)
        rate = CLUSTER["flops_per_s"]["gpu"] * job_gpus(wildcards) or CLUSTER["flops_per_s"]["cpu_core"] * threads
        return jobsize.runtime_min(model, tokens=tokens, kind=kind, passes=1, flops_per_s=rate,
                                   safety=CLUSTER["safety"], minimum=CLUSTER["min_runtime"])

    return {
        "mem_mb": mem_mb,
        "runtime": runtime,
        "gpu": job_gpus,
        "gpu_model": lambda wildcards: (CLUSTER["gpu_model"] or "") if job_gpus(wildcards) else "",
        "slurm_partition": lambda wildcards: _partition(job_gpus(wildcards)),
    }


def cpu_job(seconds_per_row=0.0):
    """Resources of a CPU job that streams its Parquet inputs: memory a
    multiple of their uncompressed size, time their size at the configured
    rate per core (plus ``seconds_per_row`` per input row: sandboxed runs)."""

    def data_bytes(input):
        parquet = _parquet_inputs(input)
        _require(parquet)
        return jobsize.parquet_tokens(parquet) * jobsize.BYTES_PER_TOKEN, parquet

    def mem_mb(wildcards, input):
        size, _ = data_bytes(input)
        return CLUSTER["overhead_mb"] + 100 * math.ceil(10 * size / 1e8)

    def runtime(wildcards, input, threads):
        size, parquet = data_bytes(input)
        seconds = size / CLUSTER["cpu_bytes_per_s"] + seconds_per_row * sum(jobsize.parquet_rows(p) for p in parquet)
        return max(CLUSTER["min_runtime"], math.ceil(seconds * CLUSTER["safety"] / (60 * threads)))

    return {"mem_mb": mem_mb, "runtime": runtime}  # the CPU partition: place_jobs


# The jobs that must read what only the submit host is sure to have: the
# corpora of the interpreter's standard library (node-local), the benchmark
# shipped in the environment, and the hub.
SUBMIT_HOST_RULES = ["all", "fetch_hub_model", "ingest_benchmark", "ingest_corpus_shard"]
if config["leakage"]["clean"]:
    SUBMIT_HOST_RULES += ["ingest_benchmark_raw", "clean_benchmark"]
workflow.localrules(*SUBMIT_HOST_RULES)  # what the `localrules:` directive does, for a list


# Bookkeeping (seconds of work each) runs on the submit host too, unless the
# DAG is one SLURM job (cluster.one_job), which it must not leave and re-enter.
if not CLUSTER["one_job"]:

    localrules:
        lexicon,
        filter_functions,
        split_samples,
        detector_scores,
        leakage_index,
        leakage_gather,
        leakage_rq4,
        aggregate,
        audit,
        contamination,
        mutation_study,
        dpdllm_fit,
        veilprobe_fit,
        learning_rate_selection,


def place_jobs():
    """Where each job runs on a cluster. Called once every rule is defined
    (Snakefile), so that it reaches every rule.

    A SLURM job per job: a rule that names no partition (a CPU job without a
    size estimate) goes to the CPU partition, not the cluster's default,
    which may be a GPU partition.

    cluster.one_job: every rule but the submit-host ones joins one Snakemake
    group, so that the DAG after ingest is one SLURM job whose Snakemake runs
    the jobs as a local run does (the leaktrace-slurm executor,
    config/profiles/slurm). A group's string resources must be equal in every
    job of it, so each rule asks for the allocation's partition and GPU
    model: the GPU partition when a configured model runs on a GPU, else the
    CPU partition."""
    if not CLUSTER["one_job"]:
        for each in workflow.rules:
            if "slurm_partition" not in each.resources:
                each.resources.update({"slurm_partition": _partition(0)})
        return
    gpus = any(on_gpu(spec) for spec in CONFIGURED_MODELS)
    allocation = {"slurm_partition": _partition(gpus), "gpu_model": (CLUSTER["gpu_model"] or "") if gpus else ""}
    for each in workflow.rules:
        if each.name not in SUBMIT_HOST_RULES:
            each.group = "leaktrace"
            each.resources.update(allocation)


rule fetch_hub_model:
    output:
        f"{HUB_CACHE}/{{hub_model}}/config.json",
    params:
        repo=lambda wildcards: wildcards.hub_model.partition("@")[0].replace("--", "/"),
        revision=lambda wildcards: f"--revision {wildcards.hub_model.partition('@')[2]}" if "@" in wildcards.hub_model else "",
        out_dir=f"{HUB_CACHE}/{{hub_model}}",
    log:
        f"{RESULTS}/logs/fetch_hub_model/{{hub_model}}.log",
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE_ONLINE} fetch-model --model {params.repo} {params.revision} --output-dir {params.out_dir} 2> {log}"


# A hub base model is fetched, never pretrained.
ruleorder: fetch_hub_model > pretrain_base_model
