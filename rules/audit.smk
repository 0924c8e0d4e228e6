# Audit mode (SrDetection Fig. 2, Table 9): SrDetection's leakage rate of every
# configured model on every configured benchmark, gray-box and black-box, with
# no training, beside its null (the control set contamination.held_out_ids, or
# the chance rate from each sample's variant count) and a p-value. Testbed
# models reuse the testbed's scores.


def audit_scores(wildcards):
    return [f"{RESULTS}/score/{b}/{audit_model(name)}/scores.parquet" for b in config["audit"]["benchmarks"] for name in AUDIT_MODELS]


def audit_arguments(wildcards, input):
    """``MODEL:BENCHMARK=PATH`` arguments, in the order of audit_scores."""
    names = [(name, b) for b in config["audit"]["benchmarks"] for name in AUDIT_MODELS]
    return " ".join(f"{name}:{b}={path}" for (name, b), path in zip(names, input.scores, strict=True))


def audit_inputs(wildcards):
    held_out = config["contamination"]["held_out_ids"]
    return {"scores": audit_scores(wildcards),
            "variants": [f"{RESULTS}/variants/{b}.parquet" for b in config["audit"]["benchmarks"]],
            "held_out": [held_out] if held_out else []}


def audit_variant_arguments(wildcards, input):
    return " ".join(f"{b}={p}" for b, p in zip(config["audit"]["benchmarks"], input.variants, strict=True))


def audit_settings():
    """The decisions' level and the SrDetection detectors' settings (their variant counts)."""
    methods = config["score"]["methods"]
    return json.dumps({"alpha": config["calibration"]["alpha"],
                       "methods": {m: methods[m] for m in ("srdetection_graybox", "srdetection_blackbox") if m in methods}},
                      sort_keys=True)


def audit_outputs():
    if not (config["audit"]["benchmarks"] and AUDIT_MODELS):
        return []
    return [f"{RESULTS}/audit/{name}" for name in ("leakage_rates.parquet", "leakage_rates.md", "heatmap.png")]


rule audit:
    input:
        unpack(audit_inputs),
    output:
        rates=f"{RESULTS}/audit/leakage_rates.parquet",
        table=report(f"{RESULTS}/audit/leakage_rates.md", caption="../report/audit.rst", category="Audit"),
        heatmap=report(f"{RESULTS}/audit/heatmap.png", caption="../report/audit.rst", category="Audit"),
    params:
        scores=audit_arguments,
        variants=audit_variant_arguments,
        held_out=held_out_argument,
        settings=audit_settings(),
    log:
        f"{RESULTS}/logs/audit/audit.log",
    benchmark:
        f"{RESULTS}/benchmarks/audit/audit.tsv"
    threads: 1
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} audit --scores {params.scores} --variants {params.variants} {params.held_out}"
        " --settings {params.settings:q} --output-dir {RESULTS}/audit 2> {log}"
