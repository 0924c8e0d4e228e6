# Audit mode (SrDetection Fig. 2, Table 9): SrDetection's leakage rate of every
# configured model on every configured benchmark, gray-box and black-box, with
# no training. Testbed models reuse the testbed's scores.


def audit_scores(wildcards):
    return [f"{RESULTS}/score/{b}/{audit_model(name)}/scores.parquet" for b in config["audit"]["benchmarks"] for name in AUDIT_MODELS]


def audit_arguments(wildcards, input):
    """``MODEL:BENCHMARK=PATH`` arguments, in the order of audit_scores."""
    names = [(name, b) for b in config["audit"]["benchmarks"] for name in AUDIT_MODELS]
    return " ".join(f"{name}:{b}={path}" for (name, b), path in zip(names, input.scores, strict=True))


def audit_outputs():
    if not (config["audit"]["benchmarks"] and AUDIT_MODELS):
        return []
    return [f"{RESULTS}/audit/{name}" for name in ("leakage_rates.parquet", "leakage_rates.md", "heatmap.png")]


rule audit:
    input:
        scores=audit_scores,
    output:
        rates=f"{RESULTS}/audit/leakage_rates.parquet",
        table=report(f"{RESULTS}/audit/leakage_rates.md", caption="../report/audit.rst", category="Audit"),
        heatmap=report(f"{RESULTS}/audit/heatmap.png", caption="../report/audit.rst", category="Audit"),
    params:
        scores=audit_arguments,
    log:
        f"{RESULTS}/logs/audit/audit.log",
    benchmark:
        f"{RESULTS}/benchmarks/audit/audit.tsv"
    threads: 1
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} audit --scores {params.scores} --output-dir {RESULTS}/audit 2> {log}"
