rule lexicon:
    input:
        corpus_parts(config["variants"]["lexicon"]["corpus"]),
    output:
        f"{RESULTS}/variants/lexicon.parquet",
    params:
        settings=settings("variants", "lexicon"),
    log:
        f"{RESULTS}/logs/lexicon.log",
    benchmark:
        f"{RESULTS}/benchmarks/lexicon.tsv"
    threads: 1
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} lexicon --code {input} --settings {params.settings:q} --output {output} 2> {log}"


rule variants:
    input:
        benchmark=f"{RESULTS}/data/benchmarks/{{benchmark}}.parquet",
        functions=f"{RESULTS}/filter/{{benchmark}}.functions.parquet",
        lexicon=f"{RESULTS}/variants/lexicon.parquet",
    output:
        f"{RESULTS}/variants/{{benchmark}}.parquet",
    params:
        settings=settings("variants"),
        seed=config["seed"],
    log:
        f"{RESULTS}/logs/variants/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/variants/{{benchmark}}.tsv"
    threads: 2
    resources:
        **cpu_job(seconds_per_row=1 + config["variants"]["n"] + config["variants"]["n_filter"]),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} variants --benchmark {input.benchmark} --functions {input.functions} --lexicon {input.lexicon}"
        " --settings {params.settings:q} --seed {params.seed} --workers {threads} --output {output} 2> {log}"
