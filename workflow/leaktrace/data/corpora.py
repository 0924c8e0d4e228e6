"""The embedded default's corpora: the running interpreter's standard library
as code, and the documentation text shipped with it (``pydoc_data``) as
general text; records of any format, and the code of an installed package. Both are read deterministically (sorted paths / topic names) so
the same interpreter yields the same shards byte for byte."""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import sysconfig
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from leaktrace.data.names import readable
from leaktrace.settings.ingest import BenchmarkEntry, CorpusEntry

log = logging.getLogger(__name__)

# One ingested shard of a corpus (``data/corpora/<name>/part-<i>.parquet``).
CORPUS_SCHEMA = pa.schema([("doc_id", pa.string()), ("source", pa.string()), ("text", pa.string())])


@dataclass(frozen=True)
class Document:
    doc_id: str
    source: str
    text: str


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def iter_stdlib_code(exclude: Sequence[str] = ()) -> Iterator[Document]:
    """Every ``.py`` file of the standard library (site-packages never), minus
    paths matching any of the ``exclude`` globs (relative to the stdlib root).
    A corpus is dirty, so a file that cannot be read, is not UTF-8 or holds a
    NUL byte is skipped with a warning naming it and why (the stdlib has none,
    but a patched interpreter might); a name that is not UTF-8 is kept escaped
    (:func:`~leaktrace.data.names.readable`)."""
    root = stdlib_root()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("site-packages/") or any(fnmatch.fnmatch(rel, g) for g in exclude):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError) as err:
            log.warning("corpus file %s skipped: %s", readable(str(path)), err)
            continue
        if "\x00" in text:
            log.warning("corpus file %s skipped: binary (a NUL byte)", readable(str(path)))
            continue
        yield Document(doc_id=f"stdlib/{readable(rel)}", source=readable(str(path)), text=text)


def iter_package_code(name: str, settings: CorpusEntry) -> Iterator[Document]:
    """Every ``.py`` file of an installed distribution (``package``, e.g.
    networkx), minus ``exclude`` globs (relative to site-packages), in sorted
    order: Python code that is in neither the standard library nor the
    benchmarks, for the sham control. Unreadable files are skipped with a
    warning, as the standard library's."""
    from importlib.metadata import PackageNotFoundError, distribution

    package = settings.package
    if not package:
        raise ValueError(f"corpus {name}: a package corpus needs `package`, the installed distribution it reads")
    try:
        dist = distribution(package)
    except PackageNotFoundError:
        raise ValueError(f"corpus {name}: package {package!r} is not installed in this environment") from None
    for rel in sorted(str(f) for f in dist.files or () if f.suffix == ".py"):
        if any(fnmatch.fnmatch(rel, g) for g in settings.exclude):
            continue
        path = Path(dist.locate_file(rel))
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError) as err:
            log.warning("corpus file %s skipped: %s", readable(str(path)), err)
            continue
        yield Document(
            doc_id=readable(rel), source=readable(str(path)), text=text
        )  # rel starts with the package's directory


def iter_pydoc_text() -> Iterator[Document]:
    """The pydoc topic texts (the Python reference documentation, as plain text)."""
    from pydoc_data.topics import topics

    for name in sorted(topics):
        yield Document(doc_id=f"pydoc/{name}", source="pydoc_data.topics", text=topics[name])


def iter_record_text(name: str, settings: CorpusEntry) -> Iterator[Document]:
    """General text of records in any layout the benchmark reader reads
    (``data.benchmarks``: JSONL, JSON, Parquet, CSV, a Hugging Face dataset
    streamed), its ``text`` field of each record, the first ``limit`` when
    given: a web corpus such as RefinedWeb for the training mix."""
    from leaktrace.data.benchmarks import record_texts, source_name

    if not settings.text:
        raise ValueError(f"corpus {name}: a records corpus needs `text`, the field holding each document's text")
    records = BenchmarkEntry(
        format=settings.format,
        path=settings.path,
        dataset=settings.dataset,
        config=settings.config,
        split=settings.split,
        revision=settings.revision,
    )
    where = source_name(records)
    for label, text in record_texts(records, settings.text, settings.limit):
        yield Document(doc_id=f"{name}/{label}", source=where, text=text)


CORPUS_SOURCES = {
    "stdlib": iter_stdlib_code,
    "pydoc": iter_pydoc_text,
    "records": iter_record_text,
    "package": iter_package_code,
}


def fingerprint(documents: Sequence[Document]) -> str:
    """SHA-256 of every document's id and text, in order: the content a
    corpus read from an interpreter has, to pin it (``corpora.<name>.sha256``)."""
    digest = hashlib.sha256()
    for doc in documents:
        for part in (doc.doc_id, doc.text):
            data = part.encode("utf-8", "surrogatepass")
            digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def corpus_documents(name: str, settings: CorpusEntry) -> list[Document]:
    """All documents of a configured corpus (``corpora.<name>``), read from its
    source; with ``sha256`` in its settings, only if their fingerprint is that
    one (another Python release's standard library is another corpus)."""
    source = settings.source
    if source not in CORPUS_SOURCES:
        raise ValueError(f"corpus {name}: unknown source {source!r}; known: {sorted(CORPUS_SOURCES)}")
    kwargs = (
        {"exclude": settings.exclude}
        if source == "stdlib"
        else {"name": name, "settings": settings}
        if source in ("records", "package")
        else {}
    )
    documents = list(CORPUS_SOURCES[source](**kwargs))
    if not documents:
        raise ValueError(f"corpus {name}: source {source!r} yielded no documents")
    digest = fingerprint(documents)
    log.info("corpus %s: %d documents, sha256 %s", name, len(documents), digest)
    if settings.sha256 and settings.sha256 != digest:
        raise ValueError(
            f"corpus {name}: this interpreter's {source} has sha256 {digest}, the config pins "
            f"{settings.sha256}: another Python release gives another corpus"
        )
    return documents


def shard(documents: Sequence[Document], n_shards: int) -> list[list[Document]]:
    """Round-robin sharding: balanced sizes, and stable for a fixed document order."""
    if n_shards < 1:
        raise ValueError(f"n_shards must be at least 1, got {n_shards}")
    shards: list[list[Document]] = [[] for _ in range(n_shards)]
    for i, doc in enumerate(documents):
        shards[i % n_shards].append(doc)
    return shards
