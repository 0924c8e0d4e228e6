rule ingest_benchmark:
    output:
        f"{RESULTS}/data/benchmarks/{{benchmark}}.parquet",
    params:
        settings=benchmark_settings,
    log:
        f"{RESULTS}/logs/ingest_benchmark/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/ingest_benchmark/{{benchmark}}.tsv"
    threads: 1
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} ingest-benchmark --name {wildcards.benchmark} --settings {params.settings:q} --output {output} 2> {log}"


rule ingest_corpus_shard:
    output:
        f"{RESULTS}/data/corpora/{{corpus}}/part-{{part}}.parquet",
    params:
        settings=corpus_settings,
    log:
        f"{RESULTS}/logs/ingest_corpus/{{corpus}}-{{part}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/ingest_corpus/{{corpus}}-{{part}}.tsv"
    threads: 1
    conda:
        corpus_env
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} ingest-corpus --name {wildcards.corpus} --settings {params.settings:q} --part {wildcards.part} --output {output} 2> {log}"
