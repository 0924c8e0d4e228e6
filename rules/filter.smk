rule filter_functions:
    input:
        benchmark_table(),
    output:
        functions_file(),
    params:
        settings=stage_settings("filter-functions", config),
    log:
        log_file("filter_functions", "{benchmark}"),
    benchmark:
        benchmark_file("filter_functions", "{benchmark}")
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
        functions=functions_file(),
        variants=variants_file(),
        tokens=tokens_file(model="reference"),
    output:
        split_file(),
    params:
        settings=stage_settings("split", config),
        seed=config["seed"],
        # ReCaLL's prefix texts: non-members held out before the split
        recall_prefix=config["score"]["methods"]["recall"]["n_shots"] if "recall" in config["score"]["methods"] else 0,
    log:
        log_file("split_samples", "{benchmark}"),
    benchmark:
        benchmark_file("split_samples", "{benchmark}")
    threads: 1
    priority: TRAINING_PATH
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} split --functions {input.functions} --variants {input.variants} --tokens {input.tokens}"
        " --settings {params.settings:q} --seed {params.seed} --recall-prefix {params.recall_prefix} --output {output} 2> {log}"
