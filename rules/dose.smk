# The exposure-dose experiment (config/experiments/exposure-dose.yaml,
# docs/results.md, "Exposure dose").
# Each member inserted k times (dose.copies) into the fixed training mix (the
# text drawn for one copy: train/mix.py, member_copies), trained for a single
# pass, per training seed; the default's last-epoch setting (one copy, every
# epoch) as the top row. Four arms of the same dose, each making one family of
# tests valid by design:
#   dose-r…      the members as the target sees them: the per-sample detectors, dataset inference
#   dose-twin-r… the non-members instead (the complement twin): the sign-flip test
#   dose-wm-r…   the members' randomly published forms (watermark.enabled): the exact rank test
#   dose-ord-r…  the members packed in a randomised published order: Oren et al.'s exchangeability test
# Every dose model is scored by the testbed's own rules (score.smk, by name);
# the `dose` rule turns them into aggregate/<benchmark>/dose.{parquet,md,png}.

from leaktrace.models.naming import DOSE_ARMS, dose_labels, dose_model

DOSE = config["dose"]


def dose_benchmarks():
    return TESTBED_BENCHMARKS if DOSE["enabled"] else []


def dose_ratio():
    """The fixed mix's ratio: dose.ratio, else the counterfactual target's."""
    return f"{DOSE['ratio']:g}" if DOSE["ratio"] is not None else counterfactual_target()[0]


def dose_seeds():
    return [str(s) for s in DOSE["seeds"]] if DOSE["seeds"] is not None else SEEDS


def dose_arms():
    arms = ["target"] + [arm for arm, key in (("twin", "twin"), ("wm", "watermark"), ("ord", "exchangeability")) if DOSE[key]]
    if "wm" in arms and not WATERMARK["enabled"]:
        raise ValueError("dose.watermark needs watermark.enabled: true (the release its arm is trained on)")
    return arms


def dose_grid():
    """(copies, epochs) of every row: each dose for one pass, then the top row (one copy, the last epoch)."""
    rows = [(k, 1) for k in sorted(DOSE["copies"])]
    if DOSE["top_row"] and (1, EPOCHS[-1]) not in rows:
        rows.append((1, EPOCHS[-1]))
    return rows


def dose_name(arm, copies, seed, epoch):
    """A row's model: the testbed's own where it trains exactly that (one
    copy, the last of train.epochs: a testbed run trains that many passes, so
    its last adapter is that dose; an earlier epoch's adapter is not a run of
    that many passes, its learning-rate schedule runs on), else a dose model of its own."""
    ratio = dose_ratio()
    if copies == 1 and epoch == EPOCHS[-1] and ratio in RATIOS:
        testbed = {"target": f"target-r{ratio}-s{seed}-e{epoch}", "twin": f"twin-r{ratio}-s{seed}-e{epoch}",
                   "wm": f"wm-r{ratio}-s{seed}-e{epoch}"}.get(arm)
        known = {"target": TARGETS, "twin": TWINS, "wm": WATERMARK_TARGETS}.get(arm, [])
        if testbed in known:
            return testbed
    return dose_model(arm, ratio, copies, seed, epoch)


def dose_models(arm):
    return [dose_name(arm, k, s, e) for k, e in dose_grid() for s in dose_seeds()]


def dose_outputs():
    return [aggregate_file(f"dose.{ext}", b) for b in dose_benchmarks() for ext in ("parquet", "md", "png")]


def dose_fragments(benchmark):
    """The dose table's Markdown section, for the benchmark's aggregate report."""
    return [aggregate_file("dose.md", benchmark)] if benchmark in dose_benchmarks() else []


# Row files of the testbed's blind baseline (calibration/blind_baseline.py's table
# rows: auc, ci_low, ci_high, p_value) shown beside the per-sample detectors: a
# function benchmark -> paths: the testbed's blind baseline (rule testbed_blind,
# rules/aggregate.smk), over the same split the dose arms train on; it must not
# be an output of the aggregate rule, which reads dose.md.
DOSE_BLIND_ROWS = [lambda benchmark: [blind_baseline_file(benchmark)]]


def dose_adapter(benchmark, model):
    arm, ratio, copies, seed, epoch = dose_labels(model)
    return run_adapter(dose_run(arm, benchmark, ratio, copies, seed), epoch)


# The benchmark as released in a randomised order (a seeded permutation of its
# rows): the order the `ord` arm is trained on and its exchangeability test
# scores, so that under the null (a model that never saw this order) the
# order is exchangeable by construction.
rule dose_order:
    input:
        benchmark_table(),
    output:
        dose_published_order(),
    params:
        seed=config["seed"],
    log:
        log_file("dose_order", "{benchmark}"),
    benchmark:
        benchmark_file("dose_order", "{benchmark}")
    threads: 1
    resources:
        **cpu_job(),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} dose-order --benchmark {input} --seed {params.seed} --output {output} 2> {log}"


def dose_mix_inputs(wildcards):
    arm = wildcards.arm
    benchmark = {"wm": watermark_release_table(wildcards.benchmark),
                 "ord": dose_published_order(wildcards.benchmark)}.get(arm, benchmark_table(wildcards.benchmark))
    return mix_inputs(twin_split_file(wildcards.benchmark) if arm == "twin" else split_file(wildcards.benchmark), benchmark)


def dose_member_order(wildcards):
    return "canonical" if wildcards.arm == "ord" else "shuffled"


# One mix per arm, ratio and dose: the arm's members (or published forms, or
# order) k times, the same general text as the one-copy mix (same seed).
rule dose_mix:
    input:
        unpack(dose_mix_inputs),
    output:
        dose_mix_file("{arm}", "{benchmark}", "{ratio}", "{copies}"),
    wildcard_constraints:
        arm="|".join(DOSE_ARMS),
        copies=r"\d+",
    params:
        model=model_settings(),
        seed=config["seed"],
        order=dose_member_order,
    log:
        log_file("dose_mix", "{benchmark}", "{arm}-ratio-{ratio}-copies-{copies}"),
    benchmark:
        benchmark_file("dose_mix", "{benchmark}", "{arm}-ratio-{ratio}-copies-{copies}")
    threads: 1
    priority: TRAINING_PATH
    resources:
        **cpu_job(tokenize=["samples", "benchmark", "text"]),
    conda:
        MODEL_ENV
    shell:
        "{LEAKTRACE} mix --samples {input.samples} --benchmark {input.benchmark} --text {input.text}"
        " --text-per-code {wildcards.ratio} --model {params.model:q} --seed {params.seed}"
        " --member-order {params.order} --member-copies {wildcards.copies} --output {output} 2> {log}"


def dose_train_settings(wildcards):
    """train_lora's settings, trained for `epoch` passes (one adapter, at the end)."""
    train = {k: v for k, v in config["train"].items()
             if k not in ("text_per_code", "seeds", "learning_rate_selection", "member_order")}
    return json.dumps({**train, "epochs": [int(wildcards.epoch)]}, sort_keys=True)


def dose_checkpoints(wildcards):
    return checkpoint_dir("dose_train", wildcards.benchmark, f"{wildcards.arm}-ratio-{wildcards.ratio}"
                          f"-copies-{wildcards.copies}-seed-{wildcards.seed}-epoch-{wildcards.epoch}")


# Trained as train_lora trains the target (settings, training seed), for `epoch` passes.
rule dose_train:
    input:
        mix=dose_mix_file("{arm}", "{benchmark}", "{ratio}", "{copies}"),
        model=base_model_files(),
    output:
        adapter=directory(f"{dose_run('{arm}', '{benchmark}', '{ratio}', '{copies}')}/adapter/epoch-{{epoch}}"),
        training_log=f"{dose_run('{arm}', '{benchmark}', '{ratio}', '{copies}')}/training_log-epoch-{{epoch}}.parquet",
    wildcard_constraints:
        arm="|".join(DOSE_ARMS),
        copies=r"\d+",
    params:
        settings=dose_train_settings,
        model=model_settings(),
        seed=training_seed,
        checkpoints=dose_checkpoints,
    log:
        log_file("dose_train", "{benchmark}", "{arm}-ratio-{ratio}-copies-{copies}-seed-{seed}-epoch-{epoch}"),
    benchmark:
        benchmark_file("dose_train", "{benchmark}", "{arm}-ratio-{ratio}-copies-{copies}-seed-{seed}-epoch-{epoch}")
    threads: MODEL_THREADS
    priority: TRAINING_PATH
    conda:
        MODEL_ENV
    resources:
        **model_job("train", batch_size=config["train"]["batch_size"], passes=lambda wildcards: int(wildcards.epoch),
                    gpus=TRAIN_GPUS),
    shell:
        "{TRAIN_CLI} train --mix {input.mix} --model {params.model:q} --settings {params.settings:q} --seed {params.seed}"
        " --adapters {output.adapter} --log {output.training_log} --checkpoint-dir {params.checkpoints} 2> {log}"


def dose_watermark_files(wildcards):
    return base_model_files() + [dose_adapter(wildcards.benchmark, wildcards.model)]


# The rank test of the release under a dose model trained on it (the testbed's rule, its own outputs).
use rule watermark_test as dose_watermark_test with:
    input:
        published=watermark_release("{benchmark}", "published.jsonl"),
        commitment=watermark_release("{benchmark}", "commitment.json"),
        forms=watermark_release("{benchmark}", "private/forms.parquet"),
        secret=watermark_release("{benchmark}", "private/secret.key"),
        model=dose_watermark_files,
    output:
        tokens=dose_watermark_file("tokens.parquet"),
        ranks=dose_watermark_file("ranks.parquet"),
        result=dose_watermark_file("result.parquet"),
    wildcard_constraints:
        model=r"dose-wm-r[0-9.]+-c\d+-s\d+-e\d+",
    params:
        model=model_settings(),
        adapter=watermark_adapter_args,
        batch=lambda wildcards: f"--batch-size {config['score']['tokens']['batch_size']}"
        + (f" --token-budget {config['score']['tokens']['token_budget']}" if config["score"]["tokens"]["token_budget"] else ""),
        seed=config["seed"],
        release=watermark_release("{benchmark}", ""),
        out_dir=dose_watermark_dir(),
    log:
        log_file("dose_watermark_test", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("dose_watermark_test", "{benchmark}", "{model}")


# Oren et al.'s test of the published order under a dose model trained on it.
use rule exchangeability as dose_exchangeability with:
    input:
        benchmark=dose_published_order(),
        samples=split_file(),
        model=scored_model_files,
    output:
        dose_exchangeability_file(),
    wildcard_constraints:
        model=r"dose-ord-r[0-9.]+-c\d+-s\d+-e\d+",
    log:
        log_file("dose_exchangeability", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("dose_exchangeability", "{benchmark}", "{model}")


def dose_watermark_result(benchmark, model):
    if model.startswith("dose-"):
        return dose_watermark_file("result.parquet", benchmark, model)
    return watermark_test_file("result.parquet", benchmark, model)


def dose_inputs(wildcards):
    b = wildcards.benchmark
    arms = dose_arms()
    return {
        "samples": split_file(b),
        "scores": [scores_file(b, m) for m in dose_models("target")],
        "twins": [scores_file(b, m) for m in dose_models("twin")] if "twin" in arms else [],
        "watermark": [dose_watermark_result(b, m) for m in dose_models("wm")] if "wm" in arms else [],
        "exchangeability": [dose_exchangeability_file(b, m) for m in dose_models("ord")] if "ord" in arms else [],
        "blind": [path for rows in DOSE_BLIND_ROWS for path in rows(b)],
    }


def dose_arguments(wildcards, input):
    """MODEL=PATH of every arm's inputs, each under its option."""
    parts = []
    for option, arm, kind in (("--scores", "target", "scores"), ("--twins", "twin", "twins"),
                              ("--watermark", "wm", "watermark"), ("--exchangeability", "ord", "exchangeability")):
        if input[kind]:
            parts.append(option + " " + " ".join(f"{m}={p}" for m, p in zip(dose_models(arm), input[kind], strict=True)))
    parts += [f"--blind {path}" for path in input.blind]
    return " ".join(parts)


rule dose:
    input:
        unpack(dose_inputs),
    output:
        table=aggregate_file("dose.parquet"),
        section=aggregate_file("dose.md"),
        figure=report(aggregate_file("dose.png"), caption="../report/dose.rst", category="Detection"),
    params:
        settings=json.dumps({**{k: DOSE[k] for k in ("alpha", "fpr", "power")},
                             "dataset_inference": config["contamination"]["dataset_inference"]}, sort_keys=True),
        seed=config["seed"],
        models=dose_arguments,
        out_dir=aggregate_dir(),
    log:
        log_file("dose", "{benchmark}"),
    benchmark:
        benchmark_file("dose", "{benchmark}")
    threads: 1
    resources:
        **cpu_job(),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} dose --samples {input.samples} {params.models} --settings {params.settings:q} --seed {params.seed}"
        " --output-dir {params.out_dir} 2> {log}"
