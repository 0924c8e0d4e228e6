def variant_llm_args():
    """The variants stage's --llm and --cache-dir options (none without an llm.variant_llm role)."""
    role = config["llm"]["variant_llm"]
    if role is None:
        return ""
    cache = f" --cache-dir {RESULTS}/cache" if config["llm"]["cache"] else ""
    return f"--llm {shlex.quote(json.dumps(role, sort_keys=True))}{cache}"


VARIANT_LLM_GPU = 1 if config["llm"]["variant_llm"] and on_gpu(config["llm"]["variant_llm"]) else 0


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
        llm=variant_llm_args(),
    log:
        f"{RESULTS}/logs/variants/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/variants/{{benchmark}}.tsv"
    threads: 2
    resources:
        **cpu_job(seconds_per_row=1 + config["variants"]["n"] + config["variants"]["n_filter"]),
        gpu=VARIANT_LLM_GPU,  # the llm.variant_llm role's model, where it runs here on a GPU
    conda:
        variants_env
    shell:
        "{LEAKTRACE} variants --benchmark {input.benchmark} --functions {input.functions} --lexicon {input.lexicon}"
        " --settings {params.settings:q} --seed {params.seed} --workers {threads} --output {output} {params.llm} 2> {log}"

