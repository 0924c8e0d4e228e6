# Counterfactual generations: every testbed benchmark is a source of its own
# name (its kept samples, the target adapter vs the base model); the
# `counterfactual.sources` block adds named sources: a testbed benchmark with
# models of their own, or functions sampled from a corpus (App. B's filters,
# rule counterfactual_corpus_functions), each with any two models (hub id or
# path, revision, adapter). Outputs: results/<run>/counterfactual/<name>/.


# --- where each counterfactual source's functions, samples and models come from (included
# before rules/variants.smk, which reads the counterfactual models at planning)

def counterfactual_source(name):
    """A counterfactual source's config: a configured one (a benchmark, any
    configured one, or a corpus sample), else the testbed benchmark of that
    name (its split, the testbed's target and base model)."""
    if name in COUNTERFACTUAL_SOURCES:
        return COUNTERFACTUAL_SOURCES[name]
    if name in TESTBED_BENCHMARKS:
        return {"benchmark": name}
    raise ValueError(f"{name!r} is neither a testbed benchmark nor under counterfactual.sources")


def _check_counterfactual_sources():
    for name, source in COUNTERFACTUAL_SOURCES.items():
        if name in BENCHMARKS:
            raise ValueError(f"counterfactual.sources.{name}: the name of a benchmark, which is a source of its own; "
                             "choose another name")
        if "benchmark" in source and source["benchmark"] not in BENCHMARKS:
            raise ValueError(f"counterfactual.sources.{name}: benchmark {source['benchmark']!r} is not under `benchmarks` "
                             f"({', '.join(BENCHMARKS)})")
        if "benchmark" in source and source["benchmark"] not in TESTBED_BENCHMARKS:
            for role in ("target", "reference"):
                if (source.get(role) or config["counterfactual"][role]) is None:
                    raise ValueError(f"counterfactual.sources.{name}: benchmark {source['benchmark']!r} is not a testbed "
                                     f"benchmark, so there is no trained target; set counterfactual.{role} (or the "
                                     f"source's own {role}): a model spec, or the name of an audit.models entry")
        if "corpus" in source:
            if source["corpus"]["kind"] == "training_mix":
                raise ValueError(f"counterfactual.sources.{name}: a training_mix source is the testbed's own data; "
                                 "sample a corpus, or name the benchmark")
            if source["corpus"]["kind"] == "corpus" and source["corpus"]["name"] not in CORPORA:
                raise ValueError(f"counterfactual.sources.{name}: corpus {source['corpus']['name']!r} is not under `corpora`")
            for role in ("target", "reference"):
                if (source.get(role) or config["counterfactual"][role]) is None:
                    raise ValueError(f"counterfactual.sources.{name}: a corpus source has no testbed target; set "
                                     f"counterfactual.{role} (or the source's own {role})")
        counterfactual_models(name)  # a revision on a local directory stops the run here, before the DAG


def counterfactual_functions(name):
    """The functions table a counterfactual source's generations are made
    from: the testbed filter's for a benchmark, the corpus sample's otherwise.
    (The similarity rules read the ground truth from it.)"""
    source = counterfactual_source(name)
    if "benchmark" in source:
        return functions_file(source["benchmark"])
    return counterfactual_file("functions.parquet", name)


def counterfactual_samples(name):
    """The testbed split behind a testbed benchmark source; None for another
    benchmark or a corpus (no member / non-member split)."""
    source = counterfactual_source(name)
    if "benchmark" in source and source["benchmark"] in TESTBED_BENCHMARKS:
        return split_file(source['benchmark'])
    return None


def counterfactual_model_spec(spec, where):
    """A counterfactual model as the config gives it: a spec, or the name of
    an audit.models entry with a path of its own (its spec)."""
    if not isinstance(spec, str):
        return spec
    entry = AUDIT_MODELS.get(spec)
    if entry is None or "path" not in entry:
        own = [n for n, e in AUDIT_MODELS.items() if "path" in e]
        raise ValueError(f"{where}: {spec!r} names no audit.models entry with a path of its own "
                         f"(entries with a path: {', '.join(own) or 'none'})")
    return entry


def counterfactual_models(name):
    """(target, reference): each path (hub ids fetched), dtype, device,
    max_length and, where it has one, adapter; the testbed's pair unless the
    source or the counterfactual block names its own."""
    source = counterfactual_source(name)
    models = []
    for role in ("target", "reference"):
        spec = counterfactual_model_spec(source.get(role) or config["counterfactual"][role], f"counterfactual {name} {role}")
        if spec is None:
            adapter = adapter_dir(source["benchmark"], *counterfactual_target()) if role == "target" else None
            models.append({**BASE_MODEL_CONFIG, **({"adapter": adapter} if adapter else {})})
        else:
            model = {"path": fetched(spec["path"], spec.get("revision")), "dtype": spec.get("dtype", "float32"),
                     "device": spec.get("device", "cpu"), "max_length": spec.get("max_length")}
            models.append({**model, **({"adapter": spec["adapter"]} if spec.get("adapter") else {})})
    return tuple(models)


_check_counterfactual_sources()


def counterfactual_inputs(wildcards):
    """Input function of the counterfactual rule: the functions table, the
    split (benchmark sources), the models' files and adapters."""
    name = wildcards.benchmark
    inputs = {"functions": counterfactual_functions(name)}
    if counterfactual_samples(name):
        inputs["samples"] = counterfactual_samples(name)
    files = []
    for model in counterfactual_models(name):
        files += shipped_model_files(model["path"]) if model["path"] in (BASE_MODEL, REFERENCE_MODEL) \
            else _fetched_files(model["path"]) or local_model_files(model["path"])
        files += [model["adapter"]] if "adapter" in model else []
        files += model_identity_files(model["path"], model.get("adapter"))  # rules/identity.smk
    inputs["models"] = sorted(set(files))
    return inputs


def counterfactual_model_args(wildcards):
    """The counterfactual command's --samples (benchmark sources), --target and --reference."""
    target, reference = counterfactual_models(wildcards.benchmark)
    samples = counterfactual_samples(wildcards.benchmark)
    return " ".join(([f"--samples {samples}"] if samples else [])
                    + [f"--{role} {shlex.quote(json.dumps(model, sort_keys=True))}"
                       for role, model in (("target", target), ("reference", reference))])


def counterfactual_generator_args(wildcards):
    """generator_args(), except that a source with models of its own runs
    them through the `llm.generator` backend, never the role's `model`."""
    source = counterfactual_source(wildcards.benchmark)
    own = any(source.get(role) or config["counterfactual"][role] for role in ("target", "reference"))
    if GENERATOR is None or not own or not GENERATOR.get("model"):
        return generator_args()
    cache = f" --cache-dir {cache_dir()}" if config["llm"]["cache"] else ""
    role = {k: v for k, v in GENERATOR.items() if k not in ("model", "revision", "adapter")}
    return f"--generator {shlex.quote(json.dumps(role, sort_keys=True))}{cache}"


def counterfactual_job_model(wildcards):
    """path/dtype/device of the counterfactual job's target, for its resources."""
    return counterfactual_models(wildcards.benchmark)[0]


def counterfactual_corpus_source(wildcards):
    source = counterfactual_source(wildcards.benchmark)
    if "corpus" not in source:
        raise ValueError(f"counterfactual source {wildcards.benchmark!r} is a benchmark, not a corpus")
    return source


def counterfactual_corpus_inputs(wildcards):
    """Pipeline artifacts a corpus source reads: the ingested corpus's shards (kind corpus)."""
    corpus = counterfactual_corpus_source(wildcards)["corpus"]
    return corpus_parts(corpus["name"]) if corpus["kind"] == "corpus" else []


def counterfactual_corpus_json(wildcards):
    return json.dumps(counterfactual_corpus_source(wildcards)["corpus"], sort_keys=True)


def counterfactual_corpus_input_args(wildcards):
    """The sampling command's --inputs (the ingested corpus shards), if any."""
    inputs = counterfactual_corpus_inputs(wildcards)
    return f"--inputs {' '.join(inputs)}" if inputs else ""


def counterfactual_sampling_settings(wildcards):
    """A corpus source's sampling settings (not its models: a model change never resamples)."""
    source = counterfactual_corpus_source(wildcards)
    return json.dumps({k: v for k, v in source.items() if k not in ("target", "reference", "corpus")}, sort_keys=True)


def counterfactual_outputs():
    """The generations of every configured counterfactual source (the testbed
    benchmarks' are the aggregate's inputs already)."""
    return [counterfactual_file(f"{table}.parquet", name) for name in COUNTERFACTUAL_SOURCES
            for table in ("generations", "similarity")]


# --- the functional-memorization study: each similarity family is a
# rule of its own in rules/counterfactual.smk, which the config switches on
# its own way (the judges with llm.judge), and writes
# counterfactual/{benchmark}/similarity_<family>.parquet; the text family
# (similarity.parquet, of rule counterfactual) is always there. The App. B
# LLM filter's table, where its rule exists, keeps its YES samples and adds
# severity buckets.
SIMILARITY_FAMILY_RULES = {"structural": "counterfactual_structural", "judges": "counterfactual_judges",
                           "execution": "counterfactual_execution"}
LLM_FILTER_RULE = "counterfactual_llm_filter"
FUNCTIONAL_OUTPUTS = ("table1.parquet", "member_difference.parquet", "table2.parquet", "verbatim.parquet", "severity.parquet",
                      "length.parquet", "outcomes.parquet", "correlation.parquet", "report.md", "delta_vs_bleu.png",
                      "target_vs_reference.png", "correlation.png", "length.png")


def similarity_family_files(benchmark):
    """The similarity tables of the family rules this config defines, text
    family first (an input function's helper: every rules file is read by then)."""
    return [counterfactual_file("similarity.parquet", benchmark)] + [
        counterfactual_file(f"similarity_{family}.parquet", benchmark) for family, rule in SIMILARITY_FAMILY_RULES.items()
        if workflow.is_rule(rule)]


def llm_filter_files(benchmark):
    """The App. B filter's table (sample_id, label, severity, reasoning, outcome), where its rule exists."""
    return [counterfactual_file("llm_filter.parquet", benchmark)] if workflow.is_rule(LLM_FILTER_RULE) else []


def functional_outputs(benchmark):
    return [functional_file(name, benchmark) for name in FUNCTIONAL_OUTPUTS]


def functional_fragments(benchmark):
    """The functional-memorization Markdown fragment, for the benchmark's aggregate report."""
    return [functional_file("report.md", benchmark)]


rule counterfactual_corpus_functions:
    input:
        counterfactual_corpus_inputs,
        corpus_digest=counterfactual_corpus_digest,
    output:
        functions=counterfactual_file("functions.parquet"),
        accounting=counterfactual_file("sampling.parquet"),
    params:
        source=counterfactual_corpus_json,
        settings=counterfactual_sampling_settings,
        inputs=counterfactual_corpus_input_args,
        seed=config["seed"],
    log:
        log_file("counterfactual_corpus_functions", "{benchmark}"),
    benchmark:
        benchmark_file("counterfactual_corpus_functions", "{benchmark}")
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        # Online: a huggingface source streams the dataset from the hub.
        "{LEAKTRACE_ONLINE} sample-corpus-functions --name {wildcards.benchmark} --source {params.source:q}"
        " {params.inputs} --settings {params.settings:q} --seed {params.seed}"
        " --functions {output.functions} --accounting {output.accounting} 2> {log}"


rule counterfactual:
    input:
        unpack(counterfactual_inputs),
    output:
        generations=counterfactual_file("generations.parquet"),
        similarity=counterfactual_file("similarity.parquet"),
    params:
        # The generation settings alone: sources and models are inputs and arguments.
        settings=settings_without(("counterfactual",), "sources", "target", "reference"),
        models=counterfactual_model_args,
        generator=counterfactual_generator_args,
    log:
        log_file("counterfactual", "{benchmark}"),
    benchmark:
        benchmark_file("counterfactual", "{benchmark}")
    threads: MODEL_THREADS
    conda:
        MODEL_ENV
    resources:
        # a continuation of each function's context, under each of the two models
        **model_job("forward", batch_size=config["counterfactual"]["batch_size"], texts=["functions"], passes=2,
                    generate=2 * config["counterfactual"]["max_new_tokens"], generator=GENERATOR,
                    model=counterfactual_job_model),
    shell:
        "{LEAKTRACE} counterfactual --functions {input.functions} {params.models}"
        " --settings {params.settings:q} {params.generator}"
        " --generations {output.generations} --similarity {output.similarity} 2> {log}"


rule counterfactual_structural:
    input:
        generations=counterfactual_file("generations.parquet"),
        functions=lambda w: counterfactual_functions(w.benchmark),
    output:
        counterfactual_file("similarity_structural.parquet"),
    params:
        settings=settings("similarity", "structural"),
    log:
        log_file("counterfactual_structural", "{benchmark}"),
    benchmark:
        benchmark_file("counterfactual_structural", "{benchmark}")
    threads: 2
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} counterfactual-structural --generations {input.generations} --functions {input.functions}"
        " --settings {params.settings:q} --processes {threads} --output {output} 2> {log}"


# Execution similarity (HyClone's Stage 2 with LLM-free inputs): sandboxed,
# CPU only, seconds; its own rule so a change to similarity.execution re-runs
# only it. A benchmark source also gives its tests' inputs; a corpus source
# has none. With HyClone's Stage-1 screen configured (llm.judge and the
# hyclone_screen metric) the judges' table gates it: Stage 2 runs on the
# screen's candidates only, as in the paper.
def hyclone_screened():
    return config["llm"]["judge"] is not None and "hyclone_screen" in config["similarity"]["judges"]["metrics"]


def counterfactual_execution_inputs(wildcards):
    name = wildcards.benchmark
    inputs = {"generations": counterfactual_file("generations.parquet", name),
              "functions": counterfactual_functions(name)}
    source = counterfactual_source(name)
    if "benchmark" in source:
        inputs["benchmark"] = benchmark_table(source["benchmark"])
    if hyclone_screened():
        inputs["screen"] = counterfactual_file("similarity_judges.parquet", name)
    return inputs


rule counterfactual_execution:
    input:
        unpack(counterfactual_execution_inputs),
    output:
        counterfactual_file("similarity_execution.parquet"),
    params:
        settings=settings("similarity", "execution"),
        seed=config["seed"],
        benchmark=lambda w, input: f"--benchmark {input.benchmark}" if "benchmark" in input.keys() else "",
        screen=lambda w, input: f"--screen {input.screen}" if "screen" in input.keys() else "",
    log:
        log_file("counterfactual_execution", "{benchmark}"),
    benchmark:
        benchmark_file("counterfactual_execution", "{benchmark}")
    threads: 2
    resources:
        # each generation executed on drawn inputs, many to a sandbox run
        **cpu_job(per_row={"generations": 0.05}),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} counterfactual-execution --generations {input.generations} --functions {input.functions}"
        " {params.benchmark} {params.screen} --settings {params.settings:q} --seed {params.seed}"
        " --workers {threads} --output {output} 2> {log}"


# LLM judges (App. C.1), HyClone's Stage-1 screen (App. C.2) and App. B's LLM
# filter run the llm.judge role: with it null (the default) neither rule exists.
JUDGE = config["llm"]["judge"]
JUDGE_GPU = 1 if JUDGE and on_gpu(JUDGE) else 0
# App. B's filter has a model of its own in the paper (a smaller LLaMA than the judges'):
# similarity.filter.judge, else llm.judge
FILTER_JUDGE = config["similarity"]["filter"]["judge"] or JUDGE


def judge_args(judge=None):
    """The --judge and --cache-dir options of the judging stages (``judge``: another role than llm.judge)."""
    cache = f" --cache-dir {cache_dir()}" if config["llm"]["cache"] else ""
    return f"--judge {shlex.quote(json.dumps(judge or JUDGE, sort_keys=True))}{cache}"


def judge_job(judge=None, **seconds_per_row):
    """Resources of a judging job: sized as a CPU job, plus an estimate of the
    calls' seconds per row of the named inputs (``generations=...``), on the
    GPU partition where the judge (``judge``, else llm.judge) runs here on a GPU."""
    gpu = 1 if (judge or JUDGE) and on_gpu(judge or JUDGE) else 0
    return {**cpu_job(per_row=seconds_per_row), "gpu": gpu, "slurm_partition": _partition(gpu)}


if JUDGE is not None:

    rule counterfactual_judges:
        input:
            generations=counterfactual_file("generations.parquet"),
            functions=lambda w: counterfactual_functions(w.benchmark),
        output:
            similarity=counterfactual_file("similarity_judges.parquet"),
            answers=counterfactual_file("judge_answers.parquet"),
        params:
            settings=settings("similarity", "judges"),
            judge=judge_args(),
        log:
            log_file("counterfactual_judges", "{benchmark}"),
        benchmark:
            benchmark_file("counterfactual_judges", "{benchmark}")
        threads: MODEL_THREADS
        conda:
            MODEL_ENV
        resources:
            **judge_job(generations=2 * len(config["similarity"]["judges"]["metrics"])),
        shell:
            "{LEAKTRACE} counterfactual-judges --generations {input.generations} --functions {input.functions}"
            " --settings {params.settings:q} {params.judge} --output {output.similarity} --answers {output.answers}"
            " 2> {log}"


if FILTER_JUDGE is not None and config["similarity"]["filter"]["enabled"]:

    rule counterfactual_llm_filter:
        input:
            functions=lambda w: counterfactual_functions(w.benchmark),
        output:
            counterfactual_file("llm_filter.parquet"),
        params:
            settings=settings_without(("similarity", "filter"), "judge"),
            judge=judge_args(FILTER_JUDGE),
        log:
            log_file("counterfactual_llm_filter", "{benchmark}"),
        benchmark:
            benchmark_file("counterfactual_llm_filter", "{benchmark}")
        threads: MODEL_THREADS
        conda:
            MODEL_ENV
        resources:
            **judge_job(FILTER_JUDGE, functions=5),  # 8,000 characters of file per call
        shell:
            "{LEAKTRACE} llm-filter --functions {input.functions} --settings {params.settings:q} {params.judge}"
            " --output {output} 2> {log}"
