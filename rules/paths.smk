# Where every artifact of a run lives (results/<run>/...): one function per
# artifact, named by what it is, so that no path is spelled twice. A rule's
# output calls the function with its wildcard patterns (`scores_file("{benchmark}",
# "{model}")`), every reader with the values; each log and benchmark file is
# log_file / benchmark_file of the rule's name. Included right after
# rules/common.smk (RESULTS), before every rule file.


def in_results(path):
    """Whether a path is one of this run's artifacts (under results/<run>/)."""
    return str(path).startswith(f"{RESULTS}/")


# --- job records and scratch directories


def log_file(*parts):
    """A job's log: ``log_file("twin", "{benchmark}")`` is results/<run>/logs/twin/{benchmark}.log."""
    return f"{RESULTS}/logs/{'/'.join(parts)}.log"


def benchmark_file(*parts):
    """A job's Snakemake benchmark record, beside its log under results/<run>/benchmarks/."""
    return f"{RESULTS}/benchmarks/{'/'.join(parts)}.tsv"


def checkpoint_dir(*parts):
    """A LoRA run's checkpoints (not an output: a killed run resumes from them)."""
    return f"{RESULTS}/checkpoints/{'/'.join(parts)}"


def cache_dir():
    """The LLM backends' answer cache (llm.cache)."""
    return f"{RESULTS}/cache"


def model_identity_path(key):
    """A configured model's identity file (rules/identity.smk)."""
    return f"{RESULTS}/models/{key}.identity.json"


def input_digest_path(kind="{kind}", name="{name}"):
    """A content-tracked input's digest file (rules/inputs.smk): ``kind`` the config
    collection (benchmarks, corpora, scans, counterfactual, contamination), ``name`` its key."""
    return f"{RESULTS}/inputs/{kind}/{name}.json"


# --- ingested data


def benchmark_table(benchmark="{benchmark}"):
    """A benchmark as ingested (or, under leakage.clean, as cleaned): the testbed's input."""
    return f"{RESULTS}/data/benchmarks/{benchmark}.parquet"


def raw_benchmark_table(benchmark="{benchmark}"):
    """A benchmark as ingested before leakage.clean cleans it (its scan reads this copy)."""
    return f"{RESULTS}/data/benchmarks/{benchmark}.raw.parquet"


def corpus_part(corpus="{corpus}", part="{part}"):
    """One ingested shard of a corpus."""
    return f"{RESULTS}/data/corpora/{corpus}/part-{part}.parquet"


def corpus_parts(corpus):
    """Every ingested shard of a configured corpus."""
    if corpus not in config["corpora"]:
        raise ValueError(f"config names corpus {corpus!r}, which is not under `corpora`")
    return [corpus_part(corpus, i) for i in range(config["corpora"][corpus]["shards"])]


# --- filter, split, variants


def functions_file(benchmark="{benchmark}"):
    """The benchmark's functions that pass the filter (filter_functions)."""
    return f"{RESULTS}/filter/{benchmark}.functions.parquet"


def split_file(benchmark="{benchmark}"):
    """The testbed's split (``split_samples``): members, non-members, folds and
    the pre-exposure flag; the default is the rule wildcard."""
    return f"{RESULTS}/filter/{benchmark}.samples.parquet"


def twin_split_file(benchmark="{benchmark}"):
    """The split as the complement twin sees it: members and non-members swapped."""
    return f"{RESULTS}/filter/{benchmark}.twin.samples.parquet"


def lexicon_file():
    """The identifier lexicon the variants and mutations rename from."""
    return f"{RESULTS}/variants/lexicon.parquet"


def variants_file(benchmark="{benchmark}"):
    """The originals and their detector variants."""
    return f"{RESULTS}/variants/{benchmark}.parquet"


def variant_pool_file(benchmark="{benchmark}"):
    """The drawn pool the naturalness-matched variants are chosen from (variants.natural)."""
    return f"{RESULTS}/variants/{benchmark}.pool.parquet"


# --- training runs (the target's, the controls', the watermark targets', the dose arms')


def run_adapter(run, epoch):
    """The adapter a LoRA run saves after ``epoch``."""
    return f"{run}/adapter/epoch-{epoch}"


def run_training_log(run):
    """A LoRA run's training log."""
    return f"{run}/training_log.parquet"


def training_mix(benchmark, ratio):
    """The target's training mix at one mixing ratio."""
    return f"{RESULTS}/train/{benchmark}/ratio-{ratio}/mix.parquet"


def training_run(benchmark, ratio, seed):
    """The directory of one LoRA run: a mixing ratio and a training seed."""
    return f"{RESULTS}/train/{benchmark}/ratio-{ratio}/seed-{seed}"


def adapter_dir(benchmark, ratio, seed, epoch):
    return run_adapter(training_run(benchmark, ratio, seed), epoch)


def learning_rate_file(benchmark="{benchmark}"):
    """The learning-rate selection's table (make select-lr)."""
    return f"{RESULTS}/train/{benchmark}/learning_rate.parquet"


def control_mix_file(control, benchmark, ratio):
    """A control's training mix (``control``: sham or twin)."""
    return f"{RESULTS}/train/{benchmark}/{control}/ratio-{ratio}/mix.parquet"


def control_run(control, benchmark, ratio, seed):
    return f"{RESULTS}/train/{benchmark}/{control}/ratio-{ratio}/seed-{seed}"


def control_adapter_dir(control, benchmark, ratio, seed, epoch):
    return run_adapter(control_run(control, benchmark, ratio, seed), epoch)


def watermark_mix_file(benchmark="{benchmark}", ratio="{ratio}"):
    """The target's mix with the members' published forms (rules/watermark.smk)."""
    return f"{RESULTS}/train/{benchmark}/watermark/ratio-{ratio}/mix.parquet"


def watermark_run(benchmark, ratio, seed):
    return f"{RESULTS}/train/{benchmark}/watermark/ratio-{ratio}/seed-{seed}"


def dose_mix_file(arm, benchmark, ratio, copies):
    return f"{RESULTS}/train/{benchmark}/dose/{arm}/ratio-{ratio}/copies-{copies}/mix.parquet"


def dose_run(arm, benchmark, ratio, copies, seed="{seed}"):
    return f"{RESULTS}/train/{benchmark}/dose/{arm}/ratio-{ratio}/copies-{copies}/seed-{seed}"


# --- scoring (rules/score.smk, rules/dpdllm_veilprobe.smk)


def scored_dir(benchmark="{benchmark}", model="{model}"):
    """The folder of one scored model's tables."""
    return f"{RESULTS}/score/{benchmark}/{model}"


def tokens_file(benchmark="{benchmark}", model="{model}"):
    """A model's token statistics of every original and variant (one forward pass)."""
    return f"{scored_dir(benchmark, model)}/tokens.parquet"


def scores_file(benchmark="{benchmark}", model="{model}"):
    """A model's detector scores (rules/score.smk, detector_scores)."""
    return f"{scored_dir(benchmark, model)}/scores.parquet"


def prefixed_file(benchmark="{benchmark}", model="{model}"):
    """ReCaLL's pass: every original after the non-member prefix."""
    return f"{scored_dir(benchmark, model)}/prefixed.parquet"


def blackbox_file(benchmark="{benchmark}", model="{model}"):
    """SrDetection black-box's greedy continuations."""
    return f"{scored_dir(benchmark, model)}/blackbox.parquet"


def learned_file(family, name, benchmark="{benchmark}", model="{model}"):
    """A learned baseline's (dpdllm, veilprobe) file of one scored model: generations.parquet,
    features.parquet, scores.parquet, classifier, mapping."""
    return f"{scored_dir(benchmark, model)}/{family}/{name}"


def token_counts_file(corpus="{corpus}"):
    """DC-PDD's token counts of a corpus under the base model's tokenizer."""
    return f"{RESULTS}/score/token_counts/{corpus}.parquet"


def baselines_file(name, benchmark="{benchmark}"):
    """A learned baseline's per-benchmark file: dpdllm-reference (a folder), veilprobe_perturbed.parquet."""
    return f"{RESULTS}/score/{benchmark}/baselines/{name}"


# --- calibration, contamination, twin, aggregate


def conformal_file(benchmark="{benchmark}", model="{model}"):
    """A model's conformal calibration rows."""
    return f"{RESULTS}/calibration/{benchmark}/conformal/{model}.parquet"


def membership_calibration_file(benchmark="{benchmark}", model="{model}"):
    """Dataset inference's calibration rows under an unexposed model."""
    return f"{RESULTS}/calibration/{benchmark}/dataset_inference/{model}.parquet"


def blind_baseline_file(benchmark="{benchmark}"):
    """The testbed's blind baseline: its table row."""
    return f"{RESULTS}/calibration/{benchmark}/blind_baseline.parquet"


def blind_scores_file(benchmark="{benchmark}"):
    """The testbed's blind baseline: its out-of-fold scores."""
    return f"{RESULTS}/calibration/{benchmark}/blind_scores.parquet"


def contamination_dir(benchmark="{benchmark}"):
    return f"{RESULTS}/contamination/{benchmark}"


def contamination_file(name, benchmark="{benchmark}"):
    """A table of the dataset-level tests: p_values.parquet, p_value_curve.{parquet,png},
    calibration.parquet, calibration_rows.parquet, report.md."""
    return f"{contamination_dir(benchmark)}/{name}"


def exchangeability_file(benchmark="{benchmark}", model="{model}"):
    """Oren et al.'s sharded test under one model."""
    return f"{contamination_dir(benchmark)}/exchangeability/{model}.parquet"


def exchangeability_calibration_file(benchmark="{benchmark}", model="{model}"):
    """The sharded test on seeded random orders under one model (its false-positive rate)."""
    return f"{contamination_dir(benchmark)}/exchangeability/calibration/{model}.parquet"


def aggregate_dir(benchmark="{benchmark}"):
    return f"{RESULTS}/aggregate/{benchmark}"


def aggregate_file(name, benchmark="{benchmark}"):
    """A file of a benchmark's aggregate report (its tables, pages, figures; the twin's and the dose's)."""
    return f"{aggregate_dir(benchmark)}/{name}"


def functional_dir(benchmark="{benchmark}"):
    return f"{aggregate_dir(benchmark)}/functional"


def functional_file(name, benchmark="{benchmark}"):
    """A file of the functional-memorization study's aggregate (FUNCTIONAL_OUTPUTS)."""
    return f"{functional_dir(benchmark)}/{name}"


# --- counterfactual sources (rules/counterfactual.smk)


def counterfactual_file(name, source="{benchmark}"):
    """A file of a counterfactual source: generations.parquet, similarity.parquet,
    similarity_<family>.parquet, judge_answers.parquet, llm_filter.parquet, and for
    a corpus source functions.parquet and sampling.parquet."""
    return f"{RESULTS}/counterfactual/{source}/{name}"


# --- mutation study (rules/mutate.smk)


def mutate_dir(benchmark="{benchmark}"):
    return f"{RESULTS}/mutate/{benchmark}"


def mutations_file(name, benchmark="{benchmark}"):
    """The mutations of the split's samples: mutations.parquet, renames.parquet."""
    return f"{mutate_dir(benchmark)}/{name}"


def mutation_study_dir(benchmark="{benchmark}", model="{model}"):
    """One studied model's folder: the study's tables, report and figures (report.md, ...)."""
    return f"{mutate_dir(benchmark)}/{model}"


def mutation_study_file(name, benchmark="{benchmark}", model="{model}"):
    """A file of the study of one model: study.parquet, prefix_overlap.parquet, report.md, heatmaps.png, t2_drop.png."""
    return f"{mutation_study_dir(benchmark, model)}/{name}"


def mutated_tokens_file(benchmark="{benchmark}", model="{model}"):
    """The mutations' token statistics under one studied model."""
    return f"{mutation_study_dir(benchmark, model)}/tokens.parquet"


# --- leakage scans (rules/leakage.smk)


def leakage_dir(scan="{scan}"):
    return f"{RESULTS}/leakage/{scan}"


def leakage_file(name, scan="{scan}"):
    """A scan's file: index.parquet, its gathered outputs (LEAKAGE_OUTPUTS, REPHRASE_OUTPUTS),
    parts/<kind>-<part>.parquet, rq4/..., rq3/..."""
    return f"{leakage_dir(scan)}/{name}"


def leakage_part(kind, part="{part}", scan="{scan}"):
    """A scan's shard file: pairs, accounting or rephrase, of one part of the corpus."""
    return leakage_file(f"parts/{kind}-{part}.parquet", scan)


def rq4_file(ext, benchmark="{benchmark}", scan="{scan}"):
    """LessLeak RQ4 of a scan against a testbed benchmark's detectors: its table (parquet) or section (md)."""
    return leakage_file(f"rq4/{benchmark}.{ext}", scan)


def rq4_ranking_file(ext, scan="{scan}"):
    """LessLeak RQ4 as the paper runs it (leakage.rq4.ranking): its table or section."""
    return leakage_file(f"rq4/ranking.{ext}", scan)


def rq4_perplexity_file(model="{model}", scan="{scan}"):
    """The perplexity of every sample a scan labelled, under one model (RQ4's ranking)."""
    return leakage_file(f"rq4/perplexity/{model}.parquet", scan)


def rq3_file(ext, benchmark="{benchmark}", scan="{scan}"):
    """LessLeak RQ3's pass@k on a benchmark's leaked and non-leaked parts: its table or section."""
    return leakage_file(f"rq3/{benchmark}.{ext}", scan)


def rq3_runs_file(benchmark="{benchmark}", model="{model}"):
    """LessLeak RQ3's completions of one model, run against the tests."""
    return f"{RESULTS}/leakage/rq3/{benchmark}/{model}.parquet"


# --- watermark and dose (rules/watermark.smk, rules/dose.smk)


def watermark_dir(benchmark="{benchmark}"):
    return f"{RESULTS}/watermark/{benchmark}"


def watermark_file(name, benchmark="{benchmark}"):
    """A table of the randomized publication's test: calibration_rows.parquet, null_rank_counts.parquet,
    summary.parquet, report.md, p_values.png."""
    return f"{watermark_dir(benchmark)}/{name}"


def watermark_release(benchmark, name):
    """A file of the release: published.jsonl, commitment.json, private/forms.parquet, private/secret.key."""
    return f"{watermark_dir(benchmark)}/release/{name}"


def watermark_release_table(benchmark="{benchmark}"):
    """The release ingested as a benchmark table."""
    return f"{watermark_dir(benchmark)}/release.parquet"


def watermark_test_dir(benchmark="{benchmark}", model="{model}"):
    """The rank test of the release under one model: tokens, ranks, result."""
    return f"{watermark_dir(benchmark)}/test/{model}"


def watermark_test_file(name, benchmark="{benchmark}", model="{model}"):
    """A file of the rank test under one model: tokens.parquet, ranks.parquet, result.parquet."""
    return f"{watermark_test_dir(benchmark, model)}/{name}"


def dose_dir(benchmark="{benchmark}"):
    return f"{RESULTS}/dose/{benchmark}"


def dose_published_order(benchmark="{benchmark}"):
    return f"{dose_dir(benchmark)}/published_order.parquet"


def dose_watermark_dir(benchmark="{benchmark}", model="{model}"):
    """The rank test of the release under a dose model trained on it."""
    return f"{dose_dir(benchmark)}/watermark/{model}"


def dose_watermark_file(name, benchmark="{benchmark}", model="{model}"):
    """A file of the rank test under a dose model, as watermark_test_file."""
    return f"{dose_watermark_dir(benchmark, model)}/{name}"


def dose_exchangeability_file(benchmark="{benchmark}", model="{model}"):
    """Oren et al.'s test of the published order under a dose model trained on it."""
    return f"{dose_dir(benchmark)}/exchangeability/{model}.parquet"


# --- the audit and the verdict (rules/audit.smk, rules/verdict.smk)


def verdict_file():
    """The run's verdict page (rules/verdict.smk)."""
    return f"{RESULTS}/verdict.md"


def verdict_json_file():
    """The verdict page's answers as JSON (rules/verdict.smk; docs/verdict.schema.json)."""
    return f"{RESULTS}/verdict.json"


def audit_dir():
    return f"{RESULTS}/audit"


def audit_file(name):
    """An output of the audit: leakage_rates.*, heatmap.png, dataset_inference.*, verdicts.*,
    blind_baseline.parquet, shifted_controls/..."""
    return f"{audit_dir()}/{name}"
