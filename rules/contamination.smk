# Dataset-level contamination tests (issue 17): a p-value per model and
# benchmark from the score tables alone, its curve over the number of samples,
# and its false-positive rate under nulls the testbed knows to be true. No
# forward pass: seconds on the default config.


def contamination_inputs(wildcards):
    score_dir = f"{RESULTS}/score/{wildcards.benchmark}"
    held_out = config["contamination"]["held_out_ids"]
    return {
        "samples": f"{RESULTS}/filter/{wildcards.benchmark}.samples.parquet",
        "scores": [f"{score_dir}/{m}/scores.parquet" for m in MODELS],
        "held_out": [held_out] if held_out else [],
    }


def held_out_argument(wildcards, input):
    return f"--held-out-ids {input.held_out[0]}" if input.held_out else ""


def contamination_fragments(benchmark):
    """The Markdown section of this benchmark's contamination tests, for its aggregate report."""
    return [f"{RESULTS}/contamination/{benchmark}/report.md"]


rule contamination:
    input:
        unpack(contamination_inputs),
    output:
        p_values=f"{RESULTS}/contamination/{{benchmark}}/p_values.parquet",
        curve=f"{RESULTS}/contamination/{{benchmark}}/p_value_curve.parquet",
        calibration=f"{RESULTS}/contamination/{{benchmark}}/calibration.parquet",
        figure=report(f"{RESULTS}/contamination/{{benchmark}}/p_value_curve.png", caption="../report/p_value_curve.rst",
                      category="Contamination"),
        section=f"{RESULTS}/contamination/{{benchmark}}/report.md",
    params:
        settings=settings("contamination"),
        seed=config["seed"],
        scores=named_inputs("scores"),
        held_out=held_out_argument,
        out_dir=f"{RESULTS}/contamination/{{benchmark}}",
    log:
        f"{RESULTS}/logs/contamination/{{benchmark}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/contamination/{{benchmark}}.tsv"
    threads: 1
    conda:
        CONDA_ENV
    shell:
        "{LEAKTRACE} contamination --samples {input.samples} --scores {params.scores} {params.held_out}"
        " --settings {params.settings:q} --seed {params.seed} --output-dir {params.out_dir} 2> {log}"
