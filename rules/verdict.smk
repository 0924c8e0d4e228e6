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


rule verdict:
    input:
        verdict_tables(),
    output:
        md=report(VERDICT, caption="../report/verdict.rst", category=VERDICT_CATEGORY),
        json=verdict_json_file(),
    params:
        settings=stage_settings("verdict", config),
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
        "{LEAKTRACE} verdict --tables {input} --results {RESULTS} --settings {params.settings:q} "
        "--output {output.md} --json-output {output.json} 2> {log}"
