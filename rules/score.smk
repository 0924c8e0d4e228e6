# One forward pass per text and model (tokens.parquet); the detectors are then
# computed from that cache (scores.parquet). Changing `score.methods` re-runs
# only `detector_scores` and what follows it.


rule token_stats:
    input:
        variants=f"{RESULTS}/variants/{{benchmark}}.parquet",
        model=base_model_files(),
        adapter=model_adapter,
    output:
        f"{RESULTS}/score/{{benchmark}}/{{model}}/tokens.parquet",
    params:
        settings=settings("score", "tokens"),
        model=model_settings(),
        adapter=adapter_args,
    log:
        f"{RESULTS}/logs/token_stats/{{benchmark}}/{{model}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/token_stats/{{benchmark}}/{{model}}.tsv"
    threads: 2
    conda:
        CONDA_ENV
    resources:
        gpu=1 if config["base_model"]["device"].startswith("cuda") else 0,
    shell:
        "{LEAKTRACE} tokens --variants {input.variants} --model {params.model:q} {params.adapter}"
        " --settings {params.settings:q} --output {output} 2> {log}"


rule detector_scores:
    input:
        tokens=f"{RESULTS}/score/{{benchmark}}/{{model}}/tokens.parquet",
        variants=f"{RESULTS}/variants/{{benchmark}}.parquet",
    output:
        f"{RESULTS}/score/{{benchmark}}/{{model}}/scores.parquet",
    params:
        settings=settings("score", "methods"),
    log:
        f"{RESULTS}/logs/detector_scores/{{benchmark}}/{{model}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/detector_scores/{{benchmark}}/{{model}}.tsv"
    threads: 1
    conda:
        CONDA_ENV
    shell:
        "{LEAKTRACE} scores --tokens {input.tokens} --variants {input.variants} --settings {params.settings:q} --output {output} 2> {log}"
