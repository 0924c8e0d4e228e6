from leaktrace.variants.natural import check_selection_model, generation_settings, pool_settings


def variant_llm_args():
    """The variants stage's --llm and --cache-dir options (none without an llm.variant_llm role)."""
    role = config["llm"]["variant_llm"]
    if role is None:
        return ""
    cache = f" --cache-dir {cache_dir()}" if config["llm"]["cache"] else ""
    return f"--llm {shlex.quote(json.dumps(role, sort_keys=True))}{cache}"


VARIANT_LLM_GPU = 1 if config["llm"]["variant_llm"] and on_gpu(config["llm"]["variant_llm"]) else 0

# Naturalness-matched variants (variants.natural): the variants job draws a
# pool, natural_variants keeps the n nearest the original's loss under the
# selection model. Off, the variants job writes the table itself with the
# params it always had (the `natural` block is left out of them).
NATURAL = config["variants"]["natural"]
GENERATION = pool_settings(config["variants"])
if NATURAL["enabled"]:
    AUDITED_PATHS = [config["base_model"]["path"], *(m["path"] for m in config["audit"]["models"] if "path" in m),
                     *((counterfactual_model_spec(config["counterfactual"][side], f"counterfactual.{side}") or {}).get("path")
                       for side in ("target", "reference"))]
    SELECTION_MODEL = fetched(check_selection_model(NATURAL["model"] or config["reference_model"]["path"], AUDITED_PATHS))


rule lexicon:
    input:
        corpus_parts(config["variants"]["lexicon"]["corpus"]),
    output:
        lexicon_file(),
    params:
        settings=stage_settings("lexicon", config),
    log:
        log_file("lexicon"),
    benchmark:
        benchmark_file("lexicon")
    threads: 1
    priority: TRAINING_PATH
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} lexicon --code {input} --settings {params.settings:q} --output {output} 2> {log}"


rule variants:
    input:
        benchmark=benchmark_table(),
        functions=functions_file(),
        lexicon=lexicon_file(),
    output:
        variant_pool_file() if NATURAL["enabled"] else variants_file(),
    params:
        # the whole block but names_per_variant while null and natural while off, as the job has always had it
        settings=stage_settings("variants", {**config, "variants": generation_settings(config["variants"])}),
        seed=config["seed"],
        llm=variant_llm_args(),
    log:
        log_file("variants", "{benchmark}"),
    benchmark:
        benchmark_file("variants", "{benchmark}")
    threads: 2
    priority: TRAINING_PATH
    resources:
        # sandboxed runs per function: the original, each variant, the test-case set
        **cpu_job(sandbox={"functions": 1 + GENERATION["n"] + bool(GENERATION["test_cases"])}),
        gpu=VARIANT_LLM_GPU,  # the llm.variant_llm role's model, where it runs here on a GPU
    conda:
        variants_env
    shell:
        "{LEAKTRACE} variants --benchmark {input.benchmark} --functions {input.functions} --lexicon {input.lexicon}"
        " --settings {params.settings:q} --seed {params.seed} --workers {threads} --output {output} {params.llm} 2> {log}"



if NATURAL["enabled"]:

    rule natural_variants:
        input:
            pool=variant_pool_file(),
            model=shipped_model_files(SELECTION_MODEL) + model_identity_files(SELECTION_MODEL),
        output:
            variants_file(),
        params:
            settings=stage_settings("natural-variants", config),
            seed=config["seed"],
            model=json.dumps({**BASE_MODEL_CONFIG, "path": SELECTION_MODEL}, sort_keys=True),
        log:
            log_file("natural_variants", "{benchmark}"),
        benchmark:
            benchmark_file("natural_variants", "{benchmark}")
        threads: MODEL_THREADS
        conda:
            MODEL_ENV
        resources:
            **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"], texts=["pool"]),
        shell:
            "{LEAKTRACE} natural-variants --pool {input.pool} --model {params.model:q}"
            " --settings {params.settings:q} --seed {params.seed} --output {output} 2> {log}"
