# Counterfactual generations: every testbed benchmark is a source of its own
# name (its kept samples, the target adapter vs the base model); the
# `counterfactual.sources` block adds named sources: a testbed benchmark with
# models of their own, or functions sampled from a corpus (App. B's filters,
# rule counterfactual_corpus_functions), each with any two models (hub id or
# path, revision, adapter). Outputs: results/<run>/counterfactual/<name>/.


rule counterfactual_corpus_functions:
    input:
        counterfactual_corpus_inputs,
    output:
        functions=f"{RESULTS}/counterfactual/{{benchmark}}/functions.parquet",
        accounting=f"{RESULTS}/counterfactual/{{benchmark}}/sampling.parquet",
    params:
        source=counterfactual_corpus_json,
        settings=counterfactual_sampling_settings,
        inputs=counterfactual_corpus_input_args,
        seed=config["seed"],
    log:
        f"{RESULTS}/logs/counterfactual_corpus_functions/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/counterfactual_corpus_functions/{{benchmark}}.tsv"
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        # Online: a huggingface source streams the dataset from the hub.
        "{LEAKTRACE_ONLINE} sample-corpus-functions --name {wildcards.benchmark} --source {params.source:q}"
        " {params.inputs} --settings {params.settings:q} --seed {params.seed}"
        " --functions {output.functions} --accounting {output.accounting} 2> {log}"


rule counterfactual:
    input:
        unpack(counterfactual_inputs),
    output:
        generations=f"{RESULTS}/counterfactual/{{benchmark}}/generations.parquet",
        similarity=f"{RESULTS}/counterfactual/{{benchmark}}/similarity.parquet",
    params:
        # The generation settings alone: sources and models are inputs and arguments.
        settings=settings_without(("counterfactual",), "sources", "target", "reference"),
        models=counterfactual_model_args,
        generator=counterfactual_generator_args,
    log:
        f"{RESULTS}/logs/counterfactual/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/counterfactual/{{benchmark}}.tsv"
    threads: MODEL_THREADS
    conda:
        MODEL_ENV
    resources:
        # a continuation of each function's context, under each of the two models
        **model_job("forward", batch_size=config["counterfactual"]["batch_size"], texts=["functions"], passes=2,
                    generate=2 * config["counterfactual"]["max_new_tokens"], generator=GENERATOR,
                    model=counterfactual_job_model),
    shell:
        "{LEAKTRACE} counterfactual --functions {input.functions} {params.models}"
        " --settings {params.settings:q} {params.generator}"
        " --generations {output.generations} --similarity {output.similarity} 2> {log}"


rule counterfactual_structural:
    input:
        generations=f"{RESULTS}/counterfactual/{{benchmark}}/generations.parquet",
        functions=lambda w: counterfactual_functions(w.benchmark),
    output:
        f"{RESULTS}/counterfactual/{{benchmark}}/similarity_structural.parquet",
    params:
        settings=settings("similarity", "structural"),
    log:
        f"{RESULTS}/logs/counterfactual_structural/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/counterfactual_structural/{{benchmark}}.tsv"
    threads: 2
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} counterfactual-structural --generations {input.generations} --functions {input.functions}"
        " --settings {params.settings:q} --processes {threads} --output {output} 2> {log}"


# Execution similarity (HyClone's Stage 2 with LLM-free inputs): sandboxed,
# CPU only, seconds; its own rule so a change to similarity.execution re-runs
# only it. A benchmark source also gives its tests' inputs; a corpus source
# has none. With HyClone's Stage-1 screen configured (llm.judge and the
# hyclone_screen metric) the judges' table gates it: Stage 2 runs on the
# screen's candidates only, as in the paper.
def hyclone_screened():
    return config["llm"]["judge"] is not None and "hyclone_screen" in config["similarity"]["judges"]["metrics"]


def counterfactual_execution_inputs(wildcards):
    name = wildcards.benchmark
    inputs = {"generations": f"{RESULTS}/counterfactual/{name}/generations.parquet",
              "functions": counterfactual_functions(name)}
    source = counterfactual_source(name)
    if "benchmark" in source:
        inputs["benchmark"] = f"{RESULTS}/data/benchmarks/{source['benchmark']}.parquet"
    if hyclone_screened():
        inputs["screen"] = f"{RESULTS}/counterfactual/{name}/similarity_judges.parquet"
    return inputs


rule counterfactual_execution:
    input:
        unpack(counterfactual_execution_inputs),
    output:
        f"{RESULTS}/counterfactual/{{benchmark}}/similarity_execution.parquet",
    params:
        settings=settings("similarity", "execution"),
        seed=config["seed"],
        benchmark=lambda w, input: f"--benchmark {input.benchmark}" if "benchmark" in input.keys() else "",
        screen=lambda w, input: f"--screen {input.screen}" if "screen" in input.keys() else "",
    log:
        f"{RESULTS}/logs/counterfactual_execution/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/counterfactual_execution/{{benchmark}}.tsv"
    threads: 2
    resources:
        # each generation executed on drawn inputs, many to a sandbox run
        **cpu_job(per_row={"generations": 0.05}),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} counterfactual-execution --generations {input.generations} --functions {input.functions}"
        " {params.benchmark} {params.screen} --settings {params.settings:q} --seed {params.seed}"
        " --workers {threads} --output {output} 2> {log}"


# LLM judges (App. C.1), HyClone's Stage-1 screen (App. C.2) and App. B's LLM
# filter run the llm.judge role: with it null (the default) neither rule exists.
JUDGE = config["llm"]["judge"]
JUDGE_GPU = 1 if JUDGE and on_gpu(JUDGE) else 0
# App. B's filter has a model of its own in the paper (a smaller LLaMA than the judges'):
# similarity.filter.judge, else llm.judge
FILTER_JUDGE = config["similarity"]["filter"]["judge"] or JUDGE


def judge_args(judge=None):
    """The --judge and --cache-dir options of the judging stages (``judge``: another role than llm.judge)."""
    cache = f" --cache-dir {RESULTS}/cache" if config["llm"]["cache"] else ""
    return f"--judge {shlex.quote(json.dumps(judge or JUDGE, sort_keys=True))}{cache}"


def judge_job(judge=None, **seconds_per_row):
    """Resources of a judging job: sized as a CPU job, plus an estimate of the
    calls' seconds per row of the named inputs (``generations=...``), on the
    GPU partition where the judge (``judge``, else llm.judge) runs here on a GPU."""
    gpu = 1 if (judge or JUDGE) and on_gpu(judge or JUDGE) else 0
    return {**cpu_job(per_row=seconds_per_row), "gpu": gpu, "slurm_partition": _partition(gpu)}


if JUDGE is not None:

    rule counterfactual_judges:
        input:
            generations=f"{RESULTS}/counterfactual/{{benchmark}}/generations.parquet",
            functions=lambda w: counterfactual_functions(w.benchmark),
        output:
            similarity=f"{RESULTS}/counterfactual/{{benchmark}}/similarity_judges.parquet",
            answers=f"{RESULTS}/counterfactual/{{benchmark}}/judge_answers.parquet",
        params:
            settings=settings("similarity", "judges"),
            judge=judge_args(),
        log:
            f"{RESULTS}/logs/counterfactual_judges/{{benchmark}}.log",
        benchmark:
            f"{RESULTS}/benchmarks/counterfactual_judges/{{benchmark}}.tsv"
        threads: MODEL_THREADS
        conda:
            MODEL_ENV
        resources:
            **judge_job(generations=2 * len(config["similarity"]["judges"]["metrics"])),
        shell:
            "{LEAKTRACE} counterfactual-judges --generations {input.generations} --functions {input.functions}"
            " --settings {params.settings:q} {params.judge} --output {output.similarity} --answers {output.answers}"
            " 2> {log}"


if FILTER_JUDGE is not None and config["similarity"]["filter"]["enabled"]:

    rule counterfactual_llm_filter:
        input:
            functions=lambda w: counterfactual_functions(w.benchmark),
        output:
            f"{RESULTS}/counterfactual/{{benchmark}}/llm_filter.parquet",
        params:
            settings=settings_without(("similarity", "filter"), "judge"),
            judge=judge_args(FILTER_JUDGE),
        log:
            f"{RESULTS}/logs/counterfactual_llm_filter/{{benchmark}}.log",
        benchmark:
            f"{RESULTS}/benchmarks/counterfactual_llm_filter/{{benchmark}}.tsv"
        threads: MODEL_THREADS
        conda:
            MODEL_ENV
        resources:
            **judge_job(FILTER_JUDGE, functions=5),  # 8,000 characters of file per call
        shell:
            "{LEAKTRACE} llm-filter --functions {input.functions} --settings {params.settings:q} {params.judge}"
            " --output {output} 2> {log}"
