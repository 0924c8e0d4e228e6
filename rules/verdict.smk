# The verdict page: results/<run>/verdict.md, written by every run
# from the tables its other rules wrote; the HTML report's first category.
# verdict.json beside it holds the same answers for a program (docs/verdict.schema.json).

VERDICT = verdict_file()
VERDICT_CATEGORY = "1. Verdict (start here)"  # the report sorts categories by name: this one comes first


def verdict_tables():
    """The run's final outputs and the testbed tables the verdict reads that
    are no final output (the contamination tests', the watermark summary)."""
    extra = [contamination_file(name, b) for b in TESTBED_BENCHMARKS
             for name in ("p_values.parquet", "calibration.parquet")]
    extra += [watermark_file("summary.parquet", b) for b in TESTBED_BENCHMARKS if b in watermark_benchmarks()]
    extra += [blind_baseline_file(b) for b in TESTBED_BENCHMARKS]  # the headline's blind baseline
    return sorted(set(get_final_output() + extra))


# Each table the verdict reads, by its flag: the path of one benchmark's (or
# scan's) table, or the audit's; the rule passes those among the run's outputs.
VERDICT_BY_BENCHMARK = {
    "detection": lambda b: aggregate_file("detection.parquet", b),
    "seeds": lambda b: aggregate_file("across_seeds.parquet", b),
    "calibration": lambda b: aggregate_file("calibration.parquet", b),
    "null-check": lambda b: aggregate_file("null_check.parquet", b),
    "twin": lambda b: aggregate_file("twin.parquet", b),
    "p-values": lambda b: contamination_file("p_values.parquet", b),
    "contamination-calibration": lambda b: contamination_file("calibration.parquet", b),
    "watermark": lambda b: watermark_file("summary.parquet", b),
    "testbed-blind": blind_baseline_file,
}
VERDICT_AUDIT = {
    "audit-rates": "leakage_rates.parquet",
    "audit-inference": "dataset_inference.parquet",
    "audit-verdicts": "verdicts.parquet",
    "audit-exchangeability": "exchangeability.parquet",
    "audit-watermark": "watermark.parquet",
    "blind": "blind_baseline.parquet",
}


def verdict_arguments(wildcards, input):
    """The verdict's table flags, for the tables among its inputs."""
    made, flags = set(input), []
    for flag, path_of in VERDICT_BY_BENCHMARK.items():
        named = [f"{b}={path_of(b)}" for b in BENCHMARKS if path_of(b) in made]
        flags += [f"--{flag}", *named] if named else []
    scans = [f"{s}={leakage_file('summary.parquet', s)}" for s in LEAKAGE_SCANS if leakage_file("summary.parquet", s) in made]
    flags += ["--scans", *scans] if scans else []
    flags += [f"--{flag} {audit_file(name)}" for flag, name in VERDICT_AUDIT.items() if audit_file(name) in made]
    return " ".join(flags)


rule verdict:
    input:
        verdict_tables(),
    output:
        md=report(VERDICT, caption="../report/verdict.rst", category=VERDICT_CATEGORY),
        json=verdict_json_file(),
    params:
        settings=stage_settings("verdict", config),
        tables=verdict_arguments,
    log:
        log_file("verdict"),
    benchmark:
        benchmark_file("verdict")
    threads: 1
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} verdict {params.tables} --settings {params.settings:q} "
        "--output {output.md} --json-output {output.json} 2> {log}"
