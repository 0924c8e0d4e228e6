"""Functions sampled from a corpus for the counterfactual stage (``leaktrace sample-corpus-functions``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from leaktrace.config_slice import json_object, read_slice


@dataclass(frozen=True)
class CorpusSampling:
    """A corpus source's sampling (``counterfactual.sources.<name>``, not its
    models: a model change never resamples): functions sampled, App. B's
    filters, and the documents read."""

    n: int
    min_body_lines: int
    max_body_lines: int | None
    min_chars: int
    exclude_init: bool
    max_documents: int | None
    max_bytes: int


@dataclass(frozen=True)
class CorpusSource:
    """A corpus source (``counterfactual.sources.<name>.corpus``, a leakage-scan
    corpus): its kind and where its documents come from. The rule passes it
    with the schema's defaults filled in; a key left out reads as null, and
    the reader (:func:`leaktrace.leakage.sources.iter_source`) takes its own
    default for it, as for a key the config leaves out."""

    kind: Literal["corpus", "training_mix", "files", "jsonl", "parquet", "huggingface"]
    name: str | None
    root: str | None
    glob: str | None
    paths: tuple[str, ...] | None
    content: str | None
    id: str | None
    location: str | None
    dataset: str | None
    config: str | None
    data_dir: str | None
    split: str | None
    revision: str | None
    follow_links: bool | None

    metavar = "JSON"

    @classmethod
    def from_flag(cls, text: str) -> CorpusSource:
        """The source as JSON, as the config writes it (a key it leaves out: null)."""
        return read_slice(cls, cls.json_of(json_object(text, "corpus source")), "corpus source")

    @classmethod
    def json_of(cls, source: dict) -> dict:
        """``source`` with every key, null where it has none."""
        return {f.name: source.get(f.name) for f in dataclasses.fields(cls)}

    def as_config(self) -> dict:
        """The source as the config holds it (its keys that are set), for
        :func:`leaktrace.leakage.sources.iter_source`."""
        values = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items() if v is not None}
