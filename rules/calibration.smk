# The calibration table's rows of the per-sample detectors and of dataset
# inference (leaktrace/stages/calibration.py): conformal decisions
# checked on the calibration fold and over re-partitions of the non-members
# under the checked testbed models (calibration.models), dataset inference on re-randomised
# memberships under the unexposed ones. No forward pass: the learned
# detectors' classifiers are refitted from their features, all fits of a
# model as one batch. One job per model and check, so each starts as soon as
# its model is scored and a change re-runs only the models it touches.

LEARNED_FAMILIES = [family for family in ("dpdllm", "veilprobe") if family in METHODS]


def conformal_calibration_models():
    """The scored testbed models whose conformal decisions are checked
    (`calibration.models`): null, the never-exposed ones (the base model, the
    sham controls and twins: the nulls) and the counterfactual stage's target
    (the one every table reads); `all`, every model with detector scores; or a list."""
    scored = list(dict.fromkeys(MODELS + unexposed_models(scored=True)))
    models = config["calibration"]["models"]
    if models is None:
        target = "target-r{}-s{}-e{}".format(*counterfactual_target())
        return [m for m in scored if m in unexposed_models(scored=True) or m == target]
    if models == "all":
        return scored
    unknown = [m for m in models if m not in scored]
    if unknown:
        raise ValueError(f"calibration.models {unknown} are not scored testbed models: {scored}")
    return models


def membership_calibration_models():
    return unexposed_models(scored=True)


def calibration_inputs(wildcards):
    """The split, the model's scores and its learned detectors' features (testbed models only)."""
    families = LEARNED_FAMILIES if wildcards.model in MODELS else []
    return {"samples": split_file(wildcards.benchmark), "scores": scores_file(wildcards.benchmark, wildcards.model),
            "learned": [learned_file(family, "features.parquet", wildcards.benchmark, wildcards.model) for family in families]}


def learned_arguments(wildcards, input):
    families = LEARNED_FAMILIES if wildcards.model in MODELS else []
    pairs = " ".join(f"{wildcards.model}:{f}={p}" for f, p in zip(families, input.learned, strict=True))
    return f"--learned {pairs}" if pairs else ""


def calibration_settings(*keys, dataset_inference=False):
    """The calibration slice's ``keys``, the learned detectors' settings (VeilProbe's) and, for
    ``dataset_inference``, that test's."""
    block = {"calibration": {k: config["calibration"][k] for k in keys}, "veilprobe": METHODS.get("veilprobe")}
    if dataset_inference:
        block["dataset_inference"] = config["contamination"]["dataset_inference"]
    return json.dumps(block, sort_keys=True)


def calibration_results(benchmark):
    return [conformal_file(benchmark, m) for m in conformal_calibration_models()] \
        + [membership_calibration_file(benchmark, m) for m in membership_calibration_models()]


CALIBRATION_ROW_FILES.append(calibration_results)


rule calibration_conformal:
    input:
        unpack(calibration_inputs),
    output:
        conformal_file(),
    params:
        learned=learned_arguments,
        settings=calibration_settings("alphas", "cross_fit_folds", "repartitions"),
        seed=config["seed"],
    log:
        log_file("calibration_conformal", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("calibration_conformal", "{benchmark}", "{model}")
    threads: 1
    conda:
        MODEL_ENV
    resources:
        **cpu_job(per_row={"learned": 0.2}),  # the learned detectors refitted per re-partition, per scored sample
    shell:
        "{LEAKTRACE} calibration-conformal --samples {input.samples} --scores {wildcards.model}={input.scores}"
        " {params.learned} --settings {params.settings:q} --seed {params.seed} --output {output} 2> {log}"


rule calibration_membership:
    input:
        unpack(calibration_inputs),
    output:
        membership_calibration_file(),
    params:
        learned=learned_arguments,
        settings=calibration_settings("alphas", "cross_fit_folds", "memberships", dataset_inference=True),
        seed=config["seed"],
    log:
        log_file("calibration_membership", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("calibration_membership", "{benchmark}", "{model}")
    threads: 1
    conda:
        MODEL_ENV
    resources:
        **cpu_job(per_row={"learned": 0.2}),  # the learned detectors refitted per re-partition, per scored sample
    shell:
        "{LEAKTRACE} calibration-membership --samples {input.samples} --scores {wildcards.model}={input.scores}"
        " {params.learned} --settings {params.settings:q} --seed {params.seed} --output {output} 2> {log}"
