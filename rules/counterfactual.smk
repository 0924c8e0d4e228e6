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
        **model_job("forward", batch_size=config["counterfactual"]["batch_size"],
                    generate=config["counterfactual"]["max_new_tokens"], generator=GENERATOR,
                    model=counterfactual_job_model),
    shell:
        "{LEAKTRACE} counterfactual --functions {input.functions} {params.models}"
        " --settings {params.settings:q} {params.generator}"
        " --generations {output.generations} --similarity {output.similarity} 2> {log}"
