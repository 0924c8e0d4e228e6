# The calibration table's rows of the per-sample detectors and of dataset
# inference (leaktrace/stages/calibration.py, issue 31): conformal decisions
# checked on the calibration fold and over re-partitions of the non-members
# under every scored testbed model, dataset inference on re-randomised
# memberships under the unexposed ones. No forward pass: the learned
# detectors' classifiers are refitted from their features, all fits of a
# model as one batch. Two rules, so they run side by side.

LEARNED_FAMILIES = [family for family in ("dpdllm", "veilprobe") if family in METHODS]


def conformal_calibration_models():
    """Every testbed model with detector scores: the base model, every target, the sham controls and twins."""
    return list(dict.fromkeys(MODELS + unexposed_models(scored=True)))


def membership_calibration_models():
    return unexposed_models(scored=True)


def learned_pairs(models):
    """(model, family) of every learned detector fitted under ``models`` (testbed models only)."""
    return [(m, family) for m in models if m in MODELS for family in LEARNED_FAMILIES]


def calibration_inputs(models):
    def inputs(wildcards):
        score_dir = f"{RESULTS}/score/{wildcards.benchmark}"
        return {"samples": f"{RESULTS}/filter/{wildcards.benchmark}.samples.parquet",
                "scores": [f"{score_dir}/{m}/scores.parquet" for m in models()],
                "learned": [f"{score_dir}/{m}/{family}/features.parquet" for m, family in learned_pairs(models())]}

    return inputs


def calibration_arguments(models):
    """--scores MODEL=PATH ... and --learned MODEL:FAMILY=PATH ..."""

    def arguments(wildcards, input):
        scores = " ".join(f"{m}={p}" for m, p in zip(models(), input.scores, strict=True))
        learned = " ".join(f"{m}:{f}={p}" for (m, f), p in zip(learned_pairs(models()), input.learned, strict=True))
        return f"--scores {scores}" + (f" --learned {learned}" if learned else "")

    return arguments


def calibration_settings(*keys, dataset_inference=False):
    """The calibration slice's ``keys``, the learned detectors' settings (VeilProbe's) and, for
    ``dataset_inference``, that test's."""
    block = {"calibration": {k: config["calibration"][k] for k in keys}, "veilprobe": METHODS.get("veilprobe")}
    if dataset_inference:
        block["dataset_inference"] = config["contamination"]["dataset_inference"]
    return json.dumps(block, sort_keys=True)


def calibration_results(benchmark):
    return [f"{RESULTS}/calibration/{benchmark}/{name}.parquet" for name in ("conformal", "dataset_inference")]


CALIBRATION_ROW_FILES.append(calibration_results)


rule calibration_conformal:
    input:
        unpack(calibration_inputs(conformal_calibration_models)),
    output:
        f"{RESULTS}/calibration/{{benchmark}}/conformal.parquet",
    params:
        arguments=calibration_arguments(conformal_calibration_models),
        settings=calibration_settings("alphas", "cross_fit_folds", "repartitions"),
        seed=config["seed"],
    log:
        f"{RESULTS}/logs/calibration_conformal/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/calibration_conformal/{{benchmark}}.tsv"
    threads: 1
    conda:
        MODEL_ENV
    resources:
        **cpu_job(seconds_per_row=0.01),
    shell:
        "{LEAKTRACE} calibration-conformal --samples {input.samples} {params.arguments} --settings {params.settings:q}"
        " --seed {params.seed} --output {output} 2> {log}"


rule calibration_membership:
    input:
        unpack(calibration_inputs(membership_calibration_models)),
    output:
        f"{RESULTS}/calibration/{{benchmark}}/dataset_inference.parquet",
    params:
        arguments=calibration_arguments(membership_calibration_models),
        settings=calibration_settings("alphas", "cross_fit_folds", "memberships", dataset_inference=True),
        seed=config["seed"],
    log:
        f"{RESULTS}/logs/calibration_membership/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/calibration_membership/{{benchmark}}.tsv"
    threads: 1
    conda:
        MODEL_ENV
    resources:
        **cpu_job(seconds_per_row=0.01),
    shell:
        "{LEAKTRACE} calibration-membership --samples {input.samples} {params.arguments} --settings {params.settings:q}"
        " --seed {params.seed} --output {output} 2> {log}"
