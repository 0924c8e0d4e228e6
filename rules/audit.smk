# Audit mode (SrDetection Fig. 2, Table 9): SrDetection's leakage rate of every
# configured model on every configured benchmark, gray-box and black-box, with
# no training, beside its null (the control set contamination.held_out_ids, or
# the chance rate from each sample's variant count) and a p-value, and, given
# control ids, the dataset-level test of each model against them. Testbed
# models reuse the testbed's scores. In every audit, control ids or not, Oren
# et al.'s order test of each benchmark's published order under each model
# (audit_exchangeability): no control set, its p-value exact if that order was random.

from leaktrace.data.runnability import runnability_message


AUDIT_BENCHMARKS = config["audit"]["benchmarks"]
AUDIT_DIR = audit_dir()  # the audit's outputs (in its command, as a global: no param, so no rerun trigger)
AUDIT_CONTROL_IDS = config["contamination"]["held_out_ids"]
SHIFTED = config["audit"]["shifted_controls"]


def _check_audit_config():
    """Before any job: every audited benchmark is configured and can run its
    tests (so can the testbed's and the functional-memorisation sources'),
    and Ref never silently compares a model of the user's with the shipped
    tiny reference model, which was trained for the pipeline's own models
    (those under resources/models/, and the base model)."""
    unknown = [b for b in AUDIT_BENCHMARKS if b not in BENCHMARKS]
    if unknown:
        raise ValueError(f"audit.benchmarks: {', '.join(map(repr, unknown))} not under `benchmarks` "
                         f"(configured: {', '.join(BENCHMARKS)})")
    purposes = {}
    for b in TESTBED_BENCHMARKS:
        purposes.setdefault(b, []).append("the testbed")
    for b in AUDIT_BENCHMARKS if AUDIT_MODELS else []:
        purposes.setdefault(b, []).append("the audit")
    for name, source in COUNTERFACTUAL_SOURCES.items():
        if "benchmark" in source:
            purposes.setdefault(source["benchmark"], []).append(f"functional memorisation ({name})")
    for b, uses in purposes.items():
        error, warning = runnability_message(b, config["benchmarks"][b], " and ".join(dict.fromkeys(uses)))
        if error:
            raise ValueError(error)
        if warning:
            print(f"leaktrace: {warning}", file=sys.stderr)
    if REF_SETTINGS and not REF_SETTINGS["model"] and AUDIT_BENCHMARKS:
        shipped = os.path.realpath(os.path.join(workflow.basedir, "resources", "models")) + os.sep
        foreign = [name for name, spec in AUDIT_MODELS.items() if "path" in spec and fetched(spec["path"]) != BASE_MODEL
                   and not os.path.realpath(spec["path"]).startswith(shipped)]  # the pipeline's own models: their family
        if foreign:
            raise ValueError(f"score.methods.ref: audit model {foreign[0]!r} would be compared with reference_model.path "
                             f"({REFERENCE_MODEL}), a reference trained for the base model, not for it; name Ref's "
                             "reference in score.methods.ref.model (a smaller model of the audited model's family, "
                             "same tokenizer), or leave Ref out (score: {methods: {ref: null}})")
    reference = config["audit"]["reference"].get("model")
    if reference and reference not in AUDIT_MODELS:
        raise ValueError(f"audit.reference.model: {reference!r} is not an audit.models name "
                         f"(configured: {', '.join(AUDIT_MODELS) or 'none'})")
    unknown = [m for m in config["audit"]["negative_controls"] if m not in AUDIT_MODELS]
    if unknown:
        raise ValueError(f"audit.negative_controls: {', '.join(map(repr, unknown))} not audit.models names "
                         f"(configured: {', '.join(AUDIT_MODELS) or 'none'})")
    unknown = [s for s in config["audit"]["training_data"] if not config["leakage"]["scans"].get(s)]
    if unknown:
        raise ValueError(f"audit.training_data: {', '.join(map(repr, unknown))} not leakage.scans names "
                         f"(configured: {', '.join(config['leakage']['scans']) or 'none'})")
    if AUDIT_BENCHMARKS and AUDIT_OWN and not AUDIT_CONTROL_IDS:  # testbed models have the testbed's tests
        print("leaktrace: audit: no control ids (contamination.held_out_ids), so the audit's dataset-level test "
              "is not run", file=sys.stderr)


_check_audit_config()

AUDIT_RELEASES = config["audit"]["releases"]
RELEASE_FILES = ("commitment.json", "private/secret.key", "private/forms.parquet")


def _check_audit_releases():
    """Each release named is an audited benchmark's, read from a local file,
    with what the watermark's test needs (the secret and the forms table are
    the maintainer's: no one else can run it)."""
    for benchmark, release in AUDIT_RELEASES.items():
        where = f"audit.releases.{benchmark}"
        if benchmark not in AUDIT_BENCHMARKS:
            raise ValueError(f"{where}: {benchmark!r} is not in audit.benchmarks ({', '.join(AUDIT_BENCHMARKS) or 'none'})")
        if not config["benchmarks"][benchmark].get("path"):
            raise ValueError(f"{where}: benchmarks.{benchmark} names no file; its path must be the release's published file")
        missing = [name for name in RELEASE_FILES if not os.path.exists(os.path.join(release, name))]
        if missing:
            raise ValueError(f"{where}: {release} lacks {', '.join(missing)}: the watermark's test needs the directory "
                             "`leaktrace publish` wrote, with its private/ part (the secret and the forms table, which "
                             "only the release's maintainer holds)")


_check_audit_releases()


def _check_shifted_controls():
    """The shifted-control experiment's benchmark is audited, and its target
    and the contrast's reference are two audit models."""
    if not SHIFTED.get("benchmark"):
        return
    if SHIFTED["benchmark"] not in AUDIT_BENCHMARKS:
        raise ValueError(f"audit.shifted_controls.benchmark: {SHIFTED['benchmark']!r} is not in audit.benchmarks "
                         f"({', '.join(AUDIT_BENCHMARKS) or 'none'})")
    reference = config["audit"]["reference"].get("model")
    if SHIFTED.get("target") not in AUDIT_MODELS or not reference or reference == SHIFTED.get("target"):
        raise ValueError("audit.shifted_controls.target and audit.reference.model must name two audit.models "
                         f"(configured: {', '.join(AUDIT_MODELS) or 'none'}; target {SHIFTED.get('target')!r}, reference "
                         f"{reference!r})")


_check_shifted_controls()


def audit_scores(wildcards):
    return [scores_file(b, audit_model(name)) for b in AUDIT_BENCHMARKS for name in AUDIT_MODELS]


def audit_arguments(wildcards, input):
    """``MODEL:BENCHMARK=PATH`` arguments, in the order of audit_scores."""
    names = [(name, b) for b in AUDIT_BENCHMARKS for name in AUDIT_MODELS]
    return " ".join(f"{name}:{b}={path}" for (name, b), path in zip(names, input.scores, strict=True))


AUDIT_CONTAMINATION_OUTPUTS = tuple(audit_file(name) for name in ("dataset_inference.parquet", "dataset_inference.md",
                                                                    "verdicts.parquet", "verdicts.md"))
AUDIT_BLIND = audit_file("blind_baseline.parquet")


def audit_inputs(wildcards):
    return {"scores": audit_scores(wildcards),
            "variants": [variants_file(b) for b in AUDIT_BENCHMARKS],
            "held_out": control_ids_digest(),
            "blind": [AUDIT_BLIND] if AUDIT_CONTROL_IDS else []}


def audit_variant_arguments(wildcards, input):
    return " ".join(f"{b}={p}" for b, p in zip(AUDIT_BENCHMARKS, input.variants, strict=True))


AUDIT_EXCHANGEABILITY_OUTPUTS = tuple(audit_file(name) for name in ("exchangeability.parquet", "exchangeability.md"))
AUDIT_EXCHANGEABILITY = config["audit"]["exchangeability"]


def audit_exchangeability_row(benchmark="{benchmark}", model="{model}"):
    """One audited model × benchmark's order test (``model``: the scored name, audit-<name> or a testbed model)."""
    return audit_file(f"exchangeability/{benchmark}/{model}.parquet")


def audit_exchangeability_rows():
    return [audit_exchangeability_row(b, audit_model(name)) for b in AUDIT_BENCHMARKS for name in AUDIT_MODELS]


def audit_name(wildcards):
    """The audit.models name behind a scored model."""
    return next(name for name in AUDIT_MODELS if audit_model(name) == wildcards.model)


AUDIT_WATERMARK_OUTPUTS = tuple(audit_file(name) for name in ("watermark.parquet", "watermark.md"))


def audit_watermark_dir(benchmark="{benchmark}", model="{model}"):
    """The watermark's test of one released benchmark under one audited model (scored name)."""
    return audit_file(f"watermark/{benchmark}/{model}")


def audit_watermark_pairs():
    """(audit name, released benchmark) of every watermark test."""
    return [(name, b) for b in AUDIT_BENCHMARKS if b in AUDIT_RELEASES for name in AUDIT_MODELS]


SHIFTED_OUTPUTS = tuple(audit_file(f"shifted_controls/{name}")
                        for name in ("draws.parquet", "summary.parquet", "report.md", "page.parquet"))


def audit_outputs():
    if not (AUDIT_BENCHMARKS and AUDIT_MODELS):
        return []
    return [str(path) for path in rules.audit.output] \
        + (list(AUDIT_EXCHANGEABILITY_OUTPUTS) if AUDIT_EXCHANGEABILITY["enabled"] else []) \
        + (list(AUDIT_WATERMARK_OUTPUTS) if audit_watermark_pairs() else []) \
        + ([*AUDIT_CONTAMINATION_OUTPUTS, AUDIT_BLIND] if AUDIT_CONTROL_IDS else []) \
        + (list(SHIFTED_OUTPUTS) if SHIFTED.get("benchmark") else [])


rule audit:
    input:
        unpack(audit_inputs),
    output:
        rates=audit_file("leakage_rates.parquet"),
        table=report(audit_file("leakage_rates.md"), caption="../report/audit.rst", category="Audit"),
        heatmap=report(audit_file("heatmap.png"), caption="../report/audit.rst", category="Audit"),
    params:
        scores=audit_arguments,
        variants=audit_variant_arguments,
        held_out=held_out_argument,
        blind=lambda wildcards, input: f"--blind {input.blind[0]}" if input.blind else "",
        settings=stage_settings("audit-tables", config),
    log:
        log_file("audit", "audit"),
    benchmark:
        benchmark_file("audit", "audit")
    threads: 1
    conda:
        CPU_ENV
    resources:
        **cpu_job(),
    shell:
        "{LEAKTRACE} audit-tables --scores {params.scores} --variants {params.variants} {params.held_out} {params.blind}"
        " --settings {params.settings:q} --output-dir {AUDIT_DIR} 2> {log}"


# Oren et al.'s sharded test of the benchmark's published order under one
# audited model: shards and their distinct permutations through the batched
# token scorer (its forward passes, as the testbed's `exchangeability`).
rule audit_exchangeability:
    input:
        benchmark=benchmark_table(),
        model=scored_model_files,
    output:
        audit_exchangeability_row(),
    params:
        settings=stage_settings("audit-exchangeability", config),
        batch=TOKEN_BATCH,
        model=scored_model_settings,
        adapter=adapter_args,
        name=audit_name,
        seed=config["seed"],
    log:
        log_file("audit", "exchangeability", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("audit", "exchangeability", "{benchmark}", "{model}")
    threads: MODEL_THREADS
    conda:
        MODEL_ENV
    resources:
        # n_shards shards, each at most a context long, in their order and n_permutations others
        **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"],
                    sequences=AUDIT_EXCHANGEABILITY["n_shards"] * (1 + AUDIT_EXCHANGEABILITY["n_permutations"])),
    shell:
        "{LEAKTRACE} audit-exchangeability --benchmark {input.benchmark} --benchmark-name {wildcards.benchmark}"
        " --name {params.name} --model {params.model:q} {params.adapter} --settings {params.settings:q}"
        " --batch {params.batch:q} --seed {params.seed} --output {output} 2> {log}"


rule audit_exchangeability_table:
    input:
        audit_exchangeability_rows(),
    output:
        table=AUDIT_EXCHANGEABILITY_OUTPUTS[0],
        report=report(AUDIT_EXCHANGEABILITY_OUTPUTS[1], caption="../report/audit.rst", category="Audit"),
    log:
        log_file("audit", "exchangeability_table"),
    benchmark:
        benchmark_file("audit", "exchangeability_table")
    threads: 1
    resources:
        **cpu_job(),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} audit-exchangeability-table --rows {input} --output {output.table} --report {output.report} 2> {log}"


# The watermark's exact rank test of a benchmark released through `leaktrace
# publish` (audit.releases), under each audited model: the release checked
# against its commitment, every form of every problem scored (rules/watermark.smk's
# watermark_test, for a maintainer's own release).
rule audit_watermark:
    input:
        published=lambda wildcards: config["benchmarks"][wildcards.benchmark]["path"],
        release=lambda wildcards: [os.path.join(AUDIT_RELEASES[wildcards.benchmark], name) for name in RELEASE_FILES],
        model=scored_model_files,
    output:
        tokens=audit_watermark_dir() + "/tokens.parquet",
        ranks=audit_watermark_dir() + "/ranks.parquet",
        result=audit_watermark_dir() + "/result.parquet",
    params:
        release=lambda wildcards: AUDIT_RELEASES[wildcards.benchmark],
        model=scored_model_settings,
        adapter=adapter_args,
        name=audit_name,
        batch=lambda wildcards: f"--batch-size {config['score']['tokens']['batch_size']}"
        + (f" --token-budget {config['score']['tokens']['token_budget']}" if config["score"]["tokens"]["token_budget"] else ""),
        seed=config["seed"],
        out_dir=audit_watermark_dir(),
    log:
        log_file("audit", "watermark", "{benchmark}", "{model}"),
    benchmark:
        benchmark_file("audit", "watermark", "{benchmark}", "{model}")
    threads: MODEL_THREADS
    conda:
        MODEL_ENV
    resources:
        **model_job("forward", batch_size=config["score"]["tokens"]["batch_size"]),
    shell:
        "{LEAKTRACE} watermark-test {params.release} --published {input.published} --model {params.model:q}"
        " {params.adapter} --name {params.name} {params.batch} --seed {params.seed} --output-dir {params.out_dir} 2> {log}"


rule audit_watermark_table:
    input:
        [audit_watermark_dir(b, audit_model(name)) + "/result.parquet" for name, b in audit_watermark_pairs()],
    output:
        table=AUDIT_WATERMARK_OUTPUTS[0],
        report=report(AUDIT_WATERMARK_OUTPUTS[1], caption="../report/audit.rst", category="Audit"),
    params:
        results=lambda wildcards, input: " ".join(
            f"{name}:{b}={path}" for (name, b), path in zip(audit_watermark_pairs(), input, strict=True)),
    log:
        log_file("audit", "watermark_table"),
    benchmark:
        benchmark_file("audit", "watermark_table")
    threads: 1
    resources:
        **cpu_job(),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} audit-watermark-table --results {params.results} --output {output.table}"
        " --report {output.report} 2> {log}"


def audit_ref_model():
    """Ref's reference model, named in the audit's table where Ref is a feature (none: Ref is off)."""
    return (REF_SETTINGS["model"] or REFERENCE_MODEL) if REF_SETTINGS else None


def ingested_audit_benchmarks():
    return [benchmark_table(b) for b in AUDIT_BENCHMARKS]


rule audit_blind:
    input:
        benchmarks=ingested_audit_benchmarks(),
        control_ids=control_ids_digest(),
    output:
        AUDIT_BLIND,
    params:
        benchmarks=lambda wildcards, input: " ".join(f"{b}={p}" for b, p in zip(AUDIT_BENCHMARKS, input.benchmarks, strict=True)),
        settings=stage_settings("audit-blind", config),
        seed=config["seed"],
        control_ids=AUDIT_CONTROL_IDS,
    log:
        log_file("audit", "audit_blind"),
    benchmark:
        benchmark_file("audit", "audit_blind")
    threads: 1
    resources:
        **cpu_job(),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} audit-blind --benchmarks {params.benchmarks} --control-ids {params.control_ids:q}"
        " --settings {params.settings:q} --seed {params.seed} --output {output} 2> {log}"


rule audit_contamination:
    input:
        scores=audit_scores,
        benchmarks=ingested_audit_benchmarks(),
        control_ids=control_ids_digest(),
        blind=AUDIT_BLIND,
    output:
        table=AUDIT_CONTAMINATION_OUTPUTS[0],
        report=report(AUDIT_CONTAMINATION_OUTPUTS[1], caption="../report/audit.rst", category="Audit"),
        verdicts=AUDIT_CONTAMINATION_OUTPUTS[2],
        verdicts_report=report(AUDIT_CONTAMINATION_OUTPUTS[3], caption="../report/audit.rst", category="Audit"),
    params:
        scores=audit_arguments,
        benchmarks=lambda wildcards, input: " ".join(f"{b}={p}" for b, p in zip(AUDIT_BENCHMARKS, input.benchmarks, strict=True)),
        settings=stage_settings("audit-contamination", config),
        seed=config["seed"],
        control_ids=AUDIT_CONTROL_IDS,
        ref_model=f"--ref-model {shlex.quote(audit_ref_model())}" if audit_ref_model() else "",
    log:
        log_file("audit", "audit_contamination"),
    benchmark:
        benchmark_file("audit", "audit_contamination")
    threads: 1
    resources:
        **cpu_job(),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} audit-contamination --scores {params.scores} --benchmarks {params.benchmarks}"
        " --control-ids {params.control_ids:q} --settings {params.settings:q} --seed {params.seed}"
        " --output {output.table} --report {output.report} --blind {input.blind}"
        " --verdicts {output.verdicts} --verdicts-report {output.verdicts_report} {params.ref_model} 2> {log}"


rule shifted_controls:
    input:
        benchmark=lambda wildcards: benchmark_table(SHIFTED["benchmark"]),
        target=lambda wildcards: scores_file(SHIFTED["benchmark"], audit_model(SHIFTED["target"])),
        reference=lambda wildcards: scores_file(SHIFTED["benchmark"], audit_model(config["audit"]["reference"]["model"])),
    output:
        draws=SHIFTED_OUTPUTS[0],
        summary=SHIFTED_OUTPUTS[1],
        report=report(SHIFTED_OUTPUTS[2], caption="../report/audit.rst", category="Audit"),
        page=SHIFTED_OUTPUTS[3],
    params:
        benchmark=SHIFTED.get("benchmark"),
        settings=stage_settings("shifted-controls", config),
        seed=config["seed"],
    log:
        log_file("audit", "shifted_controls"),
    benchmark:
        benchmark_file("audit", "shifted_controls")
    threads: 1
    resources:
        **cpu_job(),
    conda:
        CPU_ENV
    shell:
        "{LEAKTRACE} shifted-controls --benchmark {params.benchmark} --benchmark-table {input.benchmark}"
        " --target {input.target} --reference {input.reference} --settings {params.settings:q} --seed {params.seed}"
        " --output {output.draws} --summary {output.summary} --report {output.report} --page {output.page} 2> {log}"
