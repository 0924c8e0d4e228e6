"""Every user input checked while Snakemake plans, all problems in one
message, before any job starts and so before Snakemake deletes any output
it is about to remake: a rerun with a typo stops with the previous results
in place, instead of failing hours later (the audit's control ids were
checked only by the audit job, after all scoring) or, worse, succeeding on
the old model's files.

Each ``*_problems`` function checks one kind of input of the config (after
defaults and schema validation) and returns its problems as strings, each
naming the config key; :func:`check_plan` runs them all and raises one
:class:`PlanError` listing every problem. Benchmarks are read as the ingest
reads them (a few records for the format; every id for the control ids),
files above :data:`~leaktrace.data.runnability.PLANNING_MAX_BYTES` and hub
datasets are left to their jobs."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from leaktrace.data.benchmarks import benchmark_entry, benchmark_format, load_benchmark
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.data.runnability import PLANNING_MAX_BYTES, runnability_message
from leaktrace.data.sample_ids import read_id_list, task_id
from leaktrace.errors import InputError
from leaktrace.leakage.sources import glob_has_match, glob_root
from leaktrace.models.backend import is_hub_id
from leaktrace.run_kind import benchmarks_on_testbed
from leaktrace.settings.ingest import BenchmarkEntry

FORMAT_RECORDS = 3  # records parsed per benchmark to check its preset and format
# A name becomes a file or directory name under results/<run>/ (and a wildcard value)
NAME = re.compile(r"[A-Za-z0-9_.+-]+")


class PlanError(ValueError):
    """The config's problems, one a line."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"the config has {len(problems)} problem{'s' * (len(problems) != 1)}; nothing was run or deleted:\n{lines}"
        )


def _why(err: Exception) -> str:
    return str(err).strip()


# --- models ---


def configured_model_paths(config: dict) -> list[tuple[str, str, str]]:
    """(config key, path, kind) of every model and adapter the config names
    by path: kind ``model`` (a directory with config.json) or ``adapter``."""
    found = [("base_model.path", config["base_model"]["path"], "model")]
    if config.get("reference_model", {}).get("path"):
        found.append(("reference_model.path", config["reference_model"]["path"], "model"))
    ref = (config["score"]["methods"] or {}).get("ref")
    if ref and ref.get("model"):
        found.append(("score.methods.ref.model", ref["model"], "model"))
    for i, spec in enumerate(config["audit"]["models"]):
        label = f"audit.models[{i}] ({spec.get('name')})"
        if spec.get("path"):
            found.append((f"{label}.path", spec["path"], "model"))
        if spec.get("adapter"):
            found.append((f"{label}.adapter", spec["adapter"], "adapter"))
    counterfactual = config.get("counterfactual", {})
    specs = [(f"counterfactual.{role}", counterfactual.get(role)) for role in ("target", "reference")]
    specs += [
        (f"counterfactual.sources.{name}.{role}", (source or {}).get(role))
        for name, source in (counterfactual.get("sources") or {}).items()
        for role in ("target", "reference")
    ]
    for key, spec in specs:
        if isinstance(spec, dict):  # a name of an audit model is checked there
            found += [(f"{key}.path", spec["path"], "model")] if spec.get("path") else []
            found += [(f"{key}.adapter", spec["adapter"], "adapter")] if spec.get("adapter") else []
    natural = config.get("variants", {}).get("natural", {})
    if natural.get("enabled") and natural.get("model"):
        found.append(("variants.natural.model", natural["model"], "model"))
    return found


def model_problems(
    config: dict,
    buildable: Iterable[str] = (),
    hub_id: Callable[[str], bool] = is_hub_id,
    hub_problem: Callable[[str], str | None] | None = None,
) -> list[str]:
    """A local model path (not a hub id) that does not exist, is not a
    directory, or holds no config.json; an adapter path that does not exist;
    with ``hub_problem`` (a run that will fetch, not a dry run), a hub id it
    says cannot be fetched, named as both a missing directory and an
    unreachable hub id. ``buildable``: paths a requested rule builds (the
    shipped models, when rebuilt), which may be missing."""
    problems, buildable = [], set(buildable)
    for key, path, kind in configured_model_paths(config):
        where = f"{key}: {path}"
        if path in buildable:
            continue
        if hub_id(path):
            reason = hub_problem(path) if hub_problem else None
            if reason:
                problems.append(
                    f"{where} is neither a local directory ({os.path.abspath(path)} does not exist) nor a reachable "
                    f"hub id: {reason}"
                )
            continue
        if not os.path.exists(path):
            problems.append(f"{where} does not exist (a local {kind} directory, or a hub id 'org/name')")
        elif not os.path.isdir(path):
            problems.append(f"{where} is not a directory")
        elif kind == "model" and not os.path.isfile(os.path.join(path, "config.json")):
            problems.append(f"{where} holds no config.json (not a Hugging Face model directory)")
    return problems


# --- benchmarks ---


def _benchmark_file(settings: BenchmarkEntry) -> Path | None:
    """The local file a benchmark reads, or None (a hub dataset)."""
    if settings.path:
        return Path(settings.path)
    if benchmark_format(settings) == "humaneval":
        return Path(shipped_humaneval_path())
    return None


def _read_samples(name: str, settings: BenchmarkEntry, limit: int | None) -> list:
    if benchmark_format(settings) == "humaneval":
        samples = load_humaneval(_benchmark_file(settings), name)
        return samples[:limit] if limit else samples
    return load_benchmark(settings, name, limit)


def benchmark_problems(config: dict) -> list[str]:
    """Each benchmark's format is known (its preset's, or from the file's
    suffix), its file exists, and its first records read with its preset /
    fields (hub datasets are read by their jobs)."""
    problems = []
    for name, entry in config["benchmarks"].items():
        try:
            settings = benchmark_entry(entry, f"benchmarks.{name}")
            fmt = benchmark_format(settings)
            path = _benchmark_file(settings)
            if fmt == "huggingface" or path is None:
                continue
            if not path.exists():
                problems.append(f"benchmarks.{name}.path: {path} does not exist")
                continue
            _read_samples(name, settings, FORMAT_RECORDS)
        except (InputError, ValueError) as err:
            problems.append(f"benchmarks.{name}: {_why(err)}")
    return problems


def benchmark_sample_ids(name: str, entry: dict) -> list[str] | None:
    """Every sample id of a benchmark (its config entry) as the tables write it (``limit``
    applied), or None where it is not read at planning (a hub dataset, a
    file above PLANNING_MAX_BYTES, one that does not read)."""
    try:
        settings = benchmark_entry(entry, f"benchmarks.{name}")
        path = _benchmark_file(settings)
        if (
            benchmark_format(settings) == "huggingface"
            or path is None
            or not path.is_file()
            or path.stat().st_size > PLANNING_MAX_BYTES
        ):
            return None
        return [s.sample_id for s in _read_samples(name, settings, settings.limit)]
    except (InputError, ValueError):
        return None  # benchmark_problems names it


def control_id_problems(config: dict) -> list[str]:
    """contamination.held_out_ids exists, and every id in it names a sample
    (``11`` or ``mbpp/11``) of a benchmark it is used on: the audit's
    benchmarks, else the testbed's."""
    path = config.get("contamination", {}).get("held_out_ids")
    if not path:
        return []
    key = "contamination.held_out_ids"
    try:
        ids = read_id_list(Path(path))
    except InputError as err:
        return [f"{key}: {_why(err)}"]
    if not ids:
        return [f"{key}: {path} holds no ids"]
    names = list(dict.fromkeys([*config["audit"]["benchmarks"], *benchmarks_on_testbed(config)]))
    sample_ids: set[str] = set()
    for name in names:
        if name not in config["benchmarks"]:
            continue
        found = benchmark_sample_ids(name, config["benchmarks"][name])
        if found is None:
            return []  # a benchmark its job reads: the ids are matched there
        sample_ids.update(found)
    if not sample_ids:
        return []
    by_task = {task_id(s) for s in sample_ids}
    unknown = [i for i in ids if i not in sample_ids and i not in by_task]
    if not unknown:
        return []
    example = min(sample_ids)
    shown = ", ".join(repr(i) for i in unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
    return [
        f"{key}: {len(unknown)} of {len(ids)} ids in {path} match no sample of {', '.join(names)}: {shown} "
        f"(ids look like {task_id(example)!r} or {example!r})"
    ]


def runnability_problems(config: dict) -> list[str]:
    """A benchmark whose tests the testbed, the audit or functional
    memorisation run, and none of whose samples can run (its warning, some
    samples left out, is printed by rules/audit.smk)."""
    purposes: dict[str, list[str]] = {}
    for name in benchmarks_on_testbed(config):
        purposes.setdefault(name, []).append("the testbed")
    for name in config["audit"]["benchmarks"] if config["audit"]["models"] else []:
        purposes.setdefault(name, []).append("the audit")
    for source_name, source in (config.get("counterfactual", {}).get("sources") or {}).items():
        if (source or {}).get("benchmark"):
            purposes.setdefault(source["benchmark"], []).append(f"functional memorisation ({source_name})")
    problems = []
    for name, uses in purposes.items():
        if name not in config["benchmarks"]:
            continue
        try:
            error, _ = runnability_message(name, config["benchmarks"][name], " and ".join(dict.fromkeys(uses)))
        except (InputError, ValueError):
            continue  # benchmark_problems names it
        problems += [error] if error else []
    return problems


# --- corpora ---


# Corpora that the repository's own scripts build and a fresh clone lacks: a
# corpus read from one of these folders that is not there names the command
# that builds it ({shards}: the scan's own shards, one Parquet file a job).
BUILT_CORPORA = {
    "resources/python-corpus": ".venv/bin/python scripts/build_python_corpus.py --out resources/python-corpus{shards}",
}


def _build_hint(path: str | Path, shards: int | None) -> str:
    """How to build the corpus ``path`` lies in, when a script of the repository builds it, else nothing."""
    path = os.path.normpath(os.path.relpath(path))
    for folder, command in BUILT_CORPORA.items():
        if path == folder or path.startswith(folder + os.sep):
            return f"; build it with `{command.format(shards=f' --shards {shards}' if shards else '')}`"
    return ""


def _streamed_corpora(config: dict) -> list[tuple[str, dict, int | None]]:
    """(config key, corpus, shards) of every corpus a scan or a counterfactual source streams."""
    found = [
        (f"leakage.scans.{name}.corpus", scan["corpus"], scan.get("shards"))
        for name, scan in (config.get("leakage", {}).get("scans") or {}).items()
    ]
    found += [
        (f"counterfactual.sources.{name}.corpus", source["corpus"], None)
        for name, source in (config.get("counterfactual", {}).get("sources") or {}).items()
        if (source or {}).get("corpus")
    ]
    return found


def corpus_problems(config: dict) -> list[str]:
    """Each streamed corpus's files exist (a scan's or a counterfactual
    source's): a ``files`` root is a directory whose glob matches at least
    one file, each ``jsonl``/``parquet`` glob matches at least one file; a
    ``records`` corpus's file exists. A corpus that a script of the repository
    builds (:data:`BUILT_CORPORA`) is named with the command that builds it."""
    problems = []
    for key, source, shards in _streamed_corpora(config):
        if source["kind"] == "files":
            root, glob = source["root"], source.get("glob", "**/*")
            if not os.path.isdir(root):
                problems.append(f"{key}.root: {root} is not a directory{_build_hint(root, shards)}")
            elif not glob_has_match(Path(root), glob):
                problems.append(f"{key}: no file under {root} matches {glob!r}{_build_hint(root, shards)}")
        elif source["kind"] in ("jsonl", "parquet"):
            problems += [
                f"{key}.paths: {pattern!r} matches no file{_build_hint(glob_root(pattern)[0], shards)}"
                for pattern in source["paths"]
                if not glob_has_match(None, pattern)
            ]
    for name, corpus in config.get("corpora", {}).items():
        if (
            corpus["source"] == "records"
            and corpus.get("path")
            and corpus.get("format") != "huggingface"
            and not os.path.exists(corpus["path"])
        ):
            problems.append(f"corpora.{name}.path: {corpus['path']} does not exist")
    return problems


# --- hub datasets ---

BUILDERS = ("json", "parquet", "csv", "text", "arrow")  # datasets' builders of local files, not hub ids


def unpinned_datasets(config: dict) -> list[str]:
    """The hub datasets the config reads without a ``revision``, each as its
    config key and id: a rerun cannot see that the hub's copy changed (local
    files are tracked by content; a hub dataset only by its id and revision)."""
    found = []
    for name, settings in config["benchmarks"].items():
        try:
            hub = benchmark_format(benchmark_entry(settings, f"benchmarks.{name}")) == "huggingface"
        except ValueError:
            continue  # benchmark_problems names it
        if hub and settings.get("dataset") not in BUILDERS and not settings.get("revision"):
            found.append(f"benchmarks.{name} ({settings['dataset']})")
    for name, corpus in config.get("corpora", {}).items():
        if (
            corpus.get("format") == "huggingface"
            and corpus.get("dataset") not in BUILDERS
            and not corpus.get("revision")
        ):
            found.append(f"corpora.{name} ({corpus['dataset']})")
    sources = [(f"leakage.scans.{n}", s) for n, s in (config.get("leakage", {}).get("scans") or {}).items()]
    sources += [
        (f"counterfactual.sources.{n}", s) for n, s in (config.get("counterfactual", {}).get("sources") or {}).items()
    ]
    for key, spec in sources:
        corpus = (spec or {}).get("corpus") or {}
        if corpus.get("kind") == "huggingface" and not corpus.get("revision"):
            found.append(f"{key}.corpus ({corpus['dataset']})")
    return found


# --- names ---


def name_problems(config: dict) -> list[str]:
    """Names that become file names under results/<run>/ are one path part
    each, and no two outputs share a path: benchmark names against the
    testbed's own suffixes (``<b>.raw``, ``<b>.twin``), counterfactual
    sources against benchmarks, a scan named like RQ3's folder, and names
    equal but for case (one file on a case-insensitive file system)."""
    problems = []
    collections = {
        "benchmarks": list(config["benchmarks"]),
        "corpora": list(config.get("corpora", {})),
        "leakage.scans": list(config.get("leakage", {}).get("scans") or {}),
        "counterfactual.sources": list(config.get("counterfactual", {}).get("sources") or {}),
        "audit.models": [m.get("name", "") for m in config["audit"]["models"]],
    }
    for where, names in collections.items():
        for name in names:
            if not NAME.fullmatch(str(name)) or name in (".", ".."):
                problems.append(f"{where}: name {name!r} is not a file name of letters, digits, '_', '.', '+', '-'")
        seen: dict[str, str] = {}
        for name in names:
            other = seen.setdefault(str(name).lower(), name)
            if other != name:
                problems.append(
                    f"{where}: {other!r} and {name!r} differ only in case (one file on a case-insensitive file system)"
                )
        duplicates = sorted({n for n in names if names.count(n) > 1})
        problems += [f"{where}: {n!r} is named more than once" for n in duplicates]
    benchmarks = collections["benchmarks"]
    for name in benchmarks:
        for suffix, what in ((".raw", "the raw copy of a cleaned benchmark"), (".twin", "the twin's split")):
            if name.endswith(suffix) and name[: -len(suffix)] in benchmarks:
                problems.append(f"benchmarks: {name!r} would share its files with {what} of {name[: -len(suffix)]!r}")
    for name in collections["counterfactual.sources"]:
        if name in benchmarks:
            problems.append(
                f"counterfactual.sources.{name}: the name of a benchmark (its outputs would be the "
                "benchmark's); choose another name"
            )
    if "rq3" in collections["leakage.scans"]:
        problems.append(
            "leakage.scans.rq3: 'rq3' is the folder of RQ3's runs (results/<run>/leakage/rq3/); choose another name"
        )
    return problems


def plan_problems(
    config: dict, buildable: Iterable[str] = (), hub_problem: Callable[[str], str | None] | None = None
) -> list[str]:
    """Every problem of every check, in the config's order of keys."""
    return (
        name_problems(config)
        + model_problems(config, buildable, hub_problem=hub_problem)
        + benchmark_problems(config)
        + runnability_problems(config)
        + control_id_problems(config)
        + corpus_problems(config)
    )


def check_plan(
    config: dict, buildable: Iterable[str] = (), hub_problem: Callable[[str], str | None] | None = None
) -> None:
    """Raise one :class:`PlanError` listing every problem, if any."""
    problems = plan_problems(config, buildable, hub_problem)
    if problems:
        raise PlanError(problems)
