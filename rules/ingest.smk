rule ingest_benchmark:
    input:
        benchmark_digest,
    output:
        benchmark_table(),
    params:
        settings=benchmark_settings,
    log:
        log_file("ingest_benchmark", "{benchmark}"),
    benchmark:
        benchmark_file("ingest_benchmark", "{benchmark}")
    threads: 1
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} ingest-benchmark --name {wildcards.benchmark} --settings {params.settings:q} --output {output} 2> {log}"


rule ingest_corpus_shard:
    input:
        corpus_digest,
    output:
        corpus_part(),
    params:
        settings=corpus_settings,
    log:
        log_file("ingest_corpus", "{corpus}-{part}"),
    benchmark:
        benchmark_file("ingest_corpus", "{corpus}-{part}")
    threads: 1
    conda:
        corpus_env
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} ingest-corpus --name {wildcards.corpus} --settings {params.settings:q} --part {wildcards.part} --output {output} 2> {log}"
