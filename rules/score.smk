# One forward pass per text and model (tokens.parquet); the detectors are then
# computed from that cache (scores.parquet). Ref, ReCaLL, DC-PDD and SrDetection
# black-box add only the passes they inherently need: the reference model's
# pass, the prefix-conditioned pass, token counts of a corpus, greedy
# continuations. Changing `score.methods` re-runs only `detector_scores` and
# what follows it, unless it changes one of those passes.

METHODS = config["score"]["methods"]
if "dc_pdd" in METHODS and METHODS["dc_pdd"]["corpus"] not in CORPORA:
    raise ValueError(f"score.methods.dc_pdd.corpus {METHODS['dc_pdd']['corpus']!r} is not one of the corpora {CORPORA}")


# --batch of a model pass batched as the token pass is (score.tokens, the tokens stage's settings)
TOKEN_BATCH = stage_settings("tokens", config)


def _is_ref_model(model):
    """An audited model of its own that is Ref's reference model itself (no adapter on it)."""
    spec = AUDIT_OWN.get(model)
    return spec is not None and not spec.get("adapter") and spec["path"] == REF_MODEL


def reference_tokens(wildcards):
    """Ref's evidence: the originals under the reference model (`ref-model`);
    none for that model itself, or for an audited model that is it."""
    if not REF_MODEL or wildcards.model == "ref-model" or _is_ref_model(wildcards.model):
        return []
    return [tokens_file(wildcards.benchmark, "ref-model")]


def oracle_tokens(wildcards):
    """The oracle Ref's evidence: a target's (or a control's) texts under its
    own base model (the testbed's `reference`), which no real audit has."""
    if not (REF_SETTINGS and REF_SETTINGS["oracle"]) or not wildcards.model.startswith(("target-", "sham-", "twin-", "dose-")):
        return []
    return [tokens_file(wildcards.benchmark, "reference")]


def recall_prefixed(wildcards):
    if "recall" not in METHODS or wildcards.model in AUDIT_OWN or wildcards.model == "ref-model":
        return []
    return [prefixed_file(wildcards.benchmark, wildcards.model)]


def dc_pdd_counts(wildcards):
    if "dc_pdd" not in METHODS or wildcards.model in AUDIT_OWN:
        return []
    return [token_counts_file(METHODS["dc_pdd"]["corpus"])]


def blackbox_rows(wildcards):
    if "srdetection_blackbox" not in METHODS or wildcards.model == "ref-model":
        return []
    return [blackbox_file(wildcards.benchmark, wildcards.model)]


def learned_rows(wildcards):
    """The learned black-box baselines' per-sample outputs (rules/dpdllm_veilprobe.smk):
    testbed models, twins and the exposure-dose models scored by detector (rules/dose.smk),
    whose texts share the base model's tokenizer and whose labels the split (the twin's: swapped) gives."""
    if wildcards.model not in MODELS + TWINS and not wildcards.model.startswith(("dose-r", "dose-twin-")):
        return []
    return [learned_file(family, "scores.parquet", wildcards.benchmark, wildcards.model)
            for family in ("dpdllm", "veilprobe") if family in METHODS]


def token_pass_texts(wildcards):
    """Which texts a model's token pass scores: Ref's reference model only the
    originals; every other model the originals and the detector variants."""
    return "--originals-only" if wildcards.model == "ref-model" else ""


def optional_args(flag, function):
    def arguments(wildcards, input):
        return " ".join(f"{flag} {p}" for p in function(wildcards))

    return arguments


rule token_stats:
    input:
        variants=variants_file(),
        model=scored_model_files,
    output:
        tokens_file(),
    params:
        settings=TOKEN_BATCH,
        model=scored_model_settings,
        adapter=adapter_args,
        texts=token_pass_texts,
    log:
        log_file("token_stats", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("token_stats", "{benchmark}", "{model}")
    threads: MODEL_THREADS
    priority: TRAINING_PATH
    conda:
        MODEL_ENV
    resources:
        # Ref's reference model scores the originals only (token_pass_texts)
        **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"], originals=lambda w: w.model == "ref-model"),
    shell:
        "{LEAKTRACE} tokens --variants {input.variants} --model {params.model:q} {params.adapter} {params.texts}"
        " --settings {params.settings:q} --output {output} 2> {log}"


# ReCaLL: every original scored again after the held-out non-member prefix.
rule recall_tokens:
    input:
        variants=variants_file(),
        samples=split_file(),
        model=scored_model_files,
    output:
        prefixed_file(),
    params:
        settings=lambda wildcards: stage_settings("recall-tokens", config),
        batch=TOKEN_BATCH,
        model=scored_model_settings,
        adapter=adapter_args,
        seed=config["seed"],
    log:
        log_file("recall_tokens", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("recall_tokens", "{benchmark}", "{model}")
    threads: MODEL_THREADS
    conda:
        MODEL_ENV
    resources:
        **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"], texts=["variants"], originals=True,
                    passes=1 + METHODS.get("recall", {}).get("n_shots", 0)),  # each original after its shots
    shell:
        "{LEAKTRACE} recall-tokens --variants {input.variants} --samples {input.samples} --model {params.model:q}"
        " {params.adapter} --settings {params.settings:q} --batch {params.batch:q} --seed {params.seed} --output {output} 2> {log}"


# DC-PDD: token counts of the configured reference corpus under the base
# model's tokenizer, counted once per run (every testbed model shares it).
rule token_counts:
    input:
        corpus=lambda wildcards: corpus_parts(wildcards.corpus),
        model=base_model_files(),
    output:
        token_counts_file(),
    params:
        model=model_settings(),
    log:
        log_file("token_counts", "{corpus}"),
    benchmark:
        benchmark_file("token_counts", "{corpus}")
    threads: 1
    priority: TRAINING_PATH
    resources:
        **cpu_job(tokenize=["corpus"]),
    conda:
        MODEL_ENV
    shell:
        "{LEAKTRACE} token-counts --corpus {input.corpus} --model {params.model:q} --output {output} 2> {log}"


# SrDetection black-box: greedy continuations of the prefix of every original
# and variant, compared with the true suffix.
rule blackbox_generations:
    input:
        variants=variants_file(),
        model=scored_model_files,
    output:
        blackbox_file(),
    params:
        settings=lambda wildcards: stage_settings("blackbox", config),
        batch=TOKEN_BATCH,
        model=scored_model_settings,
        adapter=adapter_args,
        generator=generator_args(),
    log:
        log_file("blackbox_generations", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("blackbox_generations", "{benchmark}", "{model}")
    threads: MODEL_THREADS
    conda:
        MODEL_ENV
    resources:
        # the prefix of each text, and a continuation of it
        **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"],
                    passes=METHODS.get("srdetection_blackbox", {}).get("prefix_fraction", 1),
                    generate=METHODS.get("srdetection_blackbox", {}).get("max_new_tokens", 0), generator=GENERATOR),
    shell:
        "{LEAKTRACE} blackbox --variants {input.variants} --model {params.model:q} {params.adapter} {params.generator}"
        " --settings {params.settings:q} --batch {params.batch:q} --output {output} 2> {log}"


rule detector_scores:
    input:
        tokens=tokens_file(),
        variants=variants_file(),
        reference=reference_tokens,
        oracle=oracle_tokens,
        prefixed=recall_prefixed,
        counts=dc_pdd_counts,
        blackbox=blackbox_rows,
        learned=learned_rows,
    output:
        scores_file(),
    params:
        settings=stage_settings("scores", config),
        reference=optional_args("--reference", reference_tokens),
        oracle=optional_args("--oracle-reference", oracle_tokens),
        prefixed=optional_args("--prefixed", recall_prefixed),
        counts=optional_args("--token-counts", dc_pdd_counts),
        blackbox=optional_args("--blackbox", blackbox_rows),
        learned=optional_args("--learned", learned_rows),
        model=scored_model_settings,
    log:
        log_file("detector_scores", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("detector_scores", "{benchmark}", "{model}")
    threads: 1
    conda:
        MODEL_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} scores --tokens {input.tokens} --variants {input.variants} {params.reference} {params.oracle} {params.prefixed}"
        " {params.counts} {params.blackbox} {params.learned} --model {params.model:q} --settings {params.settings:q} --output {output} 2> {log}"
