# Rebuilds the shipped base model; not part of `rule all`. Run it explicitly
# with `snakemake --cores 2 pretrain_base_model --forcerun pretrain_base_model`.
# The corpora are `ancient` inputs: regenerating them (new mtimes) never
# triggers a retraining by accident.


rule pretrain_base_model:
    input:
        code=ancient(corpus_parts(config["base_model"]["pretrain"]["code_corpus"])),
        text=ancient(corpus_parts(config["base_model"]["pretrain"]["text_corpus"])),
    output:
        base_model_files(),
        training_log=f"{BASE_MODEL}/pretrain_log.parquet",
    params:
        settings=settings("base_model", "pretrain", "settings"),
        out_dir=BASE_MODEL,
    log:
        f"{RESULTS}/logs/pretrain_base_model.log",
    benchmark:
        f"{RESULTS}/benchmarks/pretrain_base_model.tsv"
    threads: 2
    conda:
        CONDA_ENV
    resources:
        runtime=60,
    shell:
        "{LEAKTRACE} pretrain --code {input.code} --text {input.text} --settings {params.settings:q}"
        " --output-dir {params.out_dir} --log {output.training_log} 2> {log}"
