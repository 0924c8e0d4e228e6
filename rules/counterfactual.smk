rule counterfactual:
    input:
        samples=f"{RESULTS}/filter/{{benchmark}}.samples.parquet",
        functions=f"{RESULTS}/filter/{{benchmark}}.functions.parquet",
        model=base_model_files(),
        adapter=adapter_dir("{benchmark}", *counterfactual_target()),
    output:
        generations=f"{RESULTS}/counterfactual/{{benchmark}}/generations.parquet",
        similarity=f"{RESULTS}/counterfactual/{{benchmark}}/similarity.parquet",
    params:
        settings=settings("counterfactual"),
        model=model_settings(),
        generator=generator_args(),
    log:
        f"{RESULTS}/logs/counterfactual/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/counterfactual/{{benchmark}}.tsv"
    threads: MODEL_THREADS
    conda:
        MODEL_ENV
    resources:
        **model_job("forward", batch_size=config["counterfactual"]["batch_size"],
                    generate=config["counterfactual"]["max_new_tokens"], generator=GENERATOR),
    shell:
        "{LEAKTRACE} counterfactual --samples {input.samples} --functions {input.functions} --model {params.model:q}"
        " --adapter {input.adapter} --settings {params.settings:q} {params.generator}"
        " --generations {output.generations} --similarity {output.similarity} 2> {log}"


# Execution similarity (HyClone Stage 2 without an LLM): sandboxed, CPU only,
# seconds; its own rule so a change to similarity.execution re-runs only it.
rule counterfactual_execution:
    input:
        generations=f"{RESULTS}/counterfactual/{{benchmark}}/generations.parquet",
        functions=f"{RESULTS}/filter/{{benchmark}}.functions.parquet",
        benchmark=f"{RESULTS}/data/benchmarks/{{benchmark}}.parquet",
    output:
        f"{RESULTS}/counterfactual/{{benchmark}}/similarity_execution.parquet",
    params:
        settings=settings("similarity", "execution"),
        seed=config["seed"],
    log:
        f"{RESULTS}/logs/counterfactual_execution/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/counterfactual_execution/{{benchmark}}.tsv"
    threads: 2
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} counterfactual-execution --generations {input.generations} --functions {input.functions}"
        " --benchmark {input.benchmark} --settings {params.settings:q} --seed {params.seed}"
        " --workers {threads} --output {output} 2> {log}"
