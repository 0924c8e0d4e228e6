# Randomized publication (workflow/leaktrace/stages/watermark.py,
# docs/guides/publish-a-benchmark.md): the testbed's
# benchmark published as a maintainer would (K + 1 forms per problem proven
# equivalent in the sandbox, one chosen by a keyed draw), watermark targets
# trained through the target's own mix and LoRA rules on the members'
# published forms, every tested model's forms scored in one pass, and the
# rank test's validity checked by random publications re-drawn under the
# unexposed models (the calibration table's `random publication` rows).

from leaktrace.data.humaneval import shipped_humaneval_path

WATERMARK = config["watermark"]


def watermark_benchmarks():
    return TESTBED_BENCHMARKS if WATERMARK["enabled"] else []


def watermark_ratio():
    """The watermark targets' mixing ratio: the configured one, else the counterfactual target's."""
    return f"{WATERMARK['ratio']:g}" if WATERMARK["ratio"] is not None else counterfactual_target()[0]


def watermark_seeds():
    return [str(s) for s in WATERMARK["seeds"]] if WATERMARK["seeds"] is not None else SEEDS[:1]


WATERMARK_TARGETS = [f"wm-r{watermark_ratio()}-s{s}-e{e}" for s in watermark_seeds() for e in EPOCHS]


def watermark_null_models():
    """The models that never saw the release, which the release is tested under
    and its random publications re-drawn under: the base model, the sham
    controls, the complement twins (`TWINS`, rules/models.smk) and the headline target, trained on the public originals
    but never on the release; or `watermark.nulls`."""
    nulls = WATERMARK["nulls"]
    if nulls is None:
        return list(dict.fromkeys(["reference"] + SHAMS + TWINS
                                  + ["target-r{}-s{}-e{}".format(*counterfactual_target())]))
    known = MODELS + SHAMS + TWINS
    unknown = [m for m in nulls if m not in known]
    if unknown:
        raise ValueError(f"watermark.nulls {unknown} are not scored testbed models: {known}")
    return nulls


def watermark_tested_models():
    return watermark_null_models() + WATERMARK_TARGETS


def watermark_model(model):
    """``wm-r{ratio}-s{seed}-e{epoch}`` -> (ratio, seed, epoch) labels."""
    return trained_model_labels(model.replace("wm-", "target-", 1))


def watermark_tested_model_files(wildcards):
    """The base model's files and the tested model's adapter (a watermark target's own)."""
    if wildcards.model.startswith("wm-"):
        ratio, seed, epoch = watermark_model(wildcards.model)
        return base_model_files() + [run_adapter(watermark_run(wildcards.benchmark, ratio, seed), epoch)]
    return base_model_files() + model_adapter(wildcards)


def watermark_adapter_args(wildcards, input):
    return " ".join(f"--adapter {path}" for path in input.model if "/adapter/" in str(path))


def watermark_source(wildcards):
    """The benchmark's file as configured (format humaneval: the shipped file where no path is given)."""
    settings = config["benchmarks"][wildcards.benchmark]
    return settings["path"] or str(shipped_humaneval_path())


def watermark_layout(benchmark):
    """The publish command's reader options for the benchmark's file."""
    settings = config["benchmarks"][benchmark]
    if settings["format"] == "humaneval":
        return {"format": "jsonl", "preset": "humaneval"}
    return {key: settings[key] for key in ("format", "preset", "fields") if settings.get(key) is not None}


def publish_args(wildcards):
    """The publish command's options from the config: layout, limit, forms, transforms and the sandbox."""
    layout = watermark_layout(wildcards.benchmark)
    limit = config["benchmarks"][wildcards.benchmark].get("limit")
    args = [f"--format {layout['format']}"] + ([f"--preset {layout['preset']}"] if "preset" in layout else []) \
        + ([f"--fields {shlex.quote(json.dumps(layout['fields'], sort_keys=True))}"] if "fields" in layout else []) \
        + ([f"--limit {limit}"] if limit else []) \
        + [f"--forms {WATERMARK['forms']}", f"--candidates {WATERMARK['candidates']}",
           f"--transforms {' '.join(WATERMARK['transforms'])}", f"--t3-target {WATERMARK['t3_target']}",
           f"--sandbox {shlex.quote(json.dumps(config['variants']['sandbox'], sort_keys=True))}"] \
        + ([f"--names-per-form {WATERMARK['names_per_form']}"] if WATERMARK["names_per_form"] else []) \
        + (["--include-original"] if WATERMARK["include_original"] else [])
    return " ".join(args)


def release_settings(wildcards):
    """The ingest command's settings of the release: JSON lines in the benchmark's field mapping."""
    layout = watermark_layout(wildcards.benchmark)
    path = watermark_release(wildcards.benchmark, "published.jsonl")
    return json.dumps({**{k: v for k, v in layout.items() if k != "format"}, "format": "jsonl", "path": path},
                      sort_keys=True)


def watermark_fragments(benchmark):
    """The Markdown section of the benchmark's randomized publication, for its aggregate report."""
    return [watermark_file("report.md", benchmark)] if benchmark in watermark_benchmarks() else []


CALIBRATION_ROW_FILES.append(
    lambda benchmark: [watermark_file("calibration_rows.parquet", benchmark)] if benchmark in watermark_benchmarks() else [])


rule watermark_publish:
    input:
        source=watermark_source,
        lexicon=lexicon_file(),
    output:
        published=watermark_release("{benchmark}", "published.jsonl"),
        commitment=watermark_release("{benchmark}", "commitment.json"),
        forms=watermark_release("{benchmark}", "private/forms.parquet"),
        secret=watermark_release("{benchmark}", "private/secret.key"),
    params:
        options=publish_args,
        settings=settings("watermark"),
        seed=config["seed"],
        out_dir=watermark_release("{benchmark}", ""),
    log:
        log_file("watermark_publish", "{benchmark}"),
    benchmark:
        benchmark_file("watermark_publish", "{benchmark}")
    threads: 2
    resources:
        **cpu_job(),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} publish {input.source} {params.out_dir} {params.options} --lexicon {input.lexicon}"
        " --seed-file {output.secret} --secret-from-seed {params.seed} --seed {params.seed} --workers {threads} 2> {log}"


# The release as the testbed's benchmark table (the ingest command, as any benchmark file).
use rule ingest_benchmark as watermark_ingest with:
    input:
        watermark_release("{benchmark}", "published.jsonl"),
    output:
        watermark_release_table(),
    params:
        settings=release_settings,
    log:
        log_file("watermark_ingest", "{benchmark}"),
    benchmark:
        benchmark_file("watermark_ingest", "{benchmark}")


# The target's mix, with the members' published forms in place of their originals.
use rule training_mix as watermark_mix with:
    input:
        **mix_inputs(split_file(), watermark_release_table()),
    output:
        watermark_mix_file(),
    log:
        log_file("watermark_mix", "{benchmark}", "ratio-{ratio}"),
    benchmark:
        benchmark_file("watermark_mix", "{benchmark}", "ratio-{ratio}")


def watermark_checkpoints(wildcards):
    """The watermark run's checkpoints, as training_checkpoints."""
    return checkpoint_dir("train_watermark", wildcards.benchmark, f"ratio-{wildcards.ratio}-seed-{wildcards.seed}")


# Trained exactly as the target (settings, epochs, seed): only the member texts differ.
use rule train_lora as train_watermark with:
    input:
        mix=watermark_mix_file(),
        model=base_model_files(),
    output:
        adapters=[directory(run_adapter(watermark_run("{benchmark}", "{ratio}", "{seed}"), e)) for e in EPOCHS],
        training_log=run_training_log(watermark_run("{benchmark}", "{ratio}", "{seed}")),
    params:
        settings=settings_without(["train"], "text_per_code", "seeds", "learning_rate_selection", "member_order"),
        model=model_settings(),
        seed=training_seed,
        checkpoints=watermark_checkpoints,
    log:
        log_file("train_watermark", "{benchmark}", "ratio-{ratio}-seed-{seed}"),
    benchmark:
        benchmark_file("train_watermark", "{benchmark}", "ratio-{ratio}-seed-{seed}")


rule watermark_test:
    input:
        published=watermark_release("{benchmark}", "published.jsonl"),
        commitment=watermark_release("{benchmark}", "commitment.json"),
        forms=watermark_release("{benchmark}", "private/forms.parquet"),
        secret=watermark_release("{benchmark}", "private/secret.key"),
        model=watermark_tested_model_files,
    output:
        tokens=watermark_test_file("tokens.parquet"),
        ranks=watermark_test_file("ranks.parquet"),
        result=watermark_test_file("result.parquet"),
    wildcard_constraints:
        model=r"reference|(target|sham|twin|wm)-r[0-9.]+-s\d+-e\d+",
    params:
        model=model_settings(),
        adapter=watermark_adapter_args,
        batch=lambda wildcards: f"--batch-size {config['score']['tokens']['batch_size']}"
        + (f" --token-budget {config['score']['tokens']['token_budget']}" if config["score"]["tokens"]["token_budget"] else ""),
        seed=config["seed"],
        release=watermark_release("{benchmark}", ""),
        out_dir=watermark_test_dir(),
    log:
        log_file("watermark_test", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("watermark_test", "{benchmark}", "{model}")
    threads: MODEL_THREADS
    conda:
        MODEL_ENV
    resources:
        **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"]),
    shell:
        "{LEAKTRACE} watermark-test {params.release} --model {params.model:q} {params.adapter} --name {wildcards.model}"
        " {params.batch} --seed {params.seed} --output-dir {params.out_dir} 2> {log}"


def watermark_null_tokens(wildcards):
    return [watermark_test_file("tokens.parquet", wildcards.benchmark, m) for m in watermark_null_models()]


def named_watermark_files(kind):
    """``MODEL=PATH`` arguments of the tested models' files of one kind, in order."""

    def arguments(wildcards, input):
        models = watermark_null_models() if kind == "null_tokens" else watermark_tested_models()
        return " ".join(f"{m}={p}" for m, p in zip(models, input[kind], strict=True))

    return arguments


rule watermark_calibration:
    input:
        null_tokens=watermark_null_tokens,
    output:
        rows=watermark_file("calibration_rows.parquet"),
        counts=watermark_file("null_rank_counts.parquet"),
    params:
        tokens=named_watermark_files("null_tokens"),
        alphas=" ".join(f"{a:g}" for a in WATERMARK["alphas"]),
        draws=WATERMARK["draws"],
        seed=config["seed"],
    log:
        log_file("watermark_calibration", "{benchmark}"),
    benchmark:
        benchmark_file("watermark_calibration", "{benchmark}")
    threads: 1
    resources:
        **cpu_job(),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} watermark-calibration --tokens {params.tokens} --alphas {params.alphas} --draws {params.draws}"
        " --seed {params.seed} --output {output.rows} --counts {output.counts} 2> {log}"


rule watermark_report:
    input:
        results=lambda wildcards: [watermark_test_file("result.parquet", wildcards.benchmark, m) for m in watermark_tested_models()],
        ranks=lambda wildcards: [watermark_test_file("ranks.parquet", wildcards.benchmark, m) for m in watermark_tested_models()],
        calibration=watermark_file("calibration_rows.parquet"),
        counts=watermark_file("null_rank_counts.parquet"),
        commitment=watermark_release("{benchmark}", "commitment.json"),
        p_values=contamination_file("p_values.parquet"),
    output:
        summary=watermark_file("summary.parquet"),
        section=watermark_file("report.md"),
        figure=report(watermark_file("p_values.png"), caption="../report/watermark.rst",
                      category="Randomized publication"),
    params:
        results=named_watermark_files("results"),
        ranks=named_watermark_files("ranks"),
        settings=stage_settings("watermark-report", config),
        out_dir=watermark_dir(),
    log:
        log_file("watermark_report", "{benchmark}"),
    benchmark:
        benchmark_file("watermark_report", "{benchmark}")
    threads: 1
    resources:
        **cpu_job(),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} watermark-report --results {params.results} --ranks {params.ranks} --calibration {input.calibration}"
        " --counts {input.counts} --commitment {input.commitment} --p-values {input.p_values} --settings {params.settings:q}"
        " --output-dir {params.out_dir} 2> {log}"
