def aggregate_inputs(wildcards):
    score_dir = f"{RESULTS}/score/{wildcards.benchmark}"
    return {
        "fragments": leakage_fragments(wildcards.benchmark) + contamination_fragments(wildcards.benchmark),
        "samples": f"{RESULTS}/filter/{wildcards.benchmark}.samples.parquet",
        "scores": [f"{score_dir}/{m}/scores.parquet" for m in MODELS],
        "tokens": [f"{score_dir}/{m}/tokens.parquet" for m in MODELS],
        "variants": f"{RESULTS}/variants/{wildcards.benchmark}.parquet",
        "similarity": f"{RESULTS}/counterfactual/{wildcards.benchmark}/similarity.parquet",
    }


def aggregate_settings():
    """The aggregate config slice, with SrDetection gray-box's score settings
    (its variant counts) for the null check."""
    methods = config["score"]["methods"]
    return json.dumps({**config["aggregate"], "srdetection_graybox": methods.get("srdetection_graybox")}, sort_keys=True)


def named_inputs(kind):
    """``MODEL=PATH`` arguments for the aggregate command, in MODELS order."""

    def arguments(wildcards, input):
        return " ".join(f"{m}={p}" for m, p in zip(MODELS, input[kind], strict=True))

    return arguments


rule aggregate:
    input:
        unpack(aggregate_inputs),
    output:
        detection=f"{RESULTS}/aggregate/{{benchmark}}/detection.parquet",
        across_seeds=f"{RESULTS}/aggregate/{{benchmark}}/across_seeds.parquet",
        null_check=f"{RESULTS}/aggregate/{{benchmark}}/null_check.parquet",
        perplexity=f"{RESULTS}/aggregate/{{benchmark}}/perplexity.parquet",
        counterfactual=f"{RESULTS}/aggregate/{{benchmark}}/counterfactual.parquet",
        report_md=report(f"{RESULTS}/aggregate/{{benchmark}}/report.md", caption="../report/tables.rst", category="Tables"),
        roc=report(f"{RESULTS}/aggregate/{{benchmark}}/roc.png", caption="../report/roc.rst", category="Detection"),
        roc_reference=report(f"{RESULTS}/aggregate/{{benchmark}}/roc_reference.png", caption="../report/roc_reference.rst",
                             category="Detection"),
        scatter=report(f"{RESULTS}/aggregate/{{benchmark}}/delta_vs_bleu.png", caption="../report/delta_vs_bleu.rst", category="Counterfactual"),
    params:
        settings=aggregate_settings(),
        seed=config["seed"],
        scores=named_inputs("scores"),
        tokens=named_inputs("tokens"),
        out_dir=f"{RESULTS}/aggregate/{{benchmark}}",
    log:
        f"{RESULTS}/logs/aggregate/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/aggregate/{{benchmark}}.tsv"
    threads: 1
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} aggregate --samples {input.samples} --scores {params.scores} --tokens {params.tokens}"
        " --variants {input.variants} --similarity {input.similarity} --fragments {input.fragments} --settings {params.settings:q} --seed {params.seed} --output-dir {params.out_dir}"
        " 2> {log}"
