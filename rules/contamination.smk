# Dataset-level contamination tests: a p-value per model and
# benchmark from the score tables alone, its curve over the number of samples,
# and its false-positive rate under nulls the testbed knows to be true. No
# forward pass: seconds on the default config. The sham control
# (contamination.sham, rules/train.smk) is scored as any testbed model.

if config["contamination"]["variant_preference"]["reference"] == "sham" and not SHAMS:
    raise ValueError("contamination.variant_preference.reference: sham needs contamination.sham: true")


def contamination_inputs(wildcards):
    return {
        "samples": split_file(wildcards.benchmark),
        "scores": [scores_file(wildcards.benchmark, m) for m in MODELS + SHAMS],
        "held_out": control_ids_digest(),
        "exchangeability": exchangeability_results(wildcards),
        "exchangeability_calibration": exchangeability_calibration_results(wildcards),
    }


def contamination_models(block, default_shams=False, default=None):
    """The testbed models (sham controls included) a block of
    `contamination` names; null: ``default``, else the base model and the
    counterfactual stage's target (and, with ``default_shams``, the sham controls)."""
    models = config["contamination"][block]["models"]
    if models is None:
        return default or ["reference", "target-r{}-s{}-e{}".format(*counterfactual_target())] + (SHAMS if default_shams else [])
    known = list(dict.fromkeys(MODELS + unexposed_models()))
    unknown = [m for m in models if m not in known]
    if unknown:
        raise ValueError(f"contamination.{block}.models {unknown} are not testbed models: {known}")
    return models


def exchangeability_models():
    """The testbed models the sharded exchangeability test scores (its own
    forward passes): by default the counterfactual target and every
    unexposed model (the base model, `ref-model`, shams, twins), under which
    the benchmark's real order is a null (the calibration table's `real order` rows)."""
    target = "target-r{}-s{}-e{}".format(*counterfactual_target())
    return contamination_models("exchangeability", default=list(dict.fromkeys(["reference", target] + unexposed_models())))


def exchangeability_calibration_models():
    """The base model, when the exchangeability test scores it and
    `calibration_seeds` asks for random orders: the null it is calibrated under."""
    calibrate = config["contamination"]["exchangeability"]["calibration_seeds"] > 0
    return [m for m in exchangeability_models() if m == "reference" and calibrate]


def contamination_calibration_models():
    """``--calibration-models``: the models the contamination tests are calibrated under, resolved."""
    models = contamination_models("calibration", default_shams=True)
    return "--calibration-models " + " ".join(models) if models else ""


def exchangeability_results(wildcards):
    return [exchangeability_file(wildcards.benchmark, m) for m in exchangeability_models()]


def exchangeability_calibration_results(wildcards):
    return [exchangeability_calibration_file(wildcards.benchmark, m) for m in exchangeability_calibration_models()]


def contamination_score_arguments(wildcards, input):
    """``MODEL=PATH`` of every scored testbed model, sham controls last."""
    return " ".join(f"{m}={p}" for m, p in zip(MODELS + SHAMS, input.scores, strict=True))


def exchangeability_arguments(wildcards, input):
    return " ".join(f"{m}={p}" for m, p in zip(exchangeability_models(), input.exchangeability, strict=True))


def exchangeability_calibration_arguments(wildcards, input):
    pairs = zip(exchangeability_calibration_models(), input.exchangeability_calibration, strict=True)
    return " ".join(f"{m}={p}" for m, p in pairs)


def contamination_fragments(benchmark):
    """The Markdown section of this benchmark's contamination tests, for its aggregate report."""
    return [contamination_file("report.md", benchmark)]


CALIBRATION_ROW_FILES.append(lambda benchmark: [contamination_file("calibration_rows.parquet", benchmark)])


rule contamination:
    input:
        unpack(contamination_inputs),
    output:
        p_values=contamination_file("p_values.parquet"),
        curve=contamination_file("p_value_curve.parquet"),
        calibration=contamination_file("calibration.parquet"),
        calibration_rows=contamination_file("calibration_rows.parquet"),
        figure=report(contamination_file("p_value_curve.png"), caption="../report/p_value_curve.rst",
                      category="Contamination"),
        section=contamination_file("report.md"),
    params:
        settings=stage_settings("contamination", config),
        calibration_models=contamination_calibration_models(),
        seed=config["seed"],
        scores=contamination_score_arguments,
        held_out=held_out_argument,
        exchangeability=exchangeability_arguments,
        exchangeability_calibration=exchangeability_calibration_arguments,
        out_dir=contamination_dir(),
    log:
        log_file("contamination", "{benchmark}"),
    benchmark:
        benchmark_file("contamination", "{benchmark}")
    threads: 1
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} contamination --samples {input.samples} --scores {params.scores} {params.held_out}"
        " --exchangeability {params.exchangeability} --exchangeability-calibration {params.exchangeability_calibration}"
        " {params.calibration_models} --settings {params.settings:q} --seed {params.seed} --output-dir {params.out_dir} 2> {log}"


# Oren et al.'s sharded test: the one stage of this block with forward passes
# (shards and their permutations through the batched token scorer).
EXCHANGEABILITY = config["contamination"]["exchangeability"]

rule exchangeability:
    input:
        benchmark=benchmark_table(),
        samples=split_file(),
        model=scored_model_files,
    output:
        exchangeability_file(),
    params:
        settings=stage_settings("exchangeability", config),
        batch=TOKEN_BATCH,
        model=scored_model_settings,
        adapter=adapter_args,
        seed=config["seed"],
    log:
        log_file("exchangeability", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("exchangeability", "{benchmark}", "{model}")
    threads: MODEL_THREADS
    conda:
        MODEL_ENV
    resources:
        # n_shards shards, each at most a context long, in their order and n_permutations others
        **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"],
                    sequences=EXCHANGEABILITY["n_shards"] * (1 + EXCHANGEABILITY["n_permutations"])),
    shell:
        "{LEAKTRACE} exchangeability --benchmark {input.benchmark} --samples {input.samples} --model {params.model:q}"
        " {params.adapter} --settings {params.settings:q} --batch {params.batch:q} --seed {params.seed} --output {output} 2> {log}"


# The exchangeability test's false-positive rate: seeded random orders of the
# examples, each taken as the canonical one, under the base model (a null for
# any model that never saw those orders); its forward passes grow with
# `calibration_seeds`.
rule exchangeability_calibration:
    input:
        benchmark=benchmark_table(),
        samples=split_file(),
        model=scored_model_files,
    output:
        exchangeability_calibration_file(),
    params:
        settings=stage_settings("exchangeability-calibration", config),
        batch=TOKEN_BATCH,
        model=scored_model_settings,
        adapter=adapter_args,
        seed=config["seed"],
    log:
        log_file("exchangeability_calibration", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("exchangeability_calibration", "{benchmark}", "{model}")
    threads: MODEL_THREADS
    conda:
        MODEL_ENV
    resources:
        **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"],
                    sequences=EXCHANGEABILITY["calibration_seeds"] * EXCHANGEABILITY["n_shards"]
                    * (1 + EXCHANGEABILITY["n_permutations"])),
    shell:
        "{LEAKTRACE} exchangeability-calibration --benchmark {input.benchmark} --samples {input.samples}"
        " --model {params.model:q} {params.adapter} --settings {params.settings:q} --batch {params.batch:q}"
        " --seed {params.seed} --output {output} 2> {log}"
