"""The config overlay a person's flags stand for (``leaktrace audit``,
``leaktrace scan``): the same keys a hand-written ``--configfile`` sets
(config/experiments/audit.yaml), so the file the command writes to
``results/<run>/config.yaml`` reproduces its run with plain Snakemake.

An audit from flags trains nothing: the default's testbed benchmark and its
scans are removed, the detectors that need the testbed's split are off, the
benchmark is declared ``testbed: false``, and a one-model audit has no
reference-model contrast, no Ref detector and no functional-memorisation
source (each needs a second model the user declares)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# What every audit turns off (config/experiments/audit.yaml says why line by line; a test keeps the two alike).
AUDIT_METHODS_OFF = ("dc_pdd", "recall", "dpdllm", "veilprobe", "ref")
SRDETECTION = {
    "srdetection_graybox": {"n_variants": 10, "sensitivity": [1, 3, 5], "generators": []},
    "srdetection_blackbox": {"n_variants": 10, "sensitivity": [1, 3, 5], "max_new_tokens": 32},
}
DEFAULT_SCANS_OFF = ("stdlib", "training-mix")  # the default's scans of HumanEval
DEFAULT_BENCHMARK = "humaneval"  # the default's testbed benchmark
SCAN_NAME = "corpus"
SUFFIXES = re.compile(r"(\.(jsonl|json|parquet|csv))?(\.gz)?$")


def _local(value: str) -> bool:
    return Path(value).exists()


def _file_name(value: str) -> str:
    """A name for results/<run>/ from a file or hub id: its last part, suffixes off, other characters as '-'."""
    stem = SUFFIXES.sub("", value.rstrip("/").rsplit("/", 1)[-1])
    return re.sub(r"[^A-Za-z0-9_.+-]", "-", stem) or "benchmark"


@dataclass(frozen=True)
class Model:
    """``--model NAME=PATH_OR_HUB_ID``."""

    name: str
    path: str

    @classmethod
    def parse(cls, text: str) -> Model:
        name, sep, path = text.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--model expects NAME=PATH_OR_HUB_ID, got {text!r}")
        return cls(name, path)


@dataclass(frozen=True)
class Benchmark:
    """``--benchmark FILE_OR_HUB_DATASET --preset NAME [--limit N]``: a local
    file is read by its suffix, anything else is a hub dataset's id."""

    source: str
    preset: str
    limit: int | None = None
    split: str = "test"

    @property
    def name(self) -> str:
        return _file_name(self.source)

    def settings(self) -> dict:
        where = (  # format null: implied by the preset and the file's suffix (and the default's entry, if its name, overridden)
            {"format": None, "path": self.source}
            if _local(self.source)
            else {"format": "huggingface", "dataset": self.source, "split": self.split}
        )
        return {**where, "preset": self.preset, "testbed": False} | ({"limit": self.limit} if self.limit else {})


@dataclass(frozen=True)
class Corpus:
    """``--corpus DIR_OR_HUB_DATASET [--glob PATTERN]``: a directory's files,
    or a hub dataset streamed shard by shard (its text column ``content``)."""

    source: str
    glob: str = "**/*.py"

    def settings(self) -> dict:
        if Path(self.source).is_dir():
            return {"kind": "files", "root": self.source, "glob": self.glob}
        return {"kind": "huggingface", "dataset": self.source}


def _scans(benchmark: Benchmark, corpus: Corpus | None) -> dict:
    scans: dict = dict.fromkeys(DEFAULT_SCANS_OFF)
    if corpus is not None:
        scans[SCAN_NAME] = {"benchmark": benchmark.name, "corpus": corpus.settings()}
    return {"scans": scans, "rq3": {"enabled": False}}


def _benchmarks(benchmark: Benchmark) -> dict:
    if benchmark.name == DEFAULT_BENCHMARK:  # the user's own benchmark replaces the default's entry whole
        return {DEFAULT_BENCHMARK: benchmark.settings()}
    return {DEFAULT_BENCHMARK: None, benchmark.name: benchmark.settings()}


@dataclass(frozen=True)
class AuditRequest:
    """What ``leaktrace audit`` asks: models, one benchmark, its control ids,
    optionally negative-control models and a corpus to scan."""

    run: str
    models: tuple[Model, ...]
    benchmark: Benchmark
    controls: str
    negative_controls: tuple[str, ...] = ()
    corpus: Corpus | None = None

    def __post_init__(self):
        names = [m.name for m in self.models]
        unknown = [n for n in self.negative_controls if n not in names]
        if unknown:
            raise ValueError(f"--negative-control {', '.join(unknown)}: not a --model name ({', '.join(names)})")

    def overlay(self) -> dict:
        b = self.benchmark.name
        return {
            "run": self.run,
            "benchmarks": _benchmarks(self.benchmark),
            "audit": {
                "benchmarks": [b],
                "models": [{"name": m.name, "path": m.path} for m in self.models],
                "reference": {"model": None},
                "negative_controls": list(self.negative_controls),
            },
            "contamination": {"held_out_ids": self.controls},
            "score": {"methods": {**dict.fromkeys(AUDIT_METHODS_OFF), **SRDETECTION}},
            "variants": {"test_cases": {"untransformed": 0}},
            "leakage": _scans(self.benchmark, self.corpus),
        }


@dataclass(frozen=True)
class ScanRequest:
    """What ``leaktrace scan`` asks: one benchmark against one corpus, no model."""

    run: str
    benchmark: Benchmark
    corpus: Corpus

    def overlay(self) -> dict:
        return {
            "run": self.run,
            "benchmarks": _benchmarks(self.benchmark),
            "audit": {"benchmarks": [], "models": []},
            "leakage": _scans(self.benchmark, self.corpus),
        }
