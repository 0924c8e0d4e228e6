# Model identity: every rule that reads a configured model (the
# base model, an audited model and its adapter, Ref's reference model, a
# counterfactual model, the natural variants' selection model) takes the
# model's identity file as input, results/<run>/models/<key>.identity.json,
# written by rule model_identity from its params: the model's resolved path
# and a fingerprint of its files (leaktrace/models/identity.py). A new path is
# a new identity file (the input trigger); changed files change the params
# (the params trigger, on by default in --rerun-triggers), the file is
# rewritten, and everything the model scored reruns (the mtime trigger).

from leaktrace.models.identity import identity_json, identity_key, model_identity


def _configured_model_paths():
    """Every model and adapter path the config names, as the rules read it
    (hub ids as their fetched copies): the base model, the shipped reference,
    Ref's reference, the audited models and their adapters, the
    counterfactual sources' models and adapters, the natural variants'
    selection model."""
    paths = [BASE_MODEL, REFERENCE_MODEL, REF_MODEL]
    paths += [p for spec in AUDIT_OWN.values() for p in (spec["path"], spec.get("adapter"))]
    for name in list(COUNTERFACTUAL_SOURCES) + TESTBED_BENCHMARKS:
        paths += [p for model in counterfactual_models(name) for p in (model["path"], model.get("adapter"))]
    if config["variants"]["natural"]["enabled"]:
        paths.append(fetched(config["variants"]["natural"]["model"] or config["reference_model"]["path"]))
    return [p for p in dict.fromkeys(paths) if p and not in_results(p)]


# key -> path of every configured model, and key -> identity JSON (computed once, when first asked for)
MODEL_PATHS = {identity_key(p): p for p in _configured_model_paths()}
MODEL_IDENTITIES = {}


def model_identity_of(key):
    """The identity JSON of a model key (the params of its model_identity job)."""
    if key not in MODEL_IDENTITIES:
        path = MODEL_PATHS[key]
        MODEL_IDENTITIES[key] = identity_json(model_identity(path, hub=path.startswith(f"{HUB_CACHE}/")))
    return MODEL_IDENTITIES[key]


def model_identity_file(path):
    """The identity file of a model path."""
    key = identity_key(path)
    MODEL_PATHS.setdefault(key, path)
    return model_identity_path(key)


def model_identity_files(*paths):
    """Identity files of the given model and adapter paths (None, and the
    adapters the pipeline trains, under results/, skipped: those are rule
    outputs already)."""
    return [model_identity_file(p) for p in paths if p and not in_results(p)]


rule model_identity:
    output:
        model_identity_path("{model_key}"),
    params:
        identity=lambda wildcards: model_identity_of(wildcards.model_key),
    wildcard_constraints:
        model_key=r"[A-Za-z0-9_.@-]+",
    log:
        log_file("model_identity", "{model_key}"),
    threads: 1
    resources:
        **cpu_job(),
    run:
        with open(output[0], "w") as fh:
            fh.write(params.identity + "\n")
