# The complement twin (contamination.twin; rules/train.smk trains it): per
# detector and epoch, the sign-flip test of d = s_seen - s_unseen and the
# AUCs of target, twin and both pooled, from the score tables alone (no
# forward pass: seconds). Its Markdown section joins the aggregate report.


def twin_inputs(wildcards):
    return {
        "samples": split_file(wildcards.benchmark),
        "twins": [scores_file(wildcards.benchmark, m) for m in TWINS],
        "targets": [scores_file(wildcards.benchmark, twin_target(m)) for m in TWINS],
    }


def twin_target(twin):
    """The target a twin complements: same ratio, seed and epoch."""
    return "target-" + twin.removeprefix("twin-")


def twin_arguments(wildcards, input):
    return " ".join(["--twins", *(f"{m}={p}" for m, p in zip(TWINS, input.twins, strict=True)),
                     "--targets", *(f"{twin_target(m)}={p}" for m, p in zip(TWINS, input.targets, strict=True))])


def twin_fragments(benchmark):
    """The twin's Markdown section, for the benchmark's aggregate report (none without a twin)."""
    return [aggregate_file("twin.md", benchmark)] if TWINS else []


def twin_outputs(benchmark):
    return [aggregate_file(name, benchmark) for name in ("twin.parquet", "twin.md", "twin.png")] if TWINS else []


rule twin:
    input:
        unpack(twin_inputs),
    output:
        table=aggregate_file("twin.parquet"),
        section=aggregate_file("twin.md"),
        figure=report(aggregate_file("twin.png"), caption="../report/twin.rst", category="Detection"),
    params:
        settings=stage_settings("twin", config),
        seed=config["seed"],
        models=twin_arguments,
        out_dir=aggregate_dir(),
    log:
        log_file("twin", "{benchmark}"),
    benchmark:
        benchmark_file("twin", "{benchmark}")
    threads: 1
    resources:
        **cpu_job(),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} twin --samples {input.samples} {params.models} --settings {params.settings:q} --seed {params.seed}"
        " --output-dir {params.out_dir} 2> {log}"
