"""Functions sampled from a corpus for the counterfactual stage (``leaktrace sample-corpus-functions``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal


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


# the keys only one kind of source has (no default in the schema): absent, not null, where another kind is given
_KIND_KEYS = ("name", "root", "paths", "dataset")


@dataclass(frozen=True)
class CorpusSource:
    """A corpus source (``counterfactual.sources.<name>.corpus``, a leakage-scan
    corpus): its kind and where its documents come from."""

    kind: Literal["corpus", "training_mix", "files", "jsonl", "parquet", "huggingface"]
    name: str | None
    root: str | None
    glob: str
    paths: tuple[str, ...] | None
    content: str
    id: str | None
    location: str | None
    dataset: str | None
    config: str | None
    data_dir: str | None
    split: str
    revision: str | None
    follow_links: bool

    @classmethod
    def json_of(cls, source: dict) -> dict:
        """``source`` as its flag carries it: every key, null where its kind has none."""
        return {f.name: source.get(f.name) for f in dataclasses.fields(cls)}

    def as_config(self) -> dict:
        """The source as the config holds it, for :func:`leaktrace.leakage.sources.iter_source`."""
        values = dataclasses.asdict(self)
        return {
            k: list(v) if isinstance(v, tuple) else v for k, v in values.items() if v is not None or k not in _KIND_KEYS
        }
