def member_order_params():
    """``train.member_order`` as a param of the mix only when not the default:
    the default's jobs keep their params and command, so nothing reruns."""
    order = config["train"]["member_order"]
    return {} if order == "shuffled" else {"member_order": order}


def mix_inputs(samples, benchmark=None):
    """A training mix's inputs: the split (whose members it takes), the benchmark table
    their texts come from, the general text and the base model's tokenizer."""
    return {"samples": samples, "benchmark": benchmark or benchmark_table(),
            "text": corpus_parts(config["train"]["text_corpus"]), "model": base_model_files()}


rule training_mix:
    input:
        **mix_inputs(split_file()),
    output:
        training_mix("{benchmark}", "{ratio}"),
    params:
        model=model_settings(),
        seed=config["seed"],
        **member_order_params(),
    log:
        log_file("training_mix", "{benchmark}", "ratio-{ratio}"),
    benchmark:
        benchmark_file("training_mix", "{benchmark}", "ratio-{ratio}")
    threads: 1
    priority: TRAINING_PATH
    resources:
        **cpu_job(tokenize=["samples", "benchmark", "text"]),
    conda:
        MODEL_ENV
    shell:
        "{LEAKTRACE} mix --samples {input.samples} --benchmark {input.benchmark} --text {input.text}"
        " --text-per-code {wildcards.ratio} --model {params.model:q} --seed {params.seed}"
        + (" --member-order {params.member_order}" if member_order_params() else "")
        + " --output {output} 2> {log}"


# GPUs of a LoRA job (train.gpus when the base model runs on cuda): more than
# one runs DDP, one process per GPU started by `accelerate launch` (on a free
# port, so DDP jobs sharing a node do not collide).
TRAIN_GPUS = config["train"]["gpus"] if on_gpu(BASE_MODEL_CONFIG) else 0
TRAIN_CLI = LEAKTRACE
if TRAIN_GPUS > 1:
    TRAIN_CLI = (f"HF_HUB_OFFLINE=1 {LEAKTRACE_ONLINE.removesuffix(' -m leaktrace')} -m accelerate.commands.launch"
                 f" --multi_gpu --num_processes {TRAIN_GPUS} --main_process_port 0 -m leaktrace")


def training_checkpoints(wildcards):
    """Checkpoints of a LoRA run (train.checkpoint_every): not an output, so
    Snakemake never deletes them when a job fails and the rerun of a killed,
    timed-out or preempted job resumes from them; the run removes them when
    it completes."""
    return checkpoint_dir("train_lora", wildcards.benchmark, f"ratio-{wildcards.ratio}-seed-{wildcards.seed}")


def sham_code_parts(wildcards):
    """The corpus the sham's stand-in functions come from (read only when a sham is trained)."""
    return corpus_parts(config["contamination"]["sham_code_corpus"])


def control_checkpoints(wildcards):
    """A control run's checkpoints, as training_checkpoints."""
    return checkpoint_dir(f"train_{wildcards.control}", wildcards.benchmark, f"ratio-{wildcards.ratio}-seed-{wildcards.seed}")


def training_seed(wildcards):
    """The LoRA run's own seed, derived from the run seed and the training seed."""
    return derive_seed(config["seed"], "train", wildcards.seed)


rule train_lora:
    input:
        mix=training_mix("{benchmark}", "{ratio}"),
        model=base_model_files(),
    output:
        # every seed saves every epoch (it trains through them anyway); later
        # seeds are scored at the last epoch only (rules/models.smk, TARGETS)
        adapters=[directory(adapter_dir("{benchmark}", "{ratio}", "{seed}", e)) for e in EPOCHS],
        training_log=run_training_log(training_run("{benchmark}", "{ratio}", "{seed}")),
    params:
        settings=stage_settings("train", config),
        model=model_settings(),
        seed=training_seed,
        checkpoints=training_checkpoints,
    log:
        log_file("train_lora", "{benchmark}", "ratio-{ratio}-seed-{seed}"),
    benchmark:
        benchmark_file("train_lora", "{benchmark}", "ratio-{ratio}-seed-{seed}")
    threads: MODEL_THREADS
    priority: TRAINING_PATH
    conda:
        MODEL_ENV
    resources:
        **model_job("train", batch_size=config["train"]["batch_size"], passes=max(EPOCHS), gpus=TRAIN_GPUS),
    shell:
        "{TRAIN_CLI} train --mix {input.mix} --model {params.model:q} --settings {params.settings:q} --seed {params.seed}"
        " --adapters {output.adapters} --log {output.training_log} --checkpoint-dir {params.checkpoints} 2> {log}"


# The sham control (contamination.sham): the target's mix with each member
# replaced by a function of non-benchmark code of about its length, trained
# exactly as train_lora trains the target (settings, epochs, seed), so a
# test can tell exposure from fine-tuning.
rule sham_mix:
    input:
        mix=training_mix("{benchmark}", "{ratio}"),
        code=sham_code_parts,
        model=base_model_files(),
    output:
        control_mix_file("sham", "{benchmark}", "{ratio}"),
    params:
        model=model_settings(),
        seed=config["seed"],
    log:
        log_file("sham_mix", "{benchmark}", "ratio-{ratio}"),
    benchmark:
        benchmark_file("sham_mix", "{benchmark}", "ratio-{ratio}")
    threads: 1
    resources:
        **cpu_job(tokenize=["mix", "code"]),
    conda:
        MODEL_ENV
    shell:
        "{LEAKTRACE} sham-mix --mix {input.mix} --code {input.code} --model {params.model:q} --seed {params.seed}"
        " --output {output} 2> {log}"


# The complement twin (contamination.twin): the split with members and
# non-members swapped, and its mix built exactly as the target's (same
# ratio, text stream and seed) from the target's non-members; ReCaLL's
# prefix samples stay out of both. Every evaluated sample is then a member
# of exactly one of target and twin (rules/twin.smk).
rule twin_split:
    input:
        split_file(),
    output:
        twin_split_file(),
    log:
        log_file("twin_split", "{benchmark}"),
    benchmark:
        benchmark_file("twin_split", "{benchmark}")
    threads: 1
    priority: TRAINING_PATH
    resources:
        **cpu_job(),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} twin-split --samples {input} --output {output} 2> {log}"


use rule training_mix as twin_mix with:
    input:
        **mix_inputs(twin_split_file()),
    output:
        control_mix_file("twin", "{benchmark}", "{ratio}"),
    log:
        log_file("twin_mix", "{benchmark}", "ratio-{ratio}"),
    benchmark:
        benchmark_file("twin_mix", "{benchmark}", "ratio-{ratio}")


# Each control trained on its mix exactly as train_lora trains the target
# (settings, epochs, training seed): one rule for both, as both cost a LoRA run.
rule train_control:
    input:
        mix=control_mix_file("{control}", "{benchmark}", "{ratio}"),
        model=base_model_files(),
    output:
        adapters=[directory(control_adapter_dir("{control}", "{benchmark}", "{ratio}", "{seed}", e)) for e in EPOCHS],
        training_log=run_training_log(control_run("{control}", "{benchmark}", "{ratio}", "{seed}")),
    params:
        settings=stage_settings("train", config),
        model=model_settings(),
        seed=training_seed,
        checkpoints=control_checkpoints,
    log:
        log_file("train_control", "{benchmark}", "{control}-ratio-{ratio}-seed-{seed}"),
    benchmark:
        benchmark_file("train_control", "{benchmark}", "{control}-ratio-{ratio}-seed-{seed}")
    threads: MODEL_THREADS
    priority: TRAINING_PATH
    conda:
        MODEL_ENV
    resources:
        **model_job("train", batch_size=config["train"]["batch_size"], passes=max(EPOCHS), gpus=TRAIN_GPUS),
    shell:
        "{TRAIN_CLI} train --mix {input.mix} --model {params.model:q} --settings {params.settings:q} --seed {params.seed}"
        " --adapters {output.adapters} --log {output.training_log} --checkpoint-dir {params.checkpoints} 2> {log}"


# The learning rate of the testbed, chosen by a rule that looks at no detector
# and no membership label (stages/learning_rate.py): not part of `rule all`,
# run by `make select-lr`; the config then records the selected rate.
rule select_learning_rate:
    input:
        mix=training_mix("{benchmark}", RATIOS[0]),
        text=corpus_parts(config["train"]["text_corpus"]),
        model=base_model_files(),
    output:
        learning_rate_file(),
    params:
        settings=stage_settings("select-lr", config),
        model=model_settings(),
        seed=config["seed"],
    log:
        log_file("select_learning_rate", "{benchmark}"),
    benchmark:
        benchmark_file("select_learning_rate", "{benchmark}")
    threads: MODEL_THREADS
    conda:
        MODEL_ENV
    resources:
        **model_job("train", batch_size=config["train"]["batch_size"],
                    passes=max(EPOCHS) * len(config["train"]["learning_rate_selection"]["grid"]), texts=["mix"]),
    shell:
        "{LEAKTRACE} select-lr --mix {input.mix} --text {input.text} --model {params.model:q} --settings {params.settings:q}"
        " --seed {params.seed} --output {output} 2> {log}"


rule learning_rate_selection:
    input:
        [learning_rate_file(b) for b in TESTBED_BENCHMARKS],
