# SrDetection's black-box baselines (stages/dpdllm_veilprobe.py), one rule per step
# that costs something, each re-run only by the settings it reads. DPDLLM:
# a reference adapter per benchmark, the target's sampled continuations, their
# features, the naive Bayes fit. VeilProbe: the key-token perturbation per
# benchmark, the mapping model on SrDetection black-box's continuations
# (reused, never generated again), the prototypical network's fit. The fits
# read the split's calibration fold only (a twin's: its swapped split, so its
# classifiers learn what it saw; the calibration fold is the same samples),
# cross-fitted over calibration.cross_fit_folds folds of it (no sample scored
# by a fit that saw its label).

from leaktrace.config_slice import slice_from_config
from leaktrace.settings.dpdllm_veilprobe import BlackboxPrefix

if "veilprobe" in METHODS and "srdetection_blackbox" not in METHODS:
    raise ValueError("score.methods.veilprobe reads SrDetection black-box's continuations: configure srdetection_blackbox too")


rule dpdllm_reference:
    input:
        variants=variants_file(),
        model=base_model_files(),
    output:
        directory(baselines_file("dpdllm-reference")),
    params:
        settings=lambda wildcards: stage_settings("dpdllm-reference", config),
        model=model_settings(),
        seed=config["seed"],
    log:
        log_file("dpdllm_reference", "{benchmark}"),
    benchmark:
        benchmark_file("dpdllm_reference", "{benchmark}")
    threads: MODEL_THREADS
    conda:
        CONDA_ENV
    resources:
        **model_job("train", batch_size=config["train"]["batch_size"], originals=True,
                    passes=METHODS.get("dpdllm", {}).get("reference_epochs", 1)),
    shell:
        "{LEAKTRACE} dpdllm-reference --variants {input.variants} --model {params.model:q}"
        " --settings {params.settings:q} --seed {params.seed} --output-dir {output} 2> {log}"


rule dpdllm_generations:
    input:
        variants=variants_file(),
        model=scored_model_files,
    output:
        learned_file("dpdllm", "generations.parquet"),
    params:
        settings=lambda wildcards: stage_settings("dpdllm-generations", config),
        batch=TOKEN_BATCH,
        model=scored_model_settings,
        adapter=adapter_args,
        seed=config["seed"],
    log:
        log_file("dpdllm_generations", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("dpdllm_generations", "{benchmark}", "{model}")
    threads: MODEL_THREADS
    conda:
        CONDA_ENV
    resources:
        # the prefix of each original, and a continuation of it
        **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"], originals=True,
                    passes=METHODS.get("dpdllm", {}).get("prefix_fraction", 1),
                    generate=METHODS.get("dpdllm", {}).get("max_new_tokens", 0)),
    shell:
        "{LEAKTRACE} dpdllm-generations --variants {input.variants} --model {params.model:q} {params.adapter}"
        " --settings {params.settings:q} --batch {params.batch:q} --seed {params.seed} --output {output} 2> {log}"


rule dpdllm_features:
    input:
        generations=learned_file("dpdllm", "generations.parquet"),
        reference=baselines_file("dpdllm-reference"),
        model=base_model_files(),
    output:
        learned_file("dpdllm", "features.parquet"),
    params:
        batch=TOKEN_BATCH,
        model=model_settings(),
    log:
        log_file("dpdllm_features", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("dpdllm_features", "{benchmark}", "{model}")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"], model=lambda wildcards: BASE_MODEL_CONFIG,
                    texts=["generations"], passes=2),  # the base model and the reference adapter
    shell:
        "{LEAKTRACE} dpdllm-features --generations {input.generations} --model {params.model:q}"
        " --reference-adapter {input.reference}/adapter --batch {params.batch:q} --output {output} 2> {log}"


rule dpdllm_fit:
    input:
        features=learned_file("dpdllm", "features.parquet"),
        samples=model_split,
    output:
        scores=learned_file("dpdllm", "scores.parquet"),
        classifier=directory(learned_file("dpdllm", "classifier")),
    params:
        folds=config["calibration"]["cross_fit_folds"],
        seed=config["seed"],
    log:
        log_file("dpdllm_fit", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("dpdllm_fit", "{benchmark}", "{model}")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} dpdllm-fit --features {input.features} --samples {input.samples} --folds {params.folds}"
        " --seed {params.seed} --output {output.scores}"
        " --model-dir {output.classifier} 2> {log}"


rule veilprobe_perturb:
    input:
        variants=variants_file(),
        model=base_model_files(),
    output:
        baselines_file("veilprobe_perturbed.parquet"),
    params:
        settings=lambda wildcards: stage_settings("veilprobe-perturb", config),
        blackbox=lambda wildcards: json.dumps(slice_from_config(BlackboxPrefix, config), sort_keys=True),
        batch=TOKEN_BATCH,
        model=model_settings(),
        seed=config["seed"],
    log:
        log_file("veilprobe_perturb", "{benchmark}"),
    benchmark:
        benchmark_file("veilprobe_perturb", "{benchmark}")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        # a forward and a backward pass of each original (gradient saliency), in batches padded to
        # their longest: sized as training on full-context sequences
        **model_job("train", batch_size=config["score"]["tokens"]["batch_size"], model=lambda wildcards: BASE_MODEL_CONFIG,
                    originals=True, padded=True),
    shell:
        "{LEAKTRACE} veilprobe-perturb --variants {input.variants} --model {params.model:q} --settings {params.settings:q}"
        " --blackbox {params.blackbox:q} --batch {params.batch:q} --seed {params.seed} --output {output} 2> {log}"


rule veilprobe_features:
    input:
        blackbox=blackbox_file(),
        perturbed=baselines_file("veilprobe_perturbed.parquet"),
        model=base_model_files(),
    output:
        features=learned_file("veilprobe", "features.parquet"),
        mapping=directory(learned_file("veilprobe", "mapping")),
    params:
        settings=lambda wildcards: stage_settings("veilprobe-features", config),
        model=model_settings(),
        seed=config["seed"],
    log:
        log_file("veilprobe_features", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("veilprobe_features", "{benchmark}", "{model}")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"], model=lambda wildcards: BASE_MODEL_CONFIG),
    shell:
        "{LEAKTRACE} veilprobe-features --blackbox {input.blackbox} --perturbed {input.perturbed} --model {params.model:q}"
        " --settings {params.settings:q} --seed {params.seed} --output {output.features} --mapping-dir {output.mapping} 2> {log}"


rule veilprobe_fit:
    input:
        features=learned_file("veilprobe", "features.parquet"),
        samples=model_split,
    output:
        scores=learned_file("veilprobe", "scores.parquet"),
        classifier=directory(learned_file("veilprobe", "classifier")),
    params:
        settings=lambda wildcards: stage_settings("veilprobe-fit", config),
        folds=config["calibration"]["cross_fit_folds"],
        seed=config["seed"],
    log:
        log_file("veilprobe_fit", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("veilprobe_fit", "{benchmark}", "{model}")
    threads: 1
    conda:
        CONDA_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} veilprobe-fit --features {input.features} --samples {input.samples} --settings {params.settings:q}"
        " --folds {params.folds} --seed {params.seed} --output {output.scores} --model-dir {output.classifier} 2> {log}"
