rule filter_functions:
    input:
        f"{RESULTS}/data/benchmarks/{{benchmark}}.parquet",
    output:
        f"{RESULTS}/filter/{{benchmark}}.functions.parquet",
    params:
        settings=settings("filter", "functions"),
    log:
        f"{RESULTS}/logs/filter_functions/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/filter_functions/{{benchmark}}.tsv"
    threads: 1
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} filter-functions --benchmark {input} --settings {params.settings:q} --output {output} 2> {log}"


# SrDetection's pre-exposure filter, before the split: it reads the base
# model's token statistics of every original and detector variant, the same
# cached pass the reference scores come from.
rule split_samples:
    input:
        functions=f"{RESULTS}/filter/{{benchmark}}.functions.parquet",
        variants=f"{RESULTS}/variants/{{benchmark}}.parquet",
        tokens=f"{RESULTS}/score/{{benchmark}}/reference/tokens.parquet",
    output:
        split_file(),
    params:
        settings=settings("filter", "split"),
        seed=config["seed"],
        # ReCaLL's prefix texts: non-members held out before the split
        recall_prefix=config["score"]["methods"]["recall"]["n_shots"] if "recall" in config["score"]["methods"] else 0,
    log:
        f"{RESULTS}/logs/split_samples/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/split_samples/{{benchmark}}.tsv"
    threads: 1
    priority: TRAINING_PATH
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} split --functions {input.functions} --variants {input.variants} --tokens {input.tokens}"
        " --settings {params.settings:q} --seed {params.seed} --recall-prefix {params.recall_prefix} --output {output} 2> {log}"
