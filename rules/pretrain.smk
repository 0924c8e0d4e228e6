# Rebuilds the shipped models; not part of `rule all` (`make base-model`,
# `make reference-model`). They read their corpora from their sources and
# have no file inputs, so re-ingesting the corpora (new mtimes) can never
# trigger a retraining; rules that use a model depend on its files, so a
# deliberate rebuild re-runs them.

from leaktrace.config_slice import slice_from_config
from leaktrace.settings.ingest import CorpusEntry
from leaktrace.settings.pretrain import PretrainSettings


def pretrain_corpora(block):
    """Params: the code and text corpora a shipped model is pretrained on (settings/pretrain.py
    PretrainCorpora), each its corpora entry but shards."""
    pretrain = config[block]["pretrain"]
    corpora = {}
    for role, key in (("code", "code_corpus"), ("text", "text_corpus")):
        name = pretrain[key]
        if name not in config["corpora"]:
            raise ValueError(f"{block}.pretrain.{key} names {name!r}, which is not under `corpora`")
        content = slice_from_config(CorpusEntry, config, f"corpora.{name}")
        corpora[role] = {"name": name, "settings": {k: v for k, v in content.items() if k != "shards"}}
    return json.dumps(corpora, sort_keys=True)


rule pretrain_base_model:
    output:
        shipped_model_files(BASE_MODEL),
        training_log=f"{BASE_MODEL}/pretrain_log.parquet",
    params:
        corpora=pretrain_corpora("base_model"),
        settings=stage_settings("pretrain", config),
        out_dir=BASE_MODEL,
    log:
        log_file("pretrain_base_model"),
    benchmark:
        benchmark_file("pretrain_base_model")
    threads: 2
    conda:
        MODEL_ENV
    resources:
        **pretrain_job("base_model"),
    shell:
        "{LEAKTRACE} pretrain --corpora {params.corpora:q} --settings {params.settings:q}"
        " --output-dir {params.out_dir} --log {output.training_log} 2> {log}"


if REFERENCE_MODEL:

    use rule pretrain_base_model as pretrain_reference_model with:
        output:
            shipped_model_files(REFERENCE_MODEL),
            training_log=f"{REFERENCE_MODEL}/pretrain_log.parquet",
        params:
            corpora=pretrain_corpora("reference_model"),
            settings=json.dumps(slice_from_config(PretrainSettings, config, "reference_model.pretrain.settings"),
                                sort_keys=True),
            out_dir=REFERENCE_MODEL,
        log:
            log_file("pretrain_reference_model"),
        benchmark:
            benchmark_file("pretrain_reference_model")
        resources:
            **pretrain_job("reference_model"),
