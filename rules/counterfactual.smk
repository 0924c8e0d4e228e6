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
