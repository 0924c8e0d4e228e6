"""Corpus sources, streamed one shard at a time, and the accounting of every
document that is not scanned.

Kinds: ``corpus`` (an ingested testbed corpus shard, Parquet with doc_id,
source, text), ``training_mix`` (the testbed's training mix), ``files`` (a
directory glob of source files), ``jsonl`` and ``parquet`` (files with a
content column), ``huggingface`` (a dataset id, streamed with ``datasets``,
imported only when used). Sharding is deterministic: files, JSONL lines and
Parquet row groups go round-robin to ``n_parts`` shards; a Hugging Face
dataset's files (its shards) go round-robin to the parts too, so each file is
streamed by one job whatever the number of jobs (``datasets`` alone, given a
number of jobs that does not divide its files, has every job stream every
file and keep one example in ``n_parts``); with more jobs than files the jobs
past the last file have nothing to read, and say so.

A corpus is dirty, and one bad file must not cost a scan its other results,
so every problem with a document or a file of a corpus is a skip, counted per
reason (:data:`SKIP_REASONS`) and logged with the file, never a crash and
never a silent drop. What stays an :class:`InputError` is what makes the
whole scan meaningless: a root that is not a directory, globs that match
nothing, a content column the data does not have, a pipeline artifact
(``corpus``, ``training_mix``) that cannot be read. Names that UTF-8 cannot
hold are kept escaped (:func:`~leaktrace.data.names.readable`).

Nothing outside the corpus is read. A ``files`` corpus is its ``root``; a
``jsonl``/``parquet`` glob's corpus is its longest directory without
wildcards (a path named without wildcards is its own root). A link whose
target (every link resolved) lies outside that root is skipped
(``outside_root``) and a link to a directory is not walked, unless the
corpus sets ``follow_links: true``: then file links are read wherever they
lead and links to directories outside the root are walked once each (not
links found inside them, nor one whose target holds the root: no loops,
no file twice). Whatever the option, ``/proc``, ``/sys`` and ``/dev``
(``system_path``), device files, FIFOs and sockets (``not_regular``) are
never opened; a file is opened non-blocking and checked again as a regular
file on its descriptor, so a FIFO put in a file's place cannot hang a scan.

Memory: a ``files`` document is sized with ``stat`` before it is read; one
above ``max_bytes`` is never read here (:class:`LargeFile`: skipped unread
under ``huge: skip``, classified and windowed from disk by the scan under
``chunk``). A JSONL line is one record and is read whole only when it is this
shard's and not above ``max_bytes`` under ``skip``; other lines are stepped
over in blocks. Parquet is decoded one record batch at a time, while pyarrow
holds the compressed column chunks of the row group being read.

What each shard job will read is known before it runs (:func:`part_shares`,
from file sizes and Parquet footers), so that a cluster job asks for the time
and memory of its own share (rules/cluster.smk, ``scan_job``).
"""

from __future__ import annotations

import codecs
import errno
import fnmatch
import json
import logging
import os
import stat
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from leaktrace.data.digests import DigestCache, file_entry
from leaktrace.data.names import readable
from leaktrace.errors import InputError, json_position, utf8_position

log = logging.getLogger(__name__)

SOURCE_KINDS = ("corpus", "training_mix", "files", "jsonl", "parquet", "huggingface")
SKIP_REASONS = (
    "empty",
    "binary",
    "non_utf8",
    "huge",
    "too_short",
    "bad_record",  # a document's content
    "unreadable",
    "not_regular",
    "dangling_link",
    "symlink_loop",
    "outside_root",
    "system_path",  # a file
    "unreadable_directory",
    "linked_directory",
    "not_parquet",  # a directory or a whole file of records
)
BLOCK = 64 << 10  # bytes read at a time when a file is streamed
PARQUET_BATCH = 1024  # rows read at a time from a Parquet row group
SYSTEM_ROOTS = ("/proc", "/sys", "/dev")  # pseudo-files and devices: never read, whatever follow_links says


def _inside(path: str, root: str) -> bool:
    """Whether the resolved ``path`` is ``root`` or lies below it (both resolved)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _system(real: str) -> bool:
    return any(_inside(real, r) for r in SYSTEM_ROOTS)


def open_regular(path: Path | str) -> BinaryIO:
    """``path`` opened for reading only if it is a regular file: opened
    non-blocking (a FIFO does not wait for a writer) and checked on the
    descriptor, so a file swapped for a FIFO or a device after it was
    checked is refused (``OSError``, errno ``EINVAL``) instead of read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@dataclass(frozen=True)
class LargeFile:
    """A corpus file above ``max_bytes``, known by its ``stat`` size: never read whole."""

    path: Path
    size: int

    def problem(self) -> str | None:
        """Why the file is not scanned (``empty``, ``binary``, ``non_utf8``,
        ``unreadable``), decided as :func:`check_document` decides for bytes,
        reading the file one block at a time; None if it is scanned."""
        decoder = codecs.getincrementaldecoder("utf-8")()
        text = binary = utf8_error = False
        try:
            with open_regular(self.path) as fh:
                while block := fh.read(BLOCK):
                    text = text or bool(block.strip())
                    binary = binary or b"\x00" in block
                    if text and binary:
                        break
                    if not utf8_error:
                        try:
                            decoder.decode(block)
                        except UnicodeDecodeError:
                            utf8_error = True
                if not (utf8_error or binary):
                    decoder.decode(b"", final=True)
        except UnicodeDecodeError:  # the file ends inside a character
            utf8_error = True
        except OSError as err:
            log.warning("unreadable %s: %s", readable(str(self.path)), err.strerror)
            return "unreadable"
        if not text:
            return "empty"
        return "binary" if binary else "non_utf8" if utf8_error else None


@dataclass(frozen=True)
class RawDocument:
    doc_id: str
    location: str  # a path, or where in the source the record is
    data: str | bytes | LargeFile


def check_document(data: object, max_bytes: int, huge_policy: str) -> tuple[str | LargeFile | None, str | None]:
    """(text, None) if the document is scanned, else (None, skip reason). A
    :class:`LargeFile` comes back as itself, for the scan to window from disk;
    content that is neither text nor bytes (a number or a list in a JSONL,
    Parquet or Hugging Face record) is a ``bad_record``."""
    if isinstance(data, LargeFile):
        if huge_policy == "skip":
            return None, "huge"
        reason = data.problem()
        return (None, reason) if reason else (data, None)
    if isinstance(data, bytes):
        if not data.strip():
            return None, "empty"
        if b"\x00" in data:
            return None, "binary"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None, "non_utf8"
        size = len(data)
    elif isinstance(data, str):
        if not data.strip():
            return None, "empty"
        if "\x00" in data:
            return None, "binary"
        try:
            size = len(data.encode("utf-8"))
        except UnicodeEncodeError:  # lone surrogates: not representable as UTF-8
            return None, "non_utf8"
        text = data
    else:
        return None, "bad_record"
    if size > max_bytes and huge_policy == "skip":
        return None, "huge"
    return text, None


def _matches(parts: tuple[str, ...], pattern: tuple[str, ...], prefix: bool = False) -> bool:
    """Whether the relative path ``parts`` matches the glob ``pattern`` (``**``
    any number of directories, other parts ``fnmatch``, case-sensitive), or,
    with ``prefix``, whether a path below directory ``parts`` could."""
    if not parts:
        return prefix or not pattern
    if not pattern:
        return False
    if pattern[0] == "**":
        return prefix or any(_matches(parts[i:], pattern[1:]) for i in range(len(parts)))
    return fnmatch.fnmatchcase(parts[0], pattern[0]) and _matches(parts[1:], pattern[1:], prefix)


def _walk(root: Path, pattern: tuple[str, ...], follow_links: bool = False) -> list[tuple[Path, str | None]]:
    """Every entry under ``root`` a document could come from, sorted: (path,
    None) for a non-directory that matches ``pattern``, (path, reason) for a
    directory the walk cannot enter although matches could lie below it:
    ``unreadable_directory``, ``system_path``, or ``linked_directory``. Links
    to directories are not followed (a loop cannot trap the scan or repeat
    its files, as it does ``glob.glob``, and a tree outside the root is not
    the corpus); with ``follow_links``, one whose target lies outside the
    root, neither holds the root nor overlaps a tree already walked, is
    walked as if it were a directory of the root, links inside it again not
    followed. Unlike ``Path.glob``, which drops unreadable directories
    silently, nothing is lost unseen."""
    entries: list[tuple[Path, str | None]] = []
    links: list[tuple[Path, tuple[str, ...]]] = []

    def unreadable(err: OSError) -> None:
        if _matches(Path(err.filename).relative_to(root).parts, pattern, prefix=True):
            log.warning("unreadable directory %s: %s", readable(err.filename), err.strerror)
            entries.append((Path(err.filename), "unreadable_directory"))

    def walk(top: Path, base: tuple[str, ...]) -> None:
        for dirpath, dirnames, filenames in os.walk(top, onerror=unreadable):
            here = base + Path(dirpath).relative_to(top).parts
            for name in dirnames:
                if os.path.islink(os.path.join(dirpath, name)) and _matches(here + (name,), pattern, prefix=True):
                    links.append((Path(dirpath, name), here + (name,)))
            dirnames[:] = [
                d
                for d in dirnames
                if not os.path.islink(os.path.join(dirpath, d)) and _matches(here + (d,), pattern, prefix=True)
            ]
            entries.extend((Path(dirpath, name), None) for name in filenames if _matches(here + (name,), pattern))

    walk(root, ())
    found, links = sorted(links), []
    real_root, walked = os.path.realpath(root), []
    for link, parts in found:
        target = os.path.realpath(link)
        if _system(target):
            entries.append((link, "system_path"))
        elif (
            follow_links
            and not _inside(target, real_root)
            and not _inside(real_root, target)
            and not any(_inside(target, t) or _inside(t, target) for t in walked)
        ):
            walked.append(target)
            walk(link, parts)
        else:
            entries.append((link, "linked_directory"))
    return sorted(entries + [(link, "linked_directory") for link, _ in links])


def glob_root(pattern: str) -> tuple[Path, str]:
    """A glob's root, its longest directory without wildcards (the path itself
    when it has none; ``.`` when its first part has one), and the rest of it."""
    parts = PurePosixPath(pattern).parts
    fixed = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[")), len(parts))
    return Path(*parts[:fixed]), "/".join(parts[fixed:])


def _expand(pattern: str, follow_links: bool = False) -> tuple[Path, list[tuple[Path, str | None]]]:
    """A glob's root (:func:`glob_root`) and its matches as :func:`_walk` expands them."""
    root, rest = glob_root(pattern)
    if not rest:
        return root, [(root, None)] if os.path.lexists(root) else []
    return root, _walk(root, PurePosixPath(rest).parts, follow_links) if root.is_dir() else []


def glob_has_match(root: Path | None, pattern: str) -> bool:
    """Whether at least one file matches: ``pattern`` under ``root`` (a
    ``files`` corpus), or, with ``root`` None, the glob ``pattern`` itself
    (a ``jsonl``/``parquet`` path). Stops at the first file (planning checks
    it: leaktrace/plan_checks.py); links to directories are not walked, as
    in :func:`_walk`."""
    if root is None:
        root, pattern = glob_root(pattern)
        if not pattern:
            return os.path.isfile(root)
    if not root.is_dir():
        return False
    glob = PurePosixPath(pattern).parts
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath).relative_to(root).parts
        if any(_matches(here + (name,), glob) and os.path.isfile(os.path.join(dirpath, name)) for name in filenames):
            return True
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not os.path.islink(os.path.join(dirpath, d)) and _matches(here + (d,), glob, prefix=True)
        )
    return False


def _problem_name(problem: str) -> str:
    return problem.replace("_", " ")


def _file_problem(path: Path, root: str, follow_links: bool) -> tuple[os.stat_result | None, str | None, str]:
    """The file's ``stat`` (links followed), or why it cannot be a document,
    and its resolved path. ``root`` is the corpus root, resolved: a link that
    leads out of it is ``outside_root`` unless ``follow_links``."""
    try:
        path.stat()
    except FileNotFoundError:
        return None, "dangling_link" if path.is_symlink() else "unreadable", str(path)
    except OSError as err:
        return None, "symlink_loop" if err.errno == errno.ELOOP else "unreadable", str(path)
    real = os.path.realpath(path)
    if _system(real):
        return None, "system_path", real
    if not follow_links and not _inside(real, root):
        return None, "outside_root", real
    try:
        st = os.stat(real)
    except OSError:
        return None, "unreadable", real
    return (st, None, real) if stat.S_ISREG(st.st_mode) else (None, "not_regular", real)


def _log_skip(problem: str, path: Path, real: str) -> None:
    if problem == "outside_root":
        log.warning(
            "%s leads outside the corpus root (to %s): skipped unread (the corpus's follow_links: true reads it)",
            readable(str(path)),
            readable(real),
        )
    elif problem == "system_path":
        log.warning("%s is or leads into %s: skipped unread", readable(str(path)), readable(real))
    elif problem not in ("unreadable", "unreadable_directory"):  # those are logged with their cause
        log.warning("%s %s skipped", _problem_name(problem), readable(str(path)))


def _globbed(
    patterns: list[str], what: str, part: int, n_parts: int, skips: Counter, follow_links: bool = False
) -> list[tuple[Path, str]]:
    """The regular files the globs match, sorted, each with its resolved path
    (the one to open); every other match (a dangling link, a link loop, a
    link out of its glob's root, a FIFO, an unreadable directory, ...) is
    counted as a skip by shard ``k % n_parts`` of its place ``k`` in the list."""
    found: dict[Path, tuple[str | None, str]] = {}
    for pattern in patterns:
        root, matches = _expand(pattern, follow_links)
        real_root = os.path.realpath(root)
        if _system(real_root):
            raise InputError(pattern, None, f"the corpus lies in {', '.join(SYSTEM_ROOTS)}: never read")
        found.update((path, (problem, real_root)) for path, problem in matches)
    if not found:
        raise InputError(", ".join(patterns), None, f"no {what} files match")
    files = []
    for k, (path, (problem, real_root)) in enumerate(sorted(found.items())):
        real = str(path)
        if problem is None:
            _, problem, real = _file_problem(path, real_root, follow_links)
        if problem is None:
            files.append((path, real))
        elif k % n_parts == part:
            _log_skip(problem, path, real)
            skips[problem] += 1
    return files


LOCAL_KINDS = ("files", "jsonl", "parquet")  # the kinds whose files a digest tracks (leaktrace/data/digests.py)


def source_entries(source: dict, cache: DigestCache) -> list[dict]:
    """Every file a ``files``/``jsonl``/``parquet`` source's scan meets, as it
    lists them (names relative to a ``files`` root, else as matched), with its
    size and SHA-256, or the reason it is skipped unread: a rerun sees a file
    added, removed, changed or turned into a skip. Nothing is returned for a
    root or glob with no file (the planning checks name it)."""
    follow_links = bool(source.get("follow_links", False))
    if source["kind"] == "files":
        root = Path(source["root"])
        if not root.is_dir():
            return []
        listed = [
            (path, path.relative_to(root).as_posix(), problem, os.path.realpath(root))
            for path, problem in _walk(root, PurePosixPath(source.get("glob", "**/*")).parts, follow_links)
        ]
    else:
        found = {}
        for pattern in source["paths"]:
            root, matches = _expand(pattern, follow_links)
            found.update((path, (problem, os.path.realpath(root))) for path, problem in matches)
        listed = [(path, str(path), problem, real_root) for path, (problem, real_root) in sorted(found.items())]
    entries, regular = [], []
    for path, name, problem, real_root in listed:
        real = None
        if problem is None:
            _, problem, real = _file_problem(path, real_root, follow_links)
        if problem is None:
            regular.append(real)
        entries.append((readable(name), problem, real))
    cache.announce(f"corpus {source.get('root') or ', '.join(source['paths'])}", regular)
    out = []
    for name, problem, real in entries:
        if problem is None:
            try:
                out.append(file_entry(real, cache, name))
                continue
            except OSError:
                problem = "unreadable"
        out.append({"name": name, "skipped": problem})
    return out


def _file_docs(source: dict, part: int, n_parts: int, skips: Counter, max_bytes: int | None) -> Iterator[RawDocument]:
    root = Path(source["root"])
    if not root.is_dir():
        raise InputError(str(root), None, "corpus root is not a directory")
    real_root, follow_links = os.path.realpath(root), bool(source.get("follow_links", False))
    if _system(real_root):
        raise InputError(str(root), None, f"the corpus root lies in {', '.join(SYSTEM_ROOTS)}: never read")
    entries = _walk(root, PurePosixPath(source.get("glob", "**/*")).parts, follow_links)
    if not entries:
        raise InputError(str(root), None, f"no files match {source.get('glob', '**/*')!r}")
    for k, (path, problem) in enumerate(entries):
        if k % n_parts != part:
            continue
        rel = path.relative_to(root).as_posix()
        name = readable(rel)
        if name != rel:
            log.warning("file name %s is not UTF-8: recorded with escapes", name)
        st, real = None, str(path)
        if problem is None:
            st, problem, real = _file_problem(path, real_root, follow_links)
        if problem is None and max_bytes is not None and st.st_size > max_bytes:
            yield RawDocument(name, readable(str(path)), LargeFile(Path(real), st.st_size))
            continue
        if problem is None:
            try:
                with open_regular(real) as fh:  # read at most max_bytes + 1: a file that grew since stat stays bounded
                    data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
            except OSError as err:
                if err.errno == errno.EINVAL:  # swapped for a FIFO or a device since it was checked
                    problem = "not_regular"
                else:
                    log.warning("unreadable %s: %s", readable(str(path)), err.strerror)
                    problem = "unreadable"
            else:
                if max_bytes is not None and len(data) > max_bytes:
                    data = LargeFile(Path(real), len(data))
                yield RawDocument(name, readable(str(path)), data)
                continue
        _log_skip(problem, path, real)
        skips[problem] += 1


def _why_not_json(err: Exception, line: bytes, lineno: int) -> str:
    """Why line ``lineno`` is no JSON, with the line and column where the decoder's own
    message would count in the one line it was given ("line 1") or in bytes."""
    if isinstance(err, json.JSONDecodeError):
        return json_position(err, lineno)
    if isinstance(err, UnicodeDecodeError) and err.encoding == "utf-8":
        return f"not UTF-8: {utf8_position(line, err, lineno)}"
    return "nested too deeply" if isinstance(err, RecursionError) else str(err)


def _read_line(fh: BinaryIO, cap: int | None) -> tuple[bytes | None, int]:
    """The next line and its size; the line is None when it is longer than
    ``cap`` bytes: then it was stepped over in blocks, never held. (b"", 0) at the end."""
    line = fh.readline() if cap is None else fh.readline(cap + 1)
    if cap is None or len(line) <= cap:
        return line, len(line)
    size = len(line)
    while not line.endswith(b"\n"):
        line = fh.readline(BLOCK)
        if not line:
            break
        size += len(line)
    return None, size


def _jsonl_docs(
    source: dict, part: int, n_parts: int, skips: Counter, max_bytes: int | None, huge: str
) -> Iterator[RawDocument]:
    """Lines of the JSONL files, round-robin over all files' lines. A line
    that is not a JSON object (malformed, not UTF-8, nested deeper than
    ``json`` follows) is a ``bad_record``; under ``huge: skip`` a line above
    ``max_bytes`` is a ``huge`` record, skipped unread."""
    content, id_column = source["content"], source.get("id")
    cap = max_bytes if huge == "skip" else None
    line_no = 0
    for path, real in _globbed(source["paths"], "JSONL", part, n_parts, skips, bool(source.get("follow_links", False))):
        where = readable(str(path))
        try:
            fh = open_regular(real)
        except OSError as err:
            log.warning("unreadable %s: %s", where, err.strerror)
            skips["unreadable"] += int(line_no % n_parts == part)
            continue
        with fh:
            k = 0
            while True:
                mine = line_no % n_parts == part
                try:
                    line, size = _read_line(fh, cap if mine else 0)
                except OSError as err:
                    log.warning(
                        "%s, line %d: read error (%s); the rest of the file is counted as unreadable",
                        where,
                        k + 1,
                        err.strerror,
                    )
                    skips["unreadable"] += int(mine)
                    break
                if size == 0:
                    break
                line_no, k = line_no + 1, k + 1
                if not mine:
                    continue
                if line is None:
                    log.warning("%s, line %d: %d bytes, above max_bytes; counted as huge", where, k, size)
                    skips["huge"] += 1
                    continue
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError) as err:  # JSONDecodeError, UnicodeDecodeError, int digits, nesting
                    log.warning(
                        "%s, line %d: not a JSON record (%s); counted as bad_record",
                        where,
                        k,
                        _why_not_json(err, line, k),
                    )
                    skips["bad_record"] += 1
                    continue
                if not isinstance(record, dict):
                    log.warning("%s, line %d: not a JSON object; counted as bad_record", where, k)
                    skips["bad_record"] += 1
                    continue
                if content not in record:  # the config names a field the data does not have
                    raise InputError(where, k, f"record has no content field {content!r}")
                doc_id = (
                    readable(str(record[id_column]))
                    if id_column and id_column in record
                    else f"{readable(path.name)}:{k}"
                )
                yield RawDocument(doc_id, f"{where}:{k}", record[content])


def _open_parquet(
    path: Path, dirty: bool, skips: Counter, count: bool, real: str | None = None
) -> pq.ParquetFile | None:
    """The file opened (at ``real``, its resolved path, when given), or, in a
    dirty corpus, None when it is not Parquet (counted once, by the shard
    ``count`` names); in a pipeline artifact that is an error."""
    try:
        return pq.ParquetFile(real or path)
    except (pa.ArrowException, OSError, UnicodeDecodeError) as err:  # the last: a corrupt column name
        if not dirty:
            raise InputError(str(path), None, f"not a readable Parquet file: {err}") from None
        if count:
            log.warning("%s is not a readable Parquet file (%s); counted as not_parquet", readable(str(path)), err)
            skips["not_parquet"] += 1
        return None


def _parquet_docs(
    pf: pq.ParquetFile,
    path: Path,
    content: str,
    id_column: str | None,
    location: str | None,
    part: int,
    n_parts: int,
    skips: Counter,
    dirty: bool,
    start_unit: int = 0,
) -> Iterator[RawDocument]:
    names = pf.schema_arrow.names
    for column in (content, id_column, location):
        if column and column not in names:
            raise InputError(str(path), None, f"no column {column!r} (columns: {', '.join(names)})")
    columns = [c for c in dict.fromkeys([content, id_column, location]) if c]
    where_file, name = readable(str(path)), readable(path.name)
    row = 0
    for rg in range(pf.num_row_groups):
        n = pf.metadata.row_group(rg).num_rows
        if (start_unit + rg) % n_parts == part:
            k = row
            try:
                for batch in pf.iter_batches(batch_size=PARQUET_BATCH, row_groups=[rg], columns=columns):
                    texts = batch.column(content).to_pylist()
                    ids = batch.column(id_column).to_pylist() if id_column else None
                    where = batch.column(location).to_pylist() if location else None
                    for j, text in enumerate(texts):
                        doc_id = readable(str(ids[j])) if ids else f"{name}#{k + j}"
                        yield RawDocument(
                            doc_id,
                            readable(str(where[j])) if where else f"{where_file}#{k + j}",
                            text if text is not None else "",
                        )
                    k += len(texts)
            except (pa.ArrowException, OSError, UnicodeDecodeError) as err:  # the last: a corrupt string column
                if not dirty:
                    raise InputError(str(path), f"row group {rg}", f"unreadable: {err}") from None
                log.warning(
                    "%s, row group %d: unreadable (%s); its %d unread rows counted as unreadable",
                    where_file,
                    rg,
                    err,
                    row + n - k,
                )
                skips["unreadable"] += row + n - k
        row += n


def iter_source(
    source: dict,
    part: int,
    n_parts: int,
    inputs: list[Path],
    skips: Counter,
    *,
    max_bytes: int | None = None,
    huge: str = "chunk",
) -> Iterator[RawDocument]:
    """The documents of shard ``part`` of ``n_parts`` of a configured source.
    ``inputs`` are the pipeline artifacts a ``corpus`` or ``training_mix``
    source reads (the ingested shard, the mix). With ``max_bytes``, a file
    or JSONL line above it is not read whole (see the module's docstring)."""
    kind = source["kind"]
    if kind == "corpus":
        for path in inputs:
            yield from _parquet_docs(
                _open_parquet(path, False, skips, True), path, "text", "doc_id", "source", 0, 1, skips, dirty=False
            )
    elif kind == "training_mix":
        for path in inputs:
            docs = _parquet_docs(
                _open_parquet(path, False, skips, True), path, "text", "source_id", "kind", 0, 1, skips, dirty=False
            )
            for k, doc in enumerate(docs):
                if k % n_parts == part:
                    yield RawDocument(doc.doc_id, f"training-mix:{doc.location}:{k}", doc.data)
    elif kind == "files":
        yield from _file_docs(source, part, n_parts, skips, max_bytes)
    elif kind == "jsonl":
        yield from _jsonl_docs(source, part, n_parts, skips, max_bytes, huge)
    elif kind == "parquet":
        unit = 0
        follow_links = bool(source.get("follow_links", False))
        for k, (path, real) in enumerate(_globbed(source["paths"], "Parquet", part, n_parts, skips, follow_links)):
            pf = _open_parquet(path, True, skips, count=k % n_parts == part, real=real)
            if pf is None:
                continue
            yield from _parquet_docs(
                pf,
                path,
                source["content"],
                source.get("id"),
                source.get("location"),
                part,
                n_parts,
                skips,
                dirty=True,
                start_unit=unit,
            )
            unit += pf.num_row_groups
    elif kind == "huggingface":
        yield from _huggingface_docs(source, part, n_parts)
    else:
        raise ValueError(f"unknown corpus source kind {kind!r}; known: {', '.join(SOURCE_KINDS)}")


@dataclass(frozen=True)
class PartShare:
    """What one shard job of a scan reads: ``bytes`` of corpus text, and
    ``held``, the most bytes of its Parquet input held at once (a row group's
    compressed column chunks and one decoded batch; 0 for files and JSONL,
    read a document at a time)."""

    bytes: int
    held: int


def part_shares(source: dict, n_parts: int) -> list[PartShare] | None:
    """What each of the ``n_parts`` shard jobs of a ``files``, ``jsonl`` or
    ``parquet`` source reads, by the sharding :func:`iter_source` uses: a
    ``files`` job the sizes of its files (file *k* of the walk to job *k* mod
    n), a ``parquet`` job the uncompressed bytes of the content column of its
    row groups (row group *k* of the glob to job *k* mod n, from the footers; a
    file that is not Parquet is skipped, as the scan skips it), a ``jsonl``
    job an equal share of all the files' bytes (lines go round-robin; the
    lines it steps over are not counted). None for the other kinds: a
    pipeline artifact (``corpus``, ``training_mix``) is an input of the job,
    sized as one, and a hub dataset's size is not known offline."""
    follow_links = bool(source.get("follow_links", False))
    shares = [[0, 0] for _ in range(n_parts)]
    kind = source["kind"]
    if kind == "files":
        root = Path(source["root"])
        real_root = os.path.realpath(root)
        for k, (path, problem) in enumerate(_walk(root, PurePosixPath(source.get("glob", "**/*")).parts, follow_links)):
            st = _file_problem(path, real_root, follow_links)[0] if problem is None else None
            shares[k % n_parts][0] += st.st_size if st is not None else 0
    elif kind == "jsonl":
        files = _globbed(source["paths"], "JSONL", -1, n_parts, Counter(), follow_links)
        total = sum(os.stat(real).st_size for _, real in files)
        shares = [[-(-total // n_parts), 0] for _ in range(n_parts)]
    elif kind == "parquet":
        columns = [c for c in dict.fromkeys([source["content"], source.get("id"), source.get("location")]) if c]
        unit = 0
        for _, real in _globbed(source["paths"], "Parquet", -1, n_parts, Counter(), follow_links):
            try:
                meta = pq.ParquetFile(real).metadata
            except (pa.ArrowException, OSError, UnicodeDecodeError):
                continue  # the scan skips it (not_parquet)
            index = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
            for rg in range(meta.num_row_groups):
                group = meta.row_group(rg)
                chunks = [group.column(index[c]) for c in columns if c in index]
                text = (
                    group.column(index[source["content"]]).total_uncompressed_size
                    if source["content"] in index
                    else group.total_byte_size
                )
                read = sum(c.total_uncompressed_size for c in chunks)
                batch = read * min(PARQUET_BATCH, group.num_rows) // max(group.num_rows, 1)
                share = shares[unit % n_parts]
                share[0] += text
                share[1] = max(share[1], sum(c.total_compressed_size for c in chunks) + batch)
                unit += 1
    else:
        return None
    return [PartShare(size, held) for size, held in shares]


def _huggingface_docs(source: dict, part: int, n_parts: int) -> Iterator[RawDocument]:
    try:
        import datasets
        from datasets.distributed import split_dataset_by_node
    except ImportError as err:
        raise InputError(
            source["dataset"],
            None,
            "a huggingface corpus source needs the `datasets` package "
            "(pinned in requirements.lock: pip install -c requirements.lock datasets)",
        ) from err
    ds = datasets.load_dataset(
        source["dataset"],
        name=source.get("config"),
        data_dir=source.get("data_dir"),
        split=source.get("split") or "train",
        streaming=True,
        revision=source.get("revision"),
    )
    files = ds.num_shards
    if part >= files:
        log.warning(
            "%s has %d files and this scan %d parts: part %d has no file to read (at most %d parts have work)",
            source["dataset"],
            files,
            n_parts,
            part,
            files,
        )
        return
    ds = split_dataset_by_node(ds, rank=part, world_size=min(n_parts, files), strategy="shards")
    content, id_column, location = source["content"], source.get("id"), source.get("location")
    for k, record in enumerate(ds):
        if content not in record:
            raise InputError(source["dataset"], k, f"record has no content field {content!r}")
        doc_id = readable(str(record[id_column])) if id_column else f"{source['dataset']}:{part}:{k}"
        where = readable(str(record[location])) if location else f"hf://{source['dataset']}#{part}:{k}"
        yield RawDocument(doc_id, where, record[content] if record[content] is not None else "")
