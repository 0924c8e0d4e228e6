# The aggregate report's family pages beside its summary report.md (report/results.py FAMILIES, calibration added).
AGGREGATE_PAGES = ("detection", "calibration", "functional", "scans", "mutations", "contamination", "watermark")


def aggregate_outputs(benchmark):
    return [aggregate_file(name, benchmark) for name in ("detection.parquet", "perplexity.parquet", "across_seeds.parquet",
                                                         "null_check.parquet", "calibration.parquet", "report.md", "roc.png")] \
        + [aggregate_file(f"{page}.md", benchmark) for page in AGGREGATE_PAGES]


def report_fragments(benchmark):
    """Other stages' Markdown sections by family page of the aggregate report
    (report/results.py FAMILIES): ``{family: [paths]}``."""
    return {"detection": twin_fragments(benchmark) + dose_fragments(benchmark), "scans": leakage_fragments(benchmark),
            "contamination": contamination_fragments(benchmark), "functional": functional_fragments(benchmark),
            "watermark": watermark_fragments(benchmark), "mutations": mutation_fragments(benchmark)}


def fragment_arguments(wildcards, input):
    """``FAMILY=PATH`` of every fragment, for the aggregate command."""
    return " ".join(f"{family}={path}" for family in report_fragments(wildcards.benchmark)
                    for path in input[f"fragments_{family}"])


def aggregate_inputs(wildcards):
    return {
        **{f"fragments_{family}": paths for family, paths in report_fragments(wildcards.benchmark).items()},
        "samples": split_file(wildcards.benchmark),
        "scores": [scores_file(wildcards.benchmark, m) for m in MODELS],
        "tokens": [tokens_file(wildcards.benchmark, m) for m in MODELS],
        "variants": variants_file(wildcards.benchmark),
        "calibration_rows": calibration_row_files(wildcards.benchmark),
        "blind": blind_baseline_file(wildcards.benchmark),
        "blind_scores": blind_scores_file(wildcards.benchmark),
    }


rule testbed_blind:
    input:
        benchmark=benchmark_table(),
        samples=split_file(),
    output:
        table=blind_baseline_file(),
        scores=blind_scores_file(),
    params:
        settings=stage_settings("testbed-blind", config),
        seed=config["seed"],
    log:
        log_file("testbed_blind", "{benchmark}"),
    benchmark:
        benchmark_file("testbed_blind", "{benchmark}")
    threads: 1
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} testbed-blind --benchmark {wildcards.benchmark} --benchmark-table {input.benchmark}"
        " --samples {input.samples} --settings {params.settings:q} --seed {params.seed} --output {output.table}"
        " --scores-output {output.scores} 2> {log}"


def named_inputs(kind):
    """``MODEL=PATH`` arguments for the aggregate command, in MODELS order."""

    def arguments(wildcards, input):
        return " ".join(f"{m}={p}" for m, p in zip(MODELS, input[kind], strict=True))

    return arguments


rule aggregate:
    input:
        unpack(aggregate_inputs),
    output:
        detection=aggregate_file("detection.parquet"),
        across_seeds=aggregate_file("across_seeds.parquet"),
        null_check=aggregate_file("null_check.parquet"),
        perplexity=aggregate_file("perplexity.parquet"),
        calibration=report(aggregate_file("calibration.parquet"), caption="../report/calibration.rst",
                           category="Calibration"),
        report_md=report(aggregate_file("report.md"), caption="../report/tables.rst", category="Tables"),
        **{f"page_{page}": report(aggregate_file(f"{page}.md"), caption="../report/tables.rst",
                                  category="Tables") for page in AGGREGATE_PAGES},
        roc=report(aggregate_file("roc.png"), caption="../report/roc.rst", category="Detection"),
        roc_reference=report(aggregate_file("roc_reference.png"), caption="../report/roc_reference.rst",
                             category="Detection"),
    params:
        settings=stage_settings("aggregate", config),
        seed=config["seed"],
        scores=named_inputs("scores"),
        tokens=named_inputs("tokens"),
        out_dir=aggregate_dir(),
        fragments=fragment_arguments,
    log:
        log_file("aggregate", "{benchmark}"),
    benchmark:
        benchmark_file("aggregate", "{benchmark}")
    threads: 1
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} aggregate --samples {input.samples} --scores {params.scores} --tokens {params.tokens}"
        " --variants {input.variants} --fragments {params.fragments} --calibration-rows {input.calibration_rows}"
        " --blind {input.blind} --blind-scores {input.blind_scores}"
        " --settings {params.settings:q} --seed {params.seed} --output-dir {params.out_dir}"
        " 2> {log}"


def counterfactual_aggregate_inputs(wildcards):
    """The source's similarity tables, its testbed split (none for a corpus
    source: no member / non-member tables), the LLM filter's table (only its
    YES are analysed) and the functions table (App. H's lengths)."""
    samples = counterfactual_samples(wildcards.benchmark)
    return {
        "similarity": similarity_family_files(wildcards.benchmark),
        "samples": [samples] if samples else [],
        "llm_filter": llm_filter_files(wildcards.benchmark),
        "functions": counterfactual_functions(wildcards.benchmark),
    }


def optional_args(wildcards, input):
    return " ".join([f"--samples {path}" for path in input.samples] + [f"--llm-filter {path}" for path in input.llm_filter])


rule counterfactual_aggregate:
    input:
        unpack(counterfactual_aggregate_inputs),
    output:
        **{name.replace(".", "_"): functional_file(name) for name in FUNCTIONAL_OUTPUTS
           if not name.endswith(".png")},
        delta_vs_bleu=report(functional_file("delta_vs_bleu.png"),
                             caption="../report/functional_delta_vs_bleu.rst", category="Counterfactual"),
        target_vs_reference=report(functional_file("target_vs_reference.png"),
                                   caption="../report/functional_target_vs_reference.rst", category="Counterfactual"),
        correlation=report(functional_file("correlation.png"),
                           caption="../report/functional_correlation.rst", category="Counterfactual"),
        length=report(functional_file("length.png"),
                      caption="../report/functional_length.rst", category="Counterfactual"),
    params:
        settings=stage_settings("counterfactual-aggregate", config),
        seed=config["seed"],
        optional=optional_args,
        out_dir=functional_dir(),
    log:
        log_file("counterfactual_aggregate", "{benchmark}"),
    benchmark:
        benchmark_file("counterfactual_aggregate", "{benchmark}")
    threads: 1
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} counterfactual-aggregate --similarity {input.similarity} {params.optional} --functions {input.functions}"
        " --settings {params.settings:q} --seed {params.seed} --output-dir {params.out_dir} 2> {log}"
