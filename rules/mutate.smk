# CodeSnitch's robustness study (workflow/leaktrace/stages/mutate.py): clone-type
# mutations of the split's samples, validated in the sandbox; their token
# statistics under each studied model (one more pass of the same scorer, and
# the reference model's for Ref); Settings 1-3, code length and ReCaLL's prefix.

import shlex

from leaktrace.config_slice import slice_from_config
from leaktrace.settings.mutate import RecallParams
from leaktrace.settings.score import TokenBatch

MUTATE = config["mutate"]


def mutate_models():
    """The testbed models the study scores: the configured ones, else the
    headline target (first ratio and training seed, last epoch)."""
    models = MUTATE["models"] or [f"target-r{RATIOS[0]}-s{SEEDS[0]}-e{EPOCHS[-1]}"]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise ValueError(f"mutate.models {unknown} are not testbed models {MODELS}")
    return models


def mutate_outputs():
    if not MUTATE["kinds"]:
        return []
    return [mutation_study_file(name, b, m) for b in TESTBED_BENCHMARKS for m in mutate_models()
            for name in ("study.parquet", "prefix_overlap.parquet", "report.md", "heatmaps.png")]


def mutation_fragments(benchmark):
    """The mutation study's report of each studied model, for the benchmark's aggregate pages."""
    return [mutation_study_file("report.md", benchmark, m) for m in mutate_models()] \
        if MUTATE["kinds"] and benchmark in TESTBED_BENCHMARKS else []


def mutation_recall_args(wildcards):
    if "recall" not in METHODS or wildcards.model == "ref-model":
        return ""
    recall = slice_from_config(RecallParams, config, "score.methods.recall")
    return f"--recall {shlex.quote(json.dumps(recall, sort_keys=True))}"


def mutation_study_inputs(wildcards):
    benchmark, model = wildcards.benchmark, wildcards.model
    inputs = {
        "mutations": mutations_file("mutations.parquet", benchmark),
        "samples": split_file(benchmark),
        "variants": variants_file(benchmark),
        "tokens": tokens_file(benchmark, model),
        "mutated": mutated_tokens_file(benchmark, model),
        "corpus": corpus_parts(MUTATE["ood_corpus"]),
    }
    if "recall" in METHODS:
        inputs["prefixed"] = prefixed_file(benchmark, model)
    if REF_MODEL:
        inputs["reference"] = tokens_file(benchmark, "ref-model")
        inputs["reference_mutated"] = mutated_tokens_file(benchmark, "ref-model")
    return inputs


def mutation_neighbor_args(wildcards):
    """Neighbor reads its neighbours' statistics under the studied model only, never Ref's model."""
    return "--neighbors" if MUTATE["neighbors"] and wildcards.model != "ref-model" else ""


def study_optional_args(wildcards, input):
    flags = {"prefixed": "--prefixed", "reference": "--reference", "reference_mutated": "--reference-mutated"}
    return " ".join(f"{flag} {input[name]}" for name, flag in flags.items() if name in input.keys())


rule mutations:
    input:
        benchmark=benchmark_table(),
        samples=split_file(),
        variants=variants_file(),
        lexicon=lexicon_file(),
    output:
        mutations=mutations_file("mutations.parquet"),
        renames=mutations_file("renames.parquet"),
    params:
        settings=stage_settings("mutations", config),
        seed=config["seed"],
    log:
        log_file("mutations", "{benchmark}"),
    benchmark:
        benchmark_file("mutations", "{benchmark}")
    threads: 2
    resources:
        # sandboxed runs per sample: the original and each mutation
        **cpu_job(sandbox={"samples": 1 + len(MUTATE["kinds"]) + len(MUTATE["t3_targets"])}),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} mutations --benchmark {input.benchmark} --samples {input.samples} --variants {input.variants}"
        " --lexicon {input.lexicon}"
        " --settings {params.settings:q} --seed {params.seed} --workers {threads} --output {output.mutations}"
        " --renames {output.renames} 2> {log}"


rule mutation_tokens:
    input:
        mutations=mutations_file("mutations.parquet"),
        variants=variants_file(),
        samples=split_file(),
        corpus=corpus_parts(MUTATE["ood_corpus"]),
        model=scored_model_files,
    output:
        mutated_tokens_file(),
    params:
        batch=json.dumps(slice_from_config(TokenBatch, config, "score.tokens"), sort_keys=True),
        recall=mutation_recall_args,
        neighbors=mutation_neighbor_args,
        model=scored_model_settings,
        adapter=adapter_args,
        seed=config["seed"],
    log:
        log_file("mutation_tokens", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("mutation_tokens", "{benchmark}", "{model}")
    threads: MODEL_THREADS
    conda:
        MODEL_ENV
    resources:
        **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"], texts=["mutations"]),
    shell:
        "{LEAKTRACE} mutation-tokens --mutations {input.mutations} --variants {input.variants} --samples {input.samples}"
        " --corpus {input.corpus} --model {params.model:q} {params.adapter} {params.recall} {params.neighbors} --batch {params.batch:q}"
        " --seed {params.seed} --output {output} 2> {log}"


rule mutation_study:
    input:
        unpack(mutation_study_inputs),
    output:
        study=mutation_study_file("study.parquet"),
        overlap=mutation_study_file("prefix_overlap.parquet"),
        report_md=report(mutation_study_file("report.md"), caption="../report/mutate.rst", category="Robustness"),
        heatmaps=report(mutation_study_file("heatmaps.png"), caption="../report/mutate.rst", category="Robustness"),
        **({"t2_drop": report(mutation_study_file("t2_drop.png"), caption="../report/mutate.rst",
                              category="Robustness")} if {"T2a", "T2b"} <= set(MUTATE["kinds"]) else {}),
    params:
        settings=stage_settings("mutation-study", config),
        optional=study_optional_args,
        seed=config["seed"],
        out_dir=mutation_study_dir(),
    log:
        log_file("mutation_study", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("mutation_study", "{benchmark}", "{model}")
    threads: 1
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} mutation-study --mutations {input.mutations} --samples {input.samples} --variants {input.variants}"
        " --tokens {input.tokens} --mutated-tokens {input.mutated} {params.optional} --corpus {input.corpus}"
        " --settings {params.settings:q} --seed {params.seed} --output-dir {params.out_dir} 2> {log}"
