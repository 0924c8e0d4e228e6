rule training_mix:
    input:
        samples=f"{RESULTS}/filter/{{benchmark}}.samples.parquet",
        benchmark=f"{RESULTS}/data/benchmarks/{{benchmark}}.parquet",
        text=corpus_parts(config["train"]["text_corpus"]),
        model=base_model_files(),
    output:
        training_mix("{benchmark}", "{ratio}"),
    params:
        settings=settings_without(["train"], "text_per_code", "epochs"),
        model=model_settings(),
        seed=config["seed"],
    log:
        f"{RESULTS}/logs/training_mix/{{benchmark}}/ratio-{{ratio}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/training_mix/{{benchmark}}/ratio-{{ratio}}.tsv"
    threads: 1
    conda:
        CONDA_ENV
    shell:
        "{LEAKTRACE} mix --samples {input.samples} --benchmark {input.benchmark} --text {input.text}"
        " --text-per-code {wildcards.ratio} --model {params.model:q} --settings {params.settings:q} --seed {params.seed}"
        " --output {output} 2> {log}"


rule train_lora:
    input:
        mix=training_mix("{benchmark}", "{ratio}"),
        model=base_model_files(),
    output:
        adapters=[directory(adapter_dir("{benchmark}", "{ratio}", e)) for e in EPOCHS],
        training_log=f"{RESULTS}/train/{{benchmark}}/ratio-{{ratio}}/training_log.parquet",
    params:
        settings=settings_without(["train"], "text_per_code"),
        model=model_settings(),
        seed=config["seed"],
    log:
        f"{RESULTS}/logs/train_lora/{{benchmark}}/ratio-{{ratio}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train_lora/{{benchmark}}/ratio-{{ratio}}.tsv"
    threads: 2
    conda:
        CONDA_ENV
    resources:
        gpu=1 if config["base_model"]["device"].startswith("cuda") else 0,
        runtime=120,
    shell:
        "{LEAKTRACE} train --mix {input.mix} --model {params.model:q} --settings {params.settings:q} --seed {params.seed}"
        " --adapters {output.adapters} --log {output.training_log} 2> {log}"
