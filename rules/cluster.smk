# How the DAG runs on a cluster (config/profiles/slurm, the `cluster` config
# block): what each job asks for (leaktrace.jobsize: memory and time scaled
# from the model and the data it reads), which partition it goes to (a GPU
# job to the GPU partition, everything else to the CPU partition, so the
# leakage scan's shard jobs never wait for a GPU node), which cheap
# bookkeeping rules run on the submit host, and hub models fetched once on
# the submit host (which may reach the hub) into a cache that every job reads
# with HF_HUB_OFFLINE=1. Outside SLURM these resources change nothing.

import os

from leaktrace import jobsize
from leaktrace.leakage.sources import part_shares

CLUSTER = config["cluster"]
RATES = jobsize.Rates.from_config(CLUSTER)


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


def _parquet_inputs(input, names=None):
    """The Parquet files among the job's inputs, or among its inputs named ``names``."""
    if names is None:
        files = list(input)
    else:
        unknown = [name for name in names if name not in input.keys()]
        if unknown:
            raise ValueError(f"resources name inputs {unknown} the rule does not have (its inputs: {list(input.keys())})")
        files = [f for name in names for f in ([input[name]] if isinstance(input[name], str) else input[name])]
    return [str(p) for p in files if str(p).endswith(".parquet")]


def _rows(input, name):
    return jobsize.tables_shape(_parquet_inputs(input, [name])).rows


def _partition(gpus):
    return (CLUSTER["gpu_partition"] if gpus else CLUSTER["cpu_partition"]) or ""


def _value(setting, wildcards):
    return setting(wildcards) if callable(setting) else setting


def model_job(kind, *, batch_size, texts=None, originals=False, padded=False, passes=1, sequences=None, generate=None,
              sandbox=None, generator=None, model=None, gpus=None):
    """Resources of a job that runs a model: ``kind`` forward, or train (a
    backward pass too: training, or gradients of the input); ``passes`` over
    the tokens of its ``texts`` (names of its inputs; None: every Parquet
    input), of their ``originals`` only (variant_id 0) when that is true,
    each as long as the context when ``padded`` (batches padded to their
    longest text), or over ``sequences`` full-context sequences instead;
    ``generate`` new tokens
    per text (decoded in batches of ``batch_size``); ``sandbox``: as
    cpu_job's. ``originals``, ``passes`` and ``sequences`` may be functions of
    the wildcards. ``generator``: the `llm.generator` role a generating job
    runs through; ``model``: wildcards -> the job's model spec (default:
    ``_job_model``); ``gpus``: the GPUs of a job that runs on more than one
    (DDP training: one process per GPU, each holding the weights in host
    memory first). Memory and time as leaktrace.jobsize says."""
    job_model = model or _job_model
    count = gpus

    def job_gpus(wildcards):
        return count if count is not None else _job_gpus(wildcards, generator, job_model)

    def size(wildcards):
        spec = job_model(wildcards)
        config_file = f"{spec['path']}/config.json"
        if not os.path.exists(config_file):  # a hub model not fetched yet: Snakemake waits for it
            raise FileNotFoundError(2, "not made yet", config_file)
        model = jobsize.model_size(spec["path"])
        return spec, model, min(model.max_positions, spec.get("max_length") or model.max_positions)

    def mem_mb(wildcards, attempt):
        # The model, the batch and the context, not the data: known before the
        # job's inputs exist, so a group (cluster.one_job) is sized with it.
        spec, model, context = size(wildcards)
        return jobsize.model_memory_mb(model, RATES, dtype=spec["dtype"], batch_size=batch_size, context=context,
                                       on_gpu=bool(job_gpus(wildcards)), training=kind == "train",
                                       processes=max(1, job_gpus(wildcards)), attempt=attempt)

    def runtime(wildcards, input, threads, attempt):
        spec, model, context = size(wildcards)
        data = jobsize.tables_shape(_parquet_inputs(input))
        passed = jobsize.tables_shape(_parquet_inputs(input, texts)) if texts else data
        if _value(originals, wildcards):
            passed = passed.only_originals()
        if sequences is not None:
            tokens = _value(sequences, wildcards) * context
        else:
            tokens = passed.rows * context if padded else passed.tokens
        rate = RATES.flops_per_s_gpu * job_gpus(wildcards) or RATES.flops_per_s_cpu_core * threads
        seconds = jobsize.data_seconds(data, RATES) + jobsize.model_seconds(
            model, RATES, kind=kind, tokens=tokens * _value(passes, wildcards), generated=(generate or 0) * passed.rows,
            batch_size=batch_size, context=context, flops_per_s=rate)
        seconds += _sandbox_seconds(input, sandbox, threads, wildcards)
        return jobsize.runtime_min(seconds, RATES, attempt=attempt)

    return {
        "mem_mb": mem_mb,
        "runtime": runtime,
        "gpu": job_gpus,
        "gpu_model": lambda wildcards: (CLUSTER["gpu_model"] or "") if job_gpus(wildcards) else "",
        "slurm_partition": lambda wildcards: _partition(job_gpus(wildcards)),
    }


def pretrain_job(block):
    """Resources of pretraining the model of a config block (base_model,
    reference_model) from its shape and token budget (pretrain.settings)."""

    def settings():
        return config[block]["pretrain"]["settings"]

    def mem_mb(wildcards, attempt):
        shape = settings()
        return jobsize.model_memory_mb(jobsize.llama_size(**shape), RATES, dtype="float32", batch_size=shape["batch_size"],
                                       context=shape["context_length"], on_gpu=False, training=True, attempt=attempt)

    def runtime(wildcards, threads, attempt):
        shape = settings()
        seconds = jobsize.model_seconds(jobsize.llama_size(**shape), RATES, kind="train", tokens=shape["tokens"],
                                        generated=0, batch_size=shape["batch_size"], context=shape["context_length"],
                                        flops_per_s=RATES.flops_per_s_cpu_core * threads)
        return jobsize.runtime_min(seconds, RATES, attempt=attempt)

    return {"mem_mb": mem_mb, "runtime": runtime}


def _per_row(input, counts, wildcards):
    """Sum over ``counts`` ({input name: count per row, or wildcards -> count}) of rows x count."""
    return sum(_rows(input, name) * (per(wildcards) if callable(per) else per) for name, per in (counts or {}).items())


def _sandbox_seconds(input, sandbox, threads, wildcards):
    return jobsize.sandbox_seconds(_per_row(input, sandbox, wildcards), threads, RATES)


def cpu_job(*, sandbox=None, per_row=None, tokenize=None):
    """Resources of a CPU job: memory for the interpreter and its Parquet
    inputs, time to read them, plus ``sandbox`` ({input name: sandboxed runs
    per row of it}: programs run against their tests, shared by the job's
    ``threads`` workers), ``per_row`` ({input name: seconds per row of it}:
    calls of an LLM; a count may be a function of the wildcards) and
    ``tokenize`` (names of inputs whose text it tokenises). Memory and time
    as leaktrace.jobsize says."""

    def mem_mb(wildcards, input, threads, attempt):
        return jobsize.cpu_memory_mb(jobsize.tables_shape(_parquet_inputs(input)), RATES, processes=threads,
                                     attempt=attempt)

    def runtime(wildcards, input, threads, attempt):
        seconds = jobsize.data_seconds(jobsize.tables_shape(_parquet_inputs(input)), RATES)
        seconds += _sandbox_seconds(input, sandbox, threads, wildcards) + _per_row(input, per_row, wildcards)
        if tokenize:
            seconds += jobsize.tables_shape(_parquet_inputs(input, tokenize)).tokens * RATES.token_s
        return jobsize.runtime_min(seconds, RATES, attempt=attempt)

    return {"mem_mb": mem_mb, "runtime": runtime}  # the CPU partition: place_jobs


SCAN_SHARES = {}  # scan -> what each of its shard jobs reads (part_shares), worked out once per scan
STREAMED_KINDS = ("files", "jsonl", "parquet", "huggingface")  # corpora a scan job reads outside the pipeline's tables


def _scan_share(wildcards):
    """What this leakage_scan job reads of a corpus it streams (files, jsonl,
    parquet: leaktrace.leakage.sources.part_shares), or None: a pipeline
    artifact is one of its inputs, and a hub dataset's size is not known here."""
    if wildcards.scan not in SCAN_SHARES:
        SCAN_SHARES[wildcards.scan] = part_shares(LEAKAGE_SCANS[wildcards.scan]["corpus"],
                                                  leakage_parts(wildcards.scan))
    shares = SCAN_SHARES[wildcards.scan]
    return shares[int(wildcards.part)] if shares is not None else None


def scan_job():
    """Resources of a leakage_scan shard job: cpu_job's for its Parquet inputs
    (the benchmark, its index, an ingested corpus shard), plus, over a corpus
    it streams, its own share of the corpus at its preset's measured
    ``cluster.scan_s_per_mb`` and, in memory, the largest document it holds
    (``max_bytes``) and the Parquet it holds while reading (leaktrace.jobsize).
    A hub dataset's share is not known before the job streams it: its jobs ask
    for what their inputs need (give them a runtime with
    ``--set-resources leakage_scan:runtime=...``)."""

    def mem_mb(wildcards, input, threads, attempt):
        data = jobsize.tables_shape(_parquet_inputs(input))
        scan = LEAKAGE_SCANS[wildcards.scan]
        if scan["corpus"]["kind"] not in STREAMED_KINDS:
            return jobsize.cpu_memory_mb(data, RATES, processes=threads, attempt=attempt)
        share = _scan_share(wildcards)
        return jobsize.scan_memory_mb(data, RATES, held_bytes=share.held if share else 0,
                                      document_bytes=scan["max_bytes"], attempt=attempt)

    def runtime(wildcards, input, threads, attempt):
        seconds = jobsize.data_seconds(jobsize.tables_shape(_parquet_inputs(input)), RATES)
        share = _scan_share(wildcards)
        if share is not None:
            seconds += jobsize.scan_seconds(share.bytes, LEAKAGE_SCANS[wildcards.scan]["preset"], RATES)
        return jobsize.runtime_min(seconds, RATES, attempt=attempt)

    return {"mem_mb": mem_mb, "runtime": runtime}


# The jobs that must read what only the submit host is sure to have: the
# corpora of the interpreter's standard library (node-local), the benchmark
# shipped in the environment, and the hub.
SUBMIT_HOST_RULES = ["all", "fetch_hub_model", "model_identity", "input_digest", "ingest_benchmark", "ingest_corpus_shard"]
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
        verdict,


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
        log_file("fetch_hub_model", "{hub_model}"),
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE_ONLINE} fetch-model --model {params.repo} {params.revision} --output-dir {params.out_dir} 2> {log}"


# A hub base model is fetched, never pretrained.
ruleorder: fetch_hub_model > pretrain_base_model
