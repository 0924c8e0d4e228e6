# The models a run scores and how each is loaded: the testbed's names (the
# targets, the controls, the audited models), their specs and files as rule
# inputs (identity files included, rules/identity.smk), and the adapter or
# split behind a model name. Included after rules/paths.smk.


# The target's controls (CONTROLS, models/naming.py), each a LoRA run of its
# own (rules/train.smk, train_control) trained exactly as the target: the sham
# (its mix with the members replaced by other code) and the complement twin
# (trained on the target's non-members instead of its members).


def seed_epochs(seed):
    return EPOCHS if seed == SEEDS[0] else EPOCHS[-1:]


TARGETS = [f"target-r{r}-s{s}-e{e}" for r in RATIOS for s in SEEDS for e in seed_epochs(s)]
MODELS = ["reference"] + TARGETS
# Audit mode: models scored without training. An audit entry either names a
# testbed model (its scores are reused) or brings its own (scored as
# `audit-<name>`). A list in the config, so that a --configfile replaces it whole.
AUDIT_MODELS = {m["name"]: {k: v for k, v in m.items() if k != "name"} for m in config["audit"]["models"]}
if len(AUDIT_MODELS) != len(config["audit"]["models"]):
    raise ValueError("audit.models: every entry needs a name of its own")
AUDIT_OWN = {f"audit-{name}": spec for name, spec in AUDIT_MODELS.items() if "path" in spec}
# Hub models are fetched once into this cache (rules/cluster.smk); every rule
# loads the local copy.
HUB_CACHE = config["cluster"]["hub_cache"]


def fetched(path, revision=None):
    """A model's local directory: a hub id's copy in HUB_CACHE (one per
    revision: ``org--name@revision``), else the path."""
    if path and is_hub_id(path):
        return f"{HUB_CACHE}/{path.replace('/', '--')}" + (f"@{revision}" if revision else "")
    if revision:
        raise ValueError(f"model {path!r} is a local directory, which holds one revision; revision {revision!r} "
                         "applies to a hub id")
    return path


AUDIT_OWN = {name: {**spec, "path": fetched(spec["path"])} for name, spec in AUDIT_OWN.items()}
BASE_MODEL = fetched(config["base_model"]["path"], config["base_model"]["revision"])
# The shipped reference model (a smaller model trained by the pipeline), if any.
REFERENCE_MODEL = fetched(config["reference_model"]["path"])
# Ref's reference model, scored as `ref-model`: the configured one, else the
# shipped reference model. `ref_oracle` uses the target's own base model.
REF_SETTINGS = config["score"]["methods"].get("ref")
REF_MODEL = REF_SETTINGS and fetched(REF_SETTINGS["model"] or REFERENCE_MODEL)
if REF_SETTINGS and not REF_MODEL and not REF_SETTINGS["oracle"]:
    raise ValueError("score.methods.ref needs a reference: set ref.model or reference_model.path, or ref.oracle: true")


# CPU threads of a job that runs a model (training, scoring, generating):
# base_model.threads (Snakemake hands them to torch as OMP_NUM_THREADS).
MODEL_THREADS = config["base_model"]["threads"]
BASE_MODEL_CONFIG = {**{k: config["base_model"][k] for k in ("path", "dtype", "device", "max_length")}, "path": BASE_MODEL}


def model_settings():
    """What every model-loading stage needs to know about the base model."""
    return json.dumps(BASE_MODEL_CONFIG, sort_keys=True)


def _model_config(model):
    """(path/dtype/device, adapter directory or None) of a scored model name."""
    if model in AUDIT_OWN:
        spec = AUDIT_OWN[model]
        return {"path": spec["path"], "dtype": spec.get("dtype", "float32"), "device": spec.get("device", "cpu")}, spec.get("adapter")
    if model == "ref-model":
        return {**BASE_MODEL_CONFIG, "path": REF_MODEL}, None
    return BASE_MODEL_CONFIG, None


def scored_model_settings(wildcards):
    """Params: path/dtype/device of the ``{model}`` a scoring rule loads."""
    return json.dumps(_model_config(wildcards.model)[0], sort_keys=True)


def local_model_files(path):
    """A model as rule input, when it is a local directory (a hub id is
    resolved by the backend at run time)."""
    if is_hub_id(path):
        return []
    return [f"{path}/config.json"]


def _fetched_files(path):
    """A fetched hub model's files as rule input: the fetch rule's marker."""
    return [f"{path}/config.json"] if path.startswith(f"{HUB_CACHE}/") else None


def shipped_model_files(path):
    """The files of a model the pipeline pretrains itself (base or reference)."""
    if is_hub_id(path):
        return []
    if _fetched_files(path) is not None:
        return _fetched_files(path)
    return [f"{path}/config.json", f"{path}/model.safetensors", f"{path}/tokenizer.json"]


def scored_model_files(wildcards):
    """Input function: the local files of the ``{model}`` a scoring rule loads,
    with its adapter directory."""
    spec, adapter = _model_config(wildcards.model)
    if spec["path"] in (BASE_MODEL, REFERENCE_MODEL):
        files = shipped_model_files(spec["path"])
    else:
        files = local_model_files(spec["path"])
    identity = model_identity_files(spec["path"], adapter)  # rules/identity.smk
    return files + ([adapter] if adapter else []) + model_adapter(wildcards) + identity


def audit_model(name):
    """The scored model behind an audit entry: a testbed model, or its own."""
    spec = AUDIT_MODELS[name]
    if "testbed" in spec:
        if spec["testbed"] not in MODELS:
            raise ValueError(f"audit model {name!r} names testbed model {spec['testbed']!r}; the testbed has {MODELS}")
        return spec["testbed"]
    return f"audit-{name}"


def base_model_files():
    """The base model as rule input: its files and its identity (rules/identity.smk)."""
    return shipped_model_files(BASE_MODEL) + model_identity_files(BASE_MODEL)


def model_adapter(wildcards):
    """Input function: the adapter directory behind a target (or control) model."""
    kind = wildcards.model.split("-", 1)[0]
    if kind == "target":
        return [adapter_dir(wildcards.benchmark, *trained_model_labels(wildcards.model))]
    if kind in CONTROLS:
        return [control_adapter_dir(kind, wildcards.benchmark, *trained_model_labels(wildcards.model))]
    if kind == "dose":
        return [dose_adapter(wildcards.benchmark, wildcards.model)]  # rules/dose.smk
    return []


def model_split(wildcards):
    """Input function: the split a model's label-dependent steps read: the
    twin's swapped split for a twin, the testbed's split otherwise."""
    if wildcards.model.startswith(("twin-", "dose-twin-")):
        return twin_split_file(wildcards.benchmark)
    return split_file(wildcards.benchmark)


def counterfactual_target():
    """The (ratio, seed, epoch) of the target the counterfactual stage compares
    with the reference: the configured ratio and epoch, else the first ratio's
    last epoch, of the first training seed."""
    ratio = f"{config['counterfactual']['ratio']:g}" if config["counterfactual"]["ratio"] is not None else RATIOS[0]
    epoch = config["counterfactual"]["epoch"] or EPOCHS[-1]
    if epoch not in EPOCHS:
        raise ValueError(f"counterfactual.epoch {epoch} is not one of train.epochs {EPOCHS}")
    if ratio not in RATIOS:
        raise ValueError(f"counterfactual.ratio {ratio} is not one of train.text_per_code {RATIOS}")
    return ratio, SEEDS[0], epoch


def sham_models():
    """The sham controls (contamination.sham; rules/train.smk, sham_mix and
    train_sham): the counterfactual target's LoRA run on its mix with the
    members replaced by non-benchmark code, at its seed or each of
    `sham_seeds`, scored as `sham-r{ratio}-s{seed}-e{epoch}`."""
    if not config["contamination"]["sham"]:
        return []
    ratio, seed, epoch = counterfactual_target()
    return [f"sham-r{ratio}-s{s}-e{epoch}" for s in config["contamination"]["sham_seeds"] or [seed]]


SHAMS = sham_models()


def twin_models():
    """The complement twins (contamination.twin; rules/train.smk, twin_mix and
    train_control): the counterfactual target's ratio and the first training
    seed, trained on the target's non-members, scored at `twin_epochs` (null:
    the counterfactual target's epoch) as `twin-r{ratio}-s{seed}-e{epoch}`,
    each the null of the target of the same name (rules/twin.smk)."""
    if not config["contamination"]["twin"]:
        return []
    ratio, seed, epoch = counterfactual_target()
    epochs = config["contamination"]["twin_epochs"] or [epoch]
    if set(epochs) - set(EPOCHS):
        raise ValueError(f"contamination.twin_epochs {sorted(set(epochs) - set(EPOCHS))} are not among train.epochs {EPOCHS}")
    return [f"twin-r{ratio}-s{seed}-e{e}" for e in sorted(epochs)]


TWINS = twin_models()


def unexposed_models(scored=False):
    """The models that never saw the split's members as such, nor the
    benchmark's order (leaktrace/calibration/unexposed.py recognises them by
    name): the base model, Ref's reference model (`ref-model`, where Ref is
    configured), the sham controls and the complement twins (`TWINS`, where
    defined). ``scored``: only those with detector scores (`ref-model` has
    token statistics only, Ref's evidence)."""
    models = ["reference"] + (["ref-model"] if REF_MODEL and not scored else []) + SHAMS + TWINS
    return list(dict.fromkeys(models))


def adapter_args(wildcards):
    """The ``--adapter`` option of a stage for a target model (or an audit
    model with an adapter)."""
    adapters = model_adapter(wildcards) + [a for a in [_model_config(wildcards.model)[1]] if a]
    return " ".join(f"--adapter {path}" for path in adapters)
