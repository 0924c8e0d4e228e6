# Content-tracked inputs: every rule that reads a local file the config
# names (a benchmark's file, the control ids, a records corpus's file, the
# files of a files/jsonl/parquet corpus that a scan or a counterfactual source
# streams) takes that input's digest file as input,
# results/<run>/inputs/<kind>/<config key>.json, written by rule input_digest
# from its params: the number of files and the SHA-256 of their listing (each
# file's name, size and SHA-256, or why the scan skips it;
# leaktrace/data/digests.py, leaktrace/leakage/sources.py). As with model
# identity (rules/identity.smk): an edited, added or removed file changes the
# params, the params trigger rewrites the digest file, and the mtime trigger
# reruns exactly the jobs that read the input and what follows them; a file
# only touched or copied changes nothing. Digests are cached by file stamp
# (.snakemake/leaktrace/input-digests.json), so an unchanged file is never read
# again at planning. A hub dataset is pinned by its `revision` alone, which
# every reader's settings hold; planning names those without one.

from leaktrace.data.benchmarks import benchmark_entry, local_files
from leaktrace.data.digests import DigestCache, file_entry, input_digest
from leaktrace.leakage.sources import LOCAL_KINDS, source_entries
from leaktrace.plan_checks import unpinned_datasets

INPUT_DIGEST_CACHE = DigestCache(os.path.join(".snakemake", "leaktrace", "input-digests.json"))
INPUT_KINDS = ("benchmarks", "corpora", "contamination", "scans", "counterfactual")
INPUT_DIGESTS = {}  # (kind, name) -> (params JSON, the file's JSON), computed once, when first asked for


def _tracked_files(kind, name):
    """(name, path) of the local files of an input of kind benchmarks, corpora or contamination."""
    if kind == "benchmarks":
        return local_files(benchmark_entry(config["benchmarks"][name], f"benchmarks.{name}"))
    if kind == "corpora":
        path = config["corpora"][name].get("path")
        return [(path, path)] if config["corpora"][name]["source"] == "records" and path and os.path.isfile(path) else []
    path = config["contamination"]["held_out_ids"]
    return [(path, path)] if name == "held_out_ids" and path else []


def _corpus_source(kind, name):
    """The corpus spec of a scan or of a counterfactual source, if it is of a kind read from local files."""
    spec = (LEAKAGE_SCANS if kind == "scans" else COUNTERFACTUAL_SOURCES).get(name) or {}
    corpus = spec.get("corpus")
    return corpus if corpus and corpus["kind"] in LOCAL_KINDS else None


def input_tracked(kind, name):
    """Whether the config's input (kind, name) is read from local files, and so has a digest file."""
    if kind in ("scans", "counterfactual"):
        return _corpus_source(kind, name) is not None
    return bool(_tracked_files(kind, name))


def input_digest_of(kind, name):
    """(params JSON, file JSON) of a tracked input: its digest, and the digest with every file's entry."""
    if (kind, name) not in INPUT_DIGESTS:
        if kind in ("scans", "counterfactual"):
            source = _corpus_source(kind, name)
            entries = source_entries(source, INPUT_DIGEST_CACHE)
            about = {"kind": source["kind"], **{k: source[k] for k in ("root", "glob", "paths") if k in source}}
        else:
            entries = [file_entry(path, INPUT_DIGEST_CACHE, label) for label, path in _tracked_files(kind, name)]
            about = {}
        INPUT_DIGEST_CACHE.save()
        digest = input_digest(entries, **about)
        INPUT_DIGESTS[kind, name] = (json.dumps(digest, sort_keys=True),
                                     json.dumps({**digest, "files": entries}, sort_keys=True, indent=1))
    return INPUT_DIGESTS[kind, name]


def input_digest_files(kind, name):
    """The digest file of the config's input (kind, name), or none (not read from local files)."""
    return [input_digest_path(kind, name)] if input_tracked(kind, name) else []


def benchmark_digest(wildcards):
    return input_digest_files("benchmarks", wildcards.benchmark)


def corpus_digest(wildcards):
    return input_digest_files("corpora", wildcards.corpus)


def scan_digest(wildcards):
    return input_digest_files("scans", wildcards.scan)


def counterfactual_corpus_digest(wildcards):
    return input_digest_files("counterfactual", wildcards.benchmark)


def control_ids_digest():
    """The control ids' digest file (contamination.held_out_ids), or none; the readers name the file itself in params."""
    return input_digest_files("contamination", "held_out_ids")


if not workflow.remote_exec:
    for _key in unpinned_datasets(config):
        print(f"leaktrace: {_key} is a hub dataset without `revision`: a rerun does not see the hub's copy change "
              "(pin a commit to make the results follow it)", file=sys.stderr)


rule input_digest:
    output:
        input_digest_path(),
    params:
        digest=lambda wildcards: input_digest_of(wildcards.kind, wildcards.name)[0],
    wildcard_constraints:
        kind=_alternatives(INPUT_KINDS),
        name=r"[A-Za-z0-9_.+-]+",
    log:
        log_file("input_digest", "{kind}", "{name}"),
    threads: 1
    resources:
        **cpu_job(),
    run:
        with open(output[0], "w") as fh:
            fh.write(input_digest_of(wildcards.kind, wildcards.name)[1] + "\n")
