# LessLeak-style near-duplicate scans (workflow/leaktrace/leakage/): index the
# benchmark once, stream every corpus shard through the index as its own job
# (scatter), gather the verified pairs into the summary, the cleaned benchmark
# and, for a scan of the testbed's training mix, recall/precision against the
# member split. The corpus is never indexed.


from leaktrace.config_slice import read_slice, slice_from_config
from leaktrace.settings.leakage import RephraseSettings, ScanSlice

SCANS_CATEGORY = "2. Scans"  # the HTML report's category of the scans' reports (the verdict's is first)
LEAKAGE_OUTPUTS = ("pairs.parquet", "summary.parquet", "sources.parquet", "accounting.parquet", "membership.parquet",
                   "clean.parquet", "report.md")


REPHRASE_OUTPUTS = ("rephrase.parquet", "rephrase.md")


def rephrase_scans():
    """The scans with the rephrase channel on (`leakage.scans.<name>.rephrase.enabled`)."""
    return [name for name, scan in config["leakage"]["scans"].items() if (scan.get("rephrase") or {}).get("enabled")]


def leakage_outputs():
    """The gathered outputs of every configured leakage scan (rules/leakage.smk),
    and of its rephrase channel when on; ``report.md`` and ``rephrase.md`` are
    the Markdown fragments for the aggregate report."""
    return [leakage_file(name, scan) for scan in config["leakage"]["scans"] for name in LEAKAGE_OUTPUTS] + [
        leakage_file(name, scan) for scan in rephrase_scans() for name in REPHRASE_OUTPUTS]


def scanned_benchmarks(scan):
    """The benchmarks a leakage scan reads: its `benchmark`, or its list `benchmarks`."""
    return scan.get("benchmarks") or [scan["benchmark"]]


def leakage_fragments(benchmark):
    """The Markdown fragments of this benchmark's leakage scans (and, on a testbed
    benchmark, their RQ4 against its detectors and, when on, RQ3), for its aggregate report."""
    scans = [name for name, scan in config["leakage"]["scans"].items() if benchmark in scanned_benchmarks(scan)]
    return [leakage_file("report.md", name) for name in scans] + [
        leakage_file("rephrase.md", name) for name in scans if name in rephrase_scans()] + (
        [rq4_file("md", benchmark, name) for name in scans] if benchmark in TESTBED_BENCHMARKS else []) + (
        [rq3_file("md", benchmark, RQ3["scan"])]
        if benchmark in TESTBED_BENCHMARKS and benchmark in rq3_benchmarks() else [])


LEAKAGE_SCANS = config["leakage"]["scans"]
LEAKAGE_CLEAN = config["leakage"]["clean"]


def _check_leakage_config():
    for name, scan in LEAKAGE_SCANS.items():
        for benchmark in scanned_benchmarks(scan):
            if benchmark not in BENCHMARKS:
                raise ValueError(f"leakage scan {name!r}: benchmark {benchmark!r} is not under `benchmarks`")
        if scan["corpus"]["kind"] == "training_mix" and ("benchmark" not in scan or scan["benchmark"] not in TESTBED_BENCHMARKS):
            raise ValueError(f"leakage scan {name!r}: a training-mix scan reads one benchmark the testbed runs on "
                             "(`benchmark`, with benchmarks.<name>.testbed)")
        if scan["corpus"]["kind"] == "corpus" and scan["corpus"]["name"] not in CORPORA:
            raise ValueError(f"leakage scan {name!r}: corpus {scan['corpus']['name']!r} is not under `corpora`")
        from leaktrace.leakage.rephrase import rephrase_settings

        # a bad value stops here, naming the scan
        rephrase_settings(name, read_slice(RephraseSettings, scan["rephrase"], f"leakage.scans.{name}.rephrase"))
    for benchmark, name in LEAKAGE_CLEAN.items():
        if benchmark not in BENCHMARKS:
            raise ValueError(f"leakage.clean: {benchmark!r} is not under `benchmarks`")
        if name not in LEAKAGE_SCANS:
            raise ValueError(f"leakage.clean.{benchmark}: no scan named {name!r} under leakage.scans")
        if scanned_benchmarks(LEAKAGE_SCANS[name]) != [benchmark]:
            raise ValueError(f"leakage.clean.{benchmark}: scan {name!r} scans {scanned_benchmarks(LEAKAGE_SCANS[name])}, "
                             f"not {benchmark!r} alone")
        if LEAKAGE_SCANS[name]["corpus"]["kind"] == "training_mix":
            raise ValueError(f"leakage.clean.{benchmark}: scan {name!r} reads the training mix, which is built from "
                             "the benchmark it would clean (a cycle); clean with a scan of an external corpus")


_check_leakage_config()


wildcard_constraints:
    scan=_alternatives(LEAKAGE_SCANS) if LEAKAGE_SCANS else "(?!)",


def leakage_parts(scan):
    """How many scatter jobs a scan has: the corpus's shards, else its own `shards`."""
    source = LEAKAGE_SCANS[scan]["corpus"]
    if source["kind"] == "corpus":
        return config["corpora"][source["name"]]["shards"]
    return LEAKAGE_SCANS[scan]["shards"]


def leakage_benchmark(wildcards):
    """The benchmarks as ingested (one index, one pass over the corpus for
    all of them); one cleaned for the testbed is read as its raw copy."""
    return [raw_benchmark_table(benchmark) if benchmark in LEAKAGE_CLEAN else benchmark_table(benchmark)
            for benchmark in scanned_benchmarks(LEAKAGE_SCANS[wildcards.scan])]


def leakage_source_inputs(wildcards):
    """Pipeline artifacts a scan shard reads: its ingested corpus shard, or the training mix."""
    scan = LEAKAGE_SCANS[wildcards.scan]
    source = scan["corpus"]
    if source["kind"] == "corpus":
        return [corpus_parts(source["name"])[int(wildcards.part)]]
    if source["kind"] == "training_mix":
        return [training_mix(scan["benchmark"], RATIOS[0])]
    return []


def leakage_n_parts(wildcards):
    return leakage_parts(wildcards.scan)


def leakage_scan_settings(wildcards):
    """The scan's slice (leaktrace/settings/leakage.py), as its commands' --scan-settings."""
    return json.dumps(slice_from_config(ScanSlice, config, f"leakage.scans.{wildcards.scan}"), sort_keys=True)


def leakage_named_benchmarks(wildcards, input):
    """NAME=PATH of each benchmark the scan reads, in its order."""
    return " ".join(f"{b}={p}" for b, p in
                    zip(scanned_benchmarks(LEAKAGE_SCANS[wildcards.scan]), input.benchmark, strict=True))


def leakage_gather_inputs(wildcards):
    n = leakage_parts(wildcards.scan)
    inputs = {
        "index": leakage_file("index.parquet", wildcards.scan),
        "benchmark": leakage_benchmark(wildcards),
        "pairs": [leakage_part("pairs", i, wildcards.scan) for i in range(n)],
        "accounting": [leakage_part("accounting", i, wildcards.scan) for i in range(n)],
    }
    scan = LEAKAGE_SCANS[wildcards.scan]
    if scan["corpus"]["kind"] == "training_mix":
        inputs["samples"] = split_file(scan['benchmark'])
    return inputs


def leakage_samples_arg(wildcards, input):
    return f"--samples {input.samples}" if "samples" in input.keys() else ""


rule leakage_index:
    input:
        leakage_benchmark,
    output:
        leakage_file("index.parquet"),
    params:
        settings=leakage_scan_settings,
    log:
        log_file("leakage_index", "{scan}"),
    benchmark:
        benchmark_file("leakage_index", "{scan}")
    threads: 1
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} leakage-index --scan {wildcards.scan} --benchmark {input} --scan-settings {params.settings:q}"
        " --output {output} 2> {log}"


rule leakage_scan:
    input:
        index=leakage_file("index.parquet"),
        benchmark=leakage_benchmark,
        source=leakage_source_inputs,
        corpus_digest=scan_digest,
    output:
        pairs=leakage_part("pairs"),
        accounting=leakage_part("accounting"),
    params:
        settings=leakage_scan_settings,
        parts=leakage_n_parts,
    log:
        log_file("leakage_scan", "{scan}-{part}"),
    benchmark:
        benchmark_file("leakage_scan", "{scan}-{part}")
    threads: 1
    resources:
        # its share of a corpus it streams, at the preset's measured CPU s per MB (rules/cluster.smk)
        **scan_job(),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE_ONLINE} leakage-scan --scan {wildcards.scan} --index {input.index} --benchmark {input.benchmark}"
        " --scan-settings {params.settings:q} --part {wildcards.part} --parts {params.parts} --input {input.source}"
        " --pairs {output.pairs} --accounting {output.accounting} 2> {log}"


rule leakage_gather:
    input:
        unpack(leakage_gather_inputs),
    output:
        # its report.md in the HTML report's second category, after the verdict
        [report(leakage_file(name), caption="../report/scan.rst", category=SCANS_CATEGORY) if name == "report.md"
         else leakage_file(name) for name in LEAKAGE_OUTPUTS],
    params:
        settings=leakage_scan_settings,
        samples=leakage_samples_arg,
        benchmarks=leakage_named_benchmarks,
        output_dir=leakage_dir(),
    log:
        log_file("leakage_gather", "{scan}"),
    benchmark:
        benchmark_file("leakage_gather", "{scan}")
    threads: 1
    conda:
        leakage_gather_env
    resources:
        # a judge's call per candidate pair (5 s; none without a judge)
        **cpu_job(per_row={"pairs": lambda w: 5 if config["leakage"]["scans"][w.scan].get("judge", {}).get("model") else 0}),
        gpu=leakage_judge_gpu,
        slurm_partition=lambda wildcards: _partition(leakage_judge_gpu(wildcards)),
    shell:
        "{LEAKTRACE_ONLINE} leakage-gather --scan {wildcards.scan} --index {input.index} --benchmark {params.benchmarks}"
        " --pairs {input.pairs} --accounting {input.accounting} --scan-settings {params.settings:q} {params.samples}"
        " --output-dir {params.output_dir} 2> {log}"


# The rephrase channel (`leakage.scans.<name>.rephrase.enabled`; off by
# default): per shard, each benchmark sample's top_k corpus units by embedding
# similarity, after the scan's own shard job (its duplicates are left out);
# then the shards merged and, with a judge, judged (leaktrace/stages/leakage_rephrase.py).
if rephrase_scans():

    rule leakage_rephrase:
        input:
            benchmark=leakage_benchmark,
            source=leakage_source_inputs,
            pairs=leakage_part("pairs"),
            corpus_digest=scan_digest,
        output:
            leakage_part("rephrase"),
        params:
            settings=leakage_scan_settings,
            parts=leakage_n_parts,
        log:
            log_file("leakage_rephrase", "{scan}-{part}"),
        benchmark:
            benchmark_file("leakage_rephrase", "{scan}-{part}")
        threads: 1
        wildcard_constraints:
            scan=_alternatives(rephrase_scans()),
        conda:
            leakage_rephrase_env
        resources:
            **cpu_job(tokenize=["benchmark"]),
            gpu=leakage_rephrase_gpu,
            slurm_partition=lambda wildcards: _partition(leakage_rephrase_gpu(wildcards)),
        shell:
            "{LEAKTRACE_ONLINE} leakage-rephrase --scan {wildcards.scan} --benchmark {input.benchmark}"
            " --scan-settings {params.settings:q} --part {wildcards.part} --parts {params.parts} --input {input.source}"
            " --pairs {input.pairs} --output {output} 2> {log}"

    rule leakage_rephrase_gather:
        input:
            benchmark=leakage_benchmark,
            parts=lambda wildcards: [leakage_part("rephrase", i, wildcards.scan)
                                     for i in range(leakage_parts(wildcards.scan))],
        output:
            table=leakage_file("rephrase.parquet"),
            markdown=leakage_file("rephrase.md"),
        params:
            settings=leakage_scan_settings,
        log:
            log_file("leakage_rephrase_gather", "{scan}"),
        benchmark:
            benchmark_file("leakage_rephrase_gather", "{scan}")
        threads: 1
        wildcard_constraints:
            scan=_alternatives(rephrase_scans()),
        conda:
            leakage_rephrase_gather_env
        resources:
            # a judge's call per candidate (5 s; none without a judge)
            **cpu_job(per_row={"parts": lambda w: 5 if leakage_rephrase_judged(w) else 0}),
            gpu=leakage_rephrase_judge_gpu,
            slurm_partition=lambda wildcards: _partition(leakage_rephrase_judge_gpu(wildcards)),
        shell:
            "{LEAKTRACE_ONLINE} leakage-rephrase-gather --scan {wildcards.scan} --benchmark {input.benchmark}"
            " --parts {input.parts} --scan-settings {params.settings:q} --output {output.table}"
            " --markdown {output.markdown} 2> {log}"


# `leakage.clean: {benchmark: scan}`: the testbed reads the scan's cleaned
# benchmark at the ingested benchmark's path; the scan itself reads a raw copy.
if LEAKAGE_CLEAN:

    def cleaned_benchmark(wildcards):
        return leakage_file("clean.parquet", LEAKAGE_CLEAN[wildcards.benchmark])

    rule ingest_benchmark_raw:
        input:
            benchmark_digest,
        output:
            raw_benchmark_table(),
        params:
            settings=benchmark_settings,
        log:
            log_file("ingest_benchmark_raw", "{benchmark}"),
        benchmark:
            benchmark_file("ingest_benchmark_raw", "{benchmark}")
        threads: 1
        conda:
            CPU_ENV
        wildcard_constraints:
            benchmark=_alternatives(LEAKAGE_CLEAN),
        resources:
            **cpu_job(),
        shell:
            "{LEAKTRACE} ingest-benchmark --name {wildcards.benchmark} --settings {params.settings:q} --output {output} 2> {log}"

    rule clean_benchmark:
        input:
            cleaned_benchmark,
        output:
            benchmark_table(),
        log:
            log_file("clean_benchmark", "{benchmark}"),
        benchmark:
            benchmark_file("clean_benchmark", "{benchmark}")
        threads: 1
        conda:
            CPU_ENV
        wildcard_constraints:
            benchmark=_alternatives(LEAKAGE_CLEAN),
        resources:
            **cpu_job(),
        shell:
            "cp {input} {output} 2> {log}"

    ruleorder: clean_benchmark > ingest_benchmark


# LessLeak's RQ4: each scan's verified labels as the ground truth of every
# gray-box detector the testbed scored on a scanned testbed benchmark (seconds;
# its Markdown joins the benchmark's aggregate report).
rule leakage_rq4:
    input:
        pairs=leakage_file("pairs.parquet"),
        samples=split_file(),
        scores=[scores_file(model=m) for m in MODELS],
    output:
        table=rq4_file("parquet"),
        markdown=rq4_file("md"),
    params:
        settings=stage_settings("leakage-rq4", config),
        seed=config["seed"],
        scores=lambda wildcards, input: " ".join(f"{m}={p}" for m, p in zip(MODELS, input.scores, strict=True)),
    log:
        log_file("leakage_rq4", "{scan}-{benchmark}"),
    benchmark:
        benchmark_file("leakage_rq4", "{scan}-{benchmark}")
    threads: 1
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} leakage-rq4 --scan {wildcards.scan} --benchmark {wildcards.benchmark} --pairs {input.pairs}"
        " --samples {input.samples} --scores {params.scores} --settings {params.settings:q} --seed {params.seed}"
        " --output {output.table} --markdown {output.markdown} 2> {log}"


# LessLeak's RQ4 as the paper runs it (`leakage.rq4.ranking`, on where it names
# a scan): every sample the scan labelled, pooled over its benchmarks, scored
# by each of `models` (perplexity, one job a model), then deduplicated,
# balanced to `size` and ranked by ascending perplexity: the share leaked in
# the top k (rule leakage_rq4_ranking). Needs no testbed.
RQ4_RANKING = config["leakage"]["rq4"]["ranking"]


def rq4_ranking_models():
    """The models the ranking scores ([] when it is off)."""
    if RQ4_RANKING["scan"] is None:
        return []
    if RQ4_RANKING["scan"] not in LEAKAGE_SCANS:
        raise ValueError(f"leakage.rq4.ranking.scan: no scan named {RQ4_RANKING['scan']!r} under leakage.scans")
    models = RQ4_RANKING["models"]
    unknown = [m for m in models if m not in MODELS and m not in AUDIT_OWN]
    if not models or unknown:
        raise ValueError(f"leakage.rq4.ranking.models: {unknown or 'none'} given; name testbed models ({MODELS}) or audit "
                         f"models with a path of their own ({sorted(AUDIT_OWN)})")
    return list(models)


def rq4_ranking_outputs():
    if not rq4_ranking_models():
        return []
    return [rq4_ranking_file("md", RQ4_RANKING["scan"])]


if rq4_ranking_models():

    rule leakage_rq4_perplexity:
        input:
            benchmarks=leakage_benchmark,
            model=scored_model_files,
        output:
            rq4_perplexity_file(),
        params:
            benchmarks=lambda wildcards, input: " ".join(
                f"{b}={p}" for b, p in zip(scanned_benchmarks(LEAKAGE_SCANS[wildcards.scan]), input.benchmarks, strict=True)),
            batch=TOKEN_BATCH,
            model=scored_model_settings,
            adapter=adapter_args,
        log:
            log_file("leakage_rq4_perplexity", "{scan}", "{model}"),
        benchmark:
            benchmark_file("leakage_rq4_perplexity", "{scan}", "{model}")
        threads: MODEL_THREADS
        conda:
            MODEL_ENV
        resources:
            **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"], texts=["benchmarks"]),
        shell:
            "{LEAKTRACE} leakage-rq4-perplexity --benchmarks {params.benchmarks} --model {params.model:q} {params.adapter}"
            " --name {wildcards.model} --batch {params.batch:q} --output {output} 2> {log}"

    rule leakage_rq4_ranking:
        input:
            pairs=leakage_file("pairs.parquet"),
            perplexity=[rq4_perplexity_file(m) for m in rq4_ranking_models()],
        output:
            table=rq4_ranking_file("parquet"),
            markdown=rq4_ranking_file("md"),
        params:
            settings=stage_settings("leakage-rq4-ranking", config),
            benchmarks=lambda wildcards: " ".join(scanned_benchmarks(LEAKAGE_SCANS[wildcards.scan])),
            perplexity=lambda wildcards, input: " ".join(
                f"{m}={p}" for m, p in zip(rq4_ranking_models(), input.perplexity, strict=True)),
            seed=config["seed"],
        log:
            log_file("leakage_rq4_ranking", "{scan}"),
        benchmark:
            benchmark_file("leakage_rq4_ranking", "{scan}")
        threads: 1
        conda:
            CPU_ENV
        resources:
            **cpu_job(),
        shell:
            "{LEAKTRACE} leakage-rq4-ranking --scan {wildcards.scan} --pairs {input.pairs} --benchmarks {params.benchmarks}"
            " --perplexity {params.perplexity} --settings {params.settings:q} --seed {params.seed}"
            " --output {output.table} --markdown {output.markdown} 2> {log}"


# LessLeak's RQ3 (`leakage.rq3.enabled`, a switch of its own: it generates n
# completions a problem and model): pass@k of testbed (or audit) models on the
# leaked and the non-leaked part of each benchmark of `leakage.rq3.benchmarks`
# (default: each testbed benchmark) the scan `leakage.rq3.scan` reads, every
# completion run against the problem's tests in the sandbox.
RQ3 = config["leakage"]["rq3"]
RQ3_MODELS = RQ3["models"] or ["reference", f"target-r{RATIOS[0]}-s{SEEDS[0]}-e{EPOCHS[-1]}"]


def rq3_benchmarks():
    """The benchmarks RQ3 runs on ([] when it is off, or when it names none and
    nothing is in the testbed, as in the scan-only experiment files)."""
    if not RQ3["enabled"] or (RQ3["benchmarks"] is None and not TESTBED_BENCHMARKS):
        return []
    if RQ3["scan"] not in LEAKAGE_SCANS:
        raise ValueError(f"leakage.rq3.scan: no scan named {RQ3['scan']!r} under leakage.scans")
    unknown = [m for m in RQ3_MODELS if m not in MODELS and m not in AUDIT_OWN]
    if unknown:
        raise ValueError(f"leakage.rq3.models: {unknown} are neither testbed models ({MODELS}) nor audit models with "
                         f"a path of their own ({sorted(AUDIT_OWN)})")
    scanned = scanned_benchmarks(LEAKAGE_SCANS[RQ3["scan"]])
    if RQ3["benchmarks"] is None:
        return [b for b in scanned if b in TESTBED_BENCHMARKS]
    missing = [b for b in RQ3["benchmarks"] if b not in scanned]
    if missing:
        raise ValueError(f"leakage.rq3.benchmarks: {missing} are not read by scan {RQ3['scan']!r} ({scanned})")
    return list(RQ3["benchmarks"])


def rq3_outputs():
    """RQ3's tables of the benchmarks outside the testbed (a testbed benchmark's join its aggregate report)."""
    return [rq3_file("md", b, RQ3["scan"]) for b in rq3_benchmarks() if b not in TESTBED_BENCHMARKS]


if rq3_benchmarks():

    rule leakage_rq3_runs:
        input:
            benchmark=benchmark_table(),
            model=scored_model_files,
        output:
            rq3_runs_file(),
        params:
            settings=stage_settings("leakage-rq3-runs", config),
            batch=TOKEN_BATCH,
            model=scored_model_settings,
            adapter=adapter_args,
            generator=generator_args(),
            seed=config["seed"],
        log:
            log_file("leakage_rq3_runs", "{benchmark}", "{model}"),
        benchmark:
            benchmark_file("leakage_rq3_runs", "{benchmark}", "{model}")
        threads: MODEL_THREADS
        conda:
            MODEL_ENV
        resources:
            **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"], generate=RQ3["n"] * RQ3["max_new_tokens"],
                        generator=GENERATOR, texts=["benchmark"], sandbox={"benchmark": RQ3["n"]}),
        shell:
            "{LEAKTRACE} leakage-rq3-runs --benchmark {input.benchmark} --model {params.model:q} {params.adapter}"
            " --name {wildcards.model} {params.generator} --settings {params.settings:q} --batch {params.batch:q}"
            " --seed {params.seed} --output {output} 2> {log}"

    rule leakage_rq3:
        input:
            pairs=leakage_file("pairs.parquet"),
            runs=[rq3_runs_file(model=m) for m in RQ3_MODELS],
        output:
            table=rq3_file("parquet"),
            markdown=rq3_file("md"),
        params:
            settings=stage_settings("leakage-rq3", config),
            seed=config["seed"],
            runs=lambda wildcards, input: " ".join(f"{m}={p}" for m, p in zip(RQ3_MODELS, input.runs, strict=True)),
        log:
            log_file("leakage_rq3", "{scan}-{benchmark}"),
        benchmark:
            benchmark_file("leakage_rq3", "{scan}-{benchmark}")
        threads: 1
        conda:
            CPU_ENV
        resources:
            **cpu_job(),
        shell:
            "{LEAKTRACE} leakage-rq3 --scan {wildcards.scan} --benchmark {wildcards.benchmark} --pairs {input.pairs}"
            " --runs {params.runs} --settings {params.settings:q} --seed {params.seed} --output {output.table}"
            " --markdown {output.markdown} 2> {log}"
