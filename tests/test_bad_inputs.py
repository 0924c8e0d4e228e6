"""Inputs that never crash a stage.

Ingest of a benchmark: every bad file or record is an InputError naming the
file and the line (a benchmark must be whole). Scan of a corpus: every bad
document or file is a skip counted with its reason (corpora are dirty), and a
huge file is never held whole: memory stays at ``max_bytes`` plus one batch.
Each demonstrated crash is a case here; hypothesis fuzzes both readers."""

import gzip
import json
import os
import tempfile
import tracemalloc
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from leaktrace.artifacts import read_records
from leaktrace.data import humaneval
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.errors import InputError
from leaktrace.leakage import sources, units
from leaktrace.leakage.settings import scan_slice
from leaktrace.leakage.sources import LargeFile, check_document, iter_source
from leaktrace.leakage.units import huge_units
from leaktrace.settings.ingest import BenchmarkEntry
from leaktrace.stages.ingest import ingest_benchmark
from leaktrace.stages.leakage import build_index, scan_shard

GOOD = {
    "task_id": "T/0",
    "prompt": 'def area(r):\n    """Area of a square."""\n',
    "canonical_solution": "    return r * r\n",
    "test": "def check(candidate):\n    assert candidate(2) == 4\n",
    "entry_point": "area",
}
FUZZ = settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])  # deadline, database: conftest.py


def good_line(**fields) -> bytes:
    return json.dumps(dict(GOOD, **fields)).encode() + b"\n"


def nested_code(kind: str) -> str:
    """Code deeper than Python's parser (MemoryError / RecursionError) or compiler (RecursionError) follows."""
    depth = {
        "parser-memory": "-" * 100_000 + "r",
        "parser-recursion": "r+" * 100_000 + "r",
        "compiler": "r+" * 1_500 + "r",
    }
    return f"    return {depth[kind]}\n"


# --- ingest: a bad benchmark is an InputError naming the file and the line ---

BAD_BENCHMARKS = {
    "non-UTF-8 line": (
        good_line() + b'{"task_id": "caf\xe9"}\n',
        r"record line 2: not UTF-8 \(byte 0xe9 at line 2, column 17\)",
    ),
    "binary file": (
        b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)),
        r"record line 1: binary data \(a NUL byte at column 8\)",
    ),
    "deeply nested JSON": (
        good_line() + b"[" * 100_000 + b"]" * 100_000 + b"\n",
        r"record line 2: JSON nested too deeply to decode",
    ),
    "integer too long": (b'{"task_id": ' + b"9" * 5000 + b"}\n", r"record line 1: malformed JSON \(Exceeds the limit"),
    "code nested past the parser (MemoryError)": (
        good_line(canonical_solution=nested_code("parser-memory")),
        r"record line 1 \(T/0\): code is nested too deeply for Python's parser",
    ),
    "code nested past the parser (RecursionError)": (
        good_line(canonical_solution=nested_code("parser-recursion")),
        r"record line 1 \(T/0\): code is nested too deeply for Python's parser",
    ),
    "code nested past the compiler": (
        good_line(canonical_solution=nested_code("compiler")),
        r"record line 1 \(T/0\): code is nested too deeply for Python's compiler",
    ),
    "code that parses but does not compile": (
        good_line(canonical_solution="    return r\nreturn 1\n"),
        r"record line 1 \(T/0\): code does not compile: 'return' outside function",
    ),
}


@pytest.mark.parametrize("case", BAD_BENCHMARKS)
def test_a_bad_benchmark_record_names_file_and_line(tmp_path, case):
    data, message = BAD_BENCHMARKS[case]
    path = tmp_path / "bench.jsonl"
    path.write_bytes(data)
    with pytest.raises(InputError, match=message) as err:
        load_humaneval(path, "b")
    assert err.value.file == str(path)


def test_lone_surrogate_is_named_with_its_field(tmp_path):
    path = tmp_path / "bench.jsonl"
    path.write_bytes(good_line(prompt="def area(r):\n    'x\ud800'\n"))  # json.dumps writes the surrogate as \ud800
    with pytest.raises(
        InputError, match=r"record line 1: field 'prompt' holds a lone surrogate \('\\ud800' at character 19\)"
    ):
        load_humaneval(path, "b")


def test_corrupt_gzip_is_an_error_at_the_line_it_stopped(tmp_path):
    packed = gzip.compress(b"".join(good_line(task_id=f"T/{i}") for i in range(200)))
    truncated = tmp_path / "truncated.jsonl.gz"
    truncated.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(
        InputError, match=r"truncated\.jsonl\.gz, record line \d+: corrupt gzip data: Compressed file ended"
    ):
        load_humaneval(truncated, "b")
    flipped = bytearray(packed)
    flipped[-8] ^= 0xFF  # the CRC
    (tmp_path / "flipped.gz").write_bytes(flipped)
    with pytest.raises(InputError, match=r"flipped\.gz, record line 201: corrupt gzip data: CRC check failed"):
        load_humaneval(tmp_path / "flipped.gz", "b")
    (tmp_path / "plain.gz").write_bytes(b"not gzip at all\n")
    with pytest.raises(
        InputError, match=r"plain\.gz, record line 1: malformed JSON"
    ):  # gzip is told by its magic bytes
        load_humaneval(tmp_path / "plain.gz", "b")
    (tmp_path / "packed.jsonl").write_bytes(gzip.compress(good_line()))  # and gunzipped whatever the name
    assert [s.task_id for s in load_humaneval(tmp_path / "packed.jsonl", "b")] == ["T/0"]


def test_a_path_that_is_not_a_regular_file_is_an_error(tmp_path):
    with pytest.raises(InputError, match="is a directory, not a benchmark file"):
        load_humaneval(tmp_path, "b")
    os.mkfifo(tmp_path / "fifo.jsonl")  # opening it would block forever
    with pytest.raises(InputError, match=r"fifo\.jsonl: is not a regular file"):
        load_humaneval(tmp_path / "fifo.jsonl", "b")
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
    with pytest.raises(
        InputError, match=r"loop\.jsonl: cannot read the benchmark file: Too many levels of symbolic links"
    ):
        load_humaneval(tmp_path / "loop.jsonl", "b")
    with pytest.raises(InputError, match=r"missing\.jsonl: benchmark file does not exist"):
        load_humaneval(tmp_path / "missing.jsonl", "b")


def test_a_record_without_line_breaks_is_never_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(humaneval, "MAX_RECORD_BYTES", 1000)
    path = tmp_path / "one-line.jsonl"
    path.write_bytes(good_line() + b"x" * 5000)
    with pytest.raises(InputError, match=r"record line 2: record longer than 1000 bytes"):
        load_humaneval(path, "b")


@FUZZ
@given(data=st.binary(max_size=400), packed=st.sampled_from(["plain", "gzip", "truncated gzip"]))
def test_fuzz_ingest_bytes(data, packed):
    if packed != "plain":
        data = gzip.compress(data)
        data = data[: len(data) * 2 // 3] if packed == "truncated gzip" else data
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "bench.jsonl")
        path.write_bytes(data)
        try:
            load_humaneval(path, "b")
        except InputError as err:
            assert err.file == str(path) and "\n" not in err.message


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(st.characters(codec=None)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
CODE = st.one_of(
    st.text(st.characters(codec=None), max_size=60),
    st.sampled_from(["    return r\n", "    return (\n", nested_code("compiler"), "    yield\n", "\x00"]),
)


@FUZZ
@given(
    records=st.lists(
        st.fixed_dictionaries(
            {
                "task_id": st.text(st.characters(codec=None), max_size=6),
                "prompt": st.just("def area(r):\n"),
                "canonical_solution": CODE,
                "test": st.text(max_size=10),
                "entry_point": st.sampled_from(["area", "other"]),
            },
            optional={"extra": JSON_VALUES},
        )
        | JSON_VALUES,
        max_size=4,
    )
)
def test_fuzz_ingest_records(records):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "bench.jsonl")
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        try:
            samples = load_humaneval(path, "b")
        except InputError as err:
            assert err.file == str(path) and (err.record is None or err.record.startswith("line "))
            return
        assert [s.task_id for s in samples] == [r["task_id"] for r in records]
        for s in samples:
            s.code.encode("utf-8")


def test_ingest_stage_writes_nothing_for_a_bad_benchmark(tmp_path):
    path = tmp_path / "bench.jsonl"
    path.write_bytes(good_line() + b"\xff\n")
    with pytest.raises(InputError, match="record line 2: not UTF-8"):
        ingest_benchmark("b", BenchmarkEntry(format="humaneval", path=str(path)), tmp_path / "out.parquet")
    assert not (tmp_path / "out.parquet").exists()


# --- scan: a bad corpus document or file is a counted skip; huge files stay bounded ---

HUMANEVAL_0 = load_humaneval(shipped_humaneval_path(), "humaneval")[0].code
SCAN = {
    "benchmark": "humaneval",
    "corpus": {"kind": "files", "root": "."},
    "granularity": "function",
    "max_bytes": 4096,
    "huge": "chunk",
    "batch_size": 8,
}


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """HumanEval's first five problems, ingested and indexed."""
    work = tmp_path_factory.mktemp("index")
    ingest_benchmark("humaneval", BenchmarkEntry(format="humaneval", limit=5), work / "bench.parquet")
    build_index("t", (work / "bench.parquet",), scan_slice(SCAN), work / "index.parquet")
    return work


def scan(index, tmp, source, parts=1, **settings):
    """Scan every part; the summed accounting {(kind, reason): count} and all pairs."""
    totals, pairs = Counter(), []
    for part in range(parts):
        pairs_out, accounting_out = Path(tmp, f"pairs-{part}.parquet"), Path(tmp, f"accounting-{part}.parquet")
        scan_shard(
            "t",
            index / "index.parquet",
            (index / "bench.parquet",),
            scan_slice({**SCAN, **settings, "corpus": source}),
            part,
            parts,
            pairs_out,
            accounting_out,
        )
        for r in read_records(accounting_out):
            totals[(r["kind"], r["reason"])] += r["count"]
        pairs += read_records(pairs_out)
    return totals, pairs


def skipped(totals):
    return {reason: n for (kind, reason), n in totals.items() if kind == "skip" and n}


def test_a_file_name_that_is_not_utf8_is_scanned_under_an_escaped_name(index, tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    with open(os.path.join(os.fsencode(root), b"caf\xe9.py"), "w", encoding="utf-8") as fh:
        fh.write(HUMANEVAL_0)
    totals, pairs = scan(index, tmp_path, {"kind": "files", "root": str(root), "glob": "*.py"})
    assert totals[("count", "documents")] == 1 and not skipped(totals)
    found = [(p["sample_id"], p["doc_id"], p["location"], p["clone_type"]) for p in pairs if p["duplicate"]]
    assert found == [("humaneval/HumanEval/0", "caf\\xe9.py", f"{root}/caf\\xe9.py", "type-1")]


def test_links_fifos_and_unreadable_directories_are_counted(index, tmp_path, monkeypatch):
    root = tmp_path / "corpus"
    (root / "other").mkdir(parents=True)
    (root / "locked").mkdir()
    (root / "a.py").write_text(HUMANEVAL_0)
    (root / "other" / "b.py").write_text("def b():\n    return 2\n")
    (root / "locked" / "hidden.py").write_text("def hidden():\n    return 3\n")
    (root / "loop.py").symlink_to(root / "loop.py")
    (root / "dangling.py").symlink_to(root / "nowhere.py")
    (root / "linked").symlink_to(root / "other")
    (root / "up").symlink_to(root)  # a directory loop: glob.glob would repeat every file 40 times through it
    os.mkfifo(root / "fifo.py")
    (root / "locked").chmod(0)
    if os.access(
        root / "locked", os.R_OK
    ):  # root ignores file modes: make the directory unreadable the way scandir sees it
        real_scandir = os.scandir

        def scandir(path="."):
            if os.fspath(path) == str(root / "locked"):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real_scandir(path)

        monkeypatch.setattr(os, "scandir", scandir)
    try:
        for parts in (1, 2):
            totals, pairs = scan(index, tmp_path, {"kind": "files", "root": str(root), "glob": "**/*.py"}, parts=parts)
            assert skipped(totals) == {
                "symlink_loop": 1,
                "dangling_link": 1,
                "not_regular": 1,
                "unreadable_directory": 1,
                "linked_directory": 2,
                "too_short": 1,
            }  # other/b.py
            assert totals[("count", "documents")] == 2  # a.py, other/b.py
            assert {p["doc_id"] for p in pairs if p["duplicate"]} == {"a.py"}
    finally:
        (root / "locked").chmod(0o755)


def test_globs_of_jsonl_paths_count_what_they_cannot_read(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.jsonl").write_text(json.dumps({"content": "x = 1"}) + "\n")
    (tmp_path / "d" / "up").symlink_to(tmp_path)
    (tmp_path / "dangling.jsonl").symlink_to(tmp_path / "nowhere")
    os.mkfifo(tmp_path / "fifo.jsonl")
    skips = Counter()
    docs = list(
        iter_source({"kind": "jsonl", "paths": [f"{tmp_path}/**/*.jsonl"], "content": "content"}, 0, 1, [], skips)
    )
    assert [d.data for d in docs] == ["x = 1"]
    assert skips == {"linked_directory": 1, "dangling_link": 1, "not_regular": 1}


def test_bad_jsonl_records_are_counted(index, tmp_path):
    lines = [
        json.dumps({"id": "good", "content": HUMANEVAL_0}).encode(),
        b"[" * 100_000 + b"]" * 100_000,  # nested deeper than json follows
        b'{"content": "unterminated',
        b'["not", "an", "object"]',
        json.dumps({"content": 42}).encode(),
        b'{"content": "caf\xe9"}',  # not UTF-8
        b'{"content": "x", "n": ' + b"9" * 5000 + b"}",  # an integer longer than Python converts
        json.dumps({"id": "odd\ud800", "content": HUMANEVAL_0}).encode(),  # a lone surrogate in the id
        json.dumps({"content": "x = '\ud800'"}).encode(),  # ... and in the content
    ]
    (tmp_path / "c.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    source = {"kind": "jsonl", "paths": [str(tmp_path / "c.jsonl")], "content": "content", "id": "id"}
    totals, pairs = scan(index, tmp_path, source, max_bytes=1 << 20)
    assert skipped(totals) == {"bad_record": 6, "non_utf8": 1}
    assert totals[("count", "documents")] == 4
    assert sorted(p["doc_id"] for p in pairs if p["duplicate"]) == ["good", "odd\\ud800"]


def test_a_file_that_is_not_parquet_is_counted_once(index, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pq.write_table(pa.table({"content": [HUMANEVAL_0, "y = 2", None]}), corpus / "a.parquet", row_group_size=1)
    (corpus / "b.parquet").write_text("PAR1 this is not parquet")
    pq.write_table(pa.table({"content": [1, 2]}), corpus / "c.parquet")  # content that is not text
    source = {"kind": "parquet", "paths": [str(corpus / "*.parquet")], "content": "content"}
    for parts in (1, 2):
        totals, pairs = scan(index, tmp_path, source, parts=parts)
        assert skipped(totals) == {"not_parquet": 1, "bad_record": 2, "empty": 1, "too_short": 1}  # y = 2
        assert {p["doc_id"] for p in pairs if p["duplicate"]} == {"a.parquet#0"}


def test_an_artifact_that_is_not_parquet_is_an_error(tmp_path):
    (tmp_path / "shard.parquet").write_text("not parquet")
    with pytest.raises(InputError, match=r"shard\.parquet: not a readable Parquet file"):
        list(iter_source({"kind": "corpus"}, 0, 1, [tmp_path / "shard.parquet"], Counter()))


def test_python_that_ast_cannot_build_is_compared_whole(index, tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    for kind in ("parser-memory", "parser-recursion"):
        (root / f"{kind}.py").write_text("def f(r):\n" + nested_code(kind))
    (root / "ok.py").write_text(HUMANEVAL_0)
    totals, pairs = scan(index, tmp_path, {"kind": "files", "root": str(root), "glob": "*.py"}, max_bytes=1 << 20)
    assert totals[("whole_file", "parse_error")] == 2 and totals[("count", "documents")] == 3
    assert {p["doc_id"] for p in pairs if p["duplicate"]} == {"ok.py"}


def peak_while(fn):
    """fn's result and the peak of Python allocations while it ran, in bytes."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def filler(size: int) -> str:
    """Top-level statements, about ``size`` bytes of them."""
    line = "".join(f"value_{k} = [{k}, {k + 1}, {k + 2}, {k + 3}, {k + 4}]\n" for k in range(100))
    return line * (size // len(line) + 1)


def test_a_huge_file_under_skip_is_never_read(index, tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "huge.py").write_text(filler(2 << 20))
    (root / "small.py").write_text(HUMANEVAL_0)
    (totals, pairs), peak = peak_while(
        lambda: scan(index, tmp_path, {"kind": "files", "root": str(root), "glob": "*.py"}, huge="skip")
    )
    assert skipped(totals) == {"huge": 1} and {p["doc_id"] for p in pairs if p["duplicate"]} == {"small.py"}
    assert peak < 512 << 10  # the 2 MB file would be 2 MB in memory


def test_a_huge_file_under_chunk_is_split_from_disk_never_parsed_whole(index, tmp_path, monkeypatch):
    """Every read of the file is one block (64 KiB) at most and every parse
    max_bytes at most (before: one read and one parse of the whole 1 MB file,
    hundreds of MB of syntax tree)."""
    sizes = {"read": [], "parse": []}
    real_open, real_parse = Path.open, units.ast.parse

    class Recorded:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def readline(self, limit=-1):
            line = self.handle.readline(limit)
            sizes["read"].append(len(line.encode("utf-8") if isinstance(line, str) else line))
            return line

        def read(self, limit=-1):
            data = self.handle.read(limit)
            sizes["read"].append(len(data))
            return data

    root = tmp_path / "corpus"
    root.mkdir()
    text = filler(512 << 10) + "\n" + HUMANEVAL_0 + "\n" + filler(512 << 10)
    (root / "huge.py").write_bytes(text.encode())
    monkeypatch.setattr(
        Path,
        "open",
        lambda self, *a, **kw: (
            Recorded(real_open(self, *a, **kw)) if root in self.parents else real_open(self, *a, **kw)
        ),
    )  # only the corpus file's reads (not the verifier's model file)
    real_open_regular = sources.open_regular
    monkeypatch.setattr(sources, "open_regular", lambda path: Recorded(real_open_regular(path)))
    monkeypatch.setattr(
        units.ast, "parse", lambda text, *a, **kw: sizes["parse"].append(len(text.encode())) or real_parse(text)
    )
    real_symtable = units._symtable.symtable  # the other way a file is parsed (units._outline)
    monkeypatch.setattr(
        units._symtable,
        "symtable",
        lambda text, *a: sizes["parse"].append(len(text.encode())) or real_symtable(text, *a),
    )
    totals, pairs = scan(index, tmp_path, {"kind": "files", "root": str(root), "glob": "*.py"})
    assert totals[("count", "chunked_units")] == 1 and not skipped(totals)
    def_line = text[: text.index("def has_close_elements")].count("\n") + 1
    found = [
        (p["sample_id"], p["unit"], p["start_line"], p["end_line"], p["clone_type"]) for p in pairs if p["duplicate"]
    ]
    assert found == [
        ("humaneval/HumanEval/0", "has_close_elements", def_line, def_line + HUMANEVAL_0.count("\n") - 4, "type-1")
    ]
    assert max(sizes["read"]) <= sources.BLOCK and sum(sizes["read"]) >= 2 * len(
        text
    )  # classified, then split: two passes
    assert len(sizes["parse"]) > 100 and max(sizes["parse"]) <= 4096


def test_a_huge_definition_is_windowed_and_the_rest_still_split(tmp_path):
    big = "def big():\n" + "".join(f"    x_{k} = {k}\n" for k in range(400)) + "    return x_0\n"
    small = "def small(v):\n    return v + 1\n"
    text = small + "\n" + big + "\n" + small.replace("small", "other")
    units = list(huge_units(text, "python", "function", 1024))
    assert [u.name for u in units if u.name] == ["small", "other"]
    assert units[0].start_line == 1 and units[-1].start_line == text.count("\n") - 1
    windows_of_big = [u for u in units if u.name is None]
    assert len(windows_of_big) > 1 and all(len(u.text.encode()) <= 1024 for u in windows_of_big)
    assert windows_of_big[0].text.startswith("def big():") and windows_of_big[-1].text.endswith("    return x_0\n\n")


def test_a_huge_jsonl_line_under_skip_is_stepped_over(tmp_path):
    (tmp_path / "c.jsonl").write_text(
        json.dumps({"content": filler(2 << 20)}) + "\n" + json.dumps({"content": "x = 1"}) + "\n"
    )
    skips = Counter()
    source = {"kind": "jsonl", "paths": [str(tmp_path / "c.jsonl")], "content": "content"}
    docs, peak = peak_while(lambda: list(iter_source(source, 0, 1, [], skips, max_bytes=4096, huge="skip")))
    assert [d.data for d in docs] == ["x = 1"] and skips == {"huge": 1}
    assert peak < 512 << 10


def test_large_file_is_classified_block_by_block(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "BLOCK", 8)
    cases = {
        "empty": b" \n\t" * 10,
        "binary": b"x = 1\n" * 5 + b"\x00",
        "non_utf8": b"x = 1\n" * 5 + b"\xe9",
        "cut inside a character": "x = '\u00e9'".encode()[:-2],
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    assert {n: check_document(LargeFile(tmp_path / n, 0), 1, "chunk")[1] for n in cases} == {
        "empty": "empty",
        "binary": "binary",
        "non_utf8": "non_utf8",
        "cut inside a character": "non_utf8",
    }
    (tmp_path / "ok").write_text("x = '\u00e9'\n" * 10)  # a two-byte character across every other block edge
    assert check_document(LargeFile(tmp_path / "ok", 0), 1, "chunk") == (LargeFile(tmp_path / "ok", 0), None)
    assert check_document(LargeFile(tmp_path / "ok", 0), 1, "skip") == (None, "huge")


@FUZZ
@given(
    files=st.dictionaries(
        st.binary(min_size=1, max_size=12).filter(
            lambda n: b"/" not in n and b"\x00" not in n and n not in (b".", b"..")
        ),
        st.binary(max_size=3000) | st.text(st.characters(codec="utf-8"), max_size=1500).map(str.encode),
        min_size=1,
        max_size=5,
    )
)
def test_fuzz_scan_files(index, files):
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(os.fsencode(tmp), b"corpus")
        os.mkdir(root)
        for name, data in files.items():
            with open(os.path.join(root, name), "wb") as fh:
                fh.write(data)
        totals, _ = scan(index, tmp, {"kind": "files", "root": os.fsdecode(root), "glob": "*"}, parts=2, max_bytes=1024)
        assert totals[("count", "documents")] == len(files)  # every file is read or windowed, in one part or the other
        assert set(skipped(totals)) <= {"empty", "binary", "non_utf8", "too_short"}


@FUZZ
@given(
    lines=st.lists(
        st.binary(max_size=80)
        | st.builds(lambda c, i: json.dumps({"content": c, "id": i}).encode(), JSON_VALUES, JSON_VALUES),
        max_size=8,
    )
)
def test_fuzz_jsonl_source(lines):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "c.jsonl")
        path.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in lines))
        source = {"kind": "jsonl", "paths": [str(path)], "content": "content", "id": "id"}
        skips, docs = Counter(), []
        try:
            for part in range(2):
                docs += iter_source(source, part, 2, [], skips, max_bytes=64, huge="skip")
        except InputError as err:
            assert err.file == str(path) and "no content field" in err.message
            return
        for d in docs:
            text, reason = check_document(d.data, 64, "skip")
            assert (text is None) != (reason is None)
            d.doc_id.encode("utf-8")
            d.location.encode("utf-8")
        blank = sum(1 for line in lines if not line.replace(b"\n", b" ").strip())
        assert len(docs) + sum(skips.values()) + blank == len(lines)


@FUZZ
@given(
    text=st.lists(
        st.sampled_from(["def f(x):\n", "@d\n", "class C:\n", "    return x\n", "else:\n", "\r\n", "\n", "x = ("])
        | st.characters(codec="utf-8"),
        max_size=200,
    ).map("".join),
    language=st.sampled_from(["python", "java"]),
    granularity=st.sampled_from(["function", "file"]),
    max_bytes=st.integers(8, 300),
)
def test_fuzz_huge_units_bounded_and_the_same_from_disk(text, language, granularity, max_bytes):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "f.py")
        path.write_bytes(text.encode())
        streamed = [
            (u.text, u.name, u.start_line, u.end_line) for u in huge_units(path, language, granularity, max_bytes)
        ]
    in_memory = [(u.text, u.name, u.start_line, u.end_line) for u in huge_units(text, language, granularity, max_bytes)]
    assert streamed == in_memory
    assert all(len(t.encode()) <= max_bytes for t, *_ in streamed)
    if language == "java":  # windows only: they begin and end the text
        assert text.startswith(streamed[0][0]) and text.endswith(streamed[-1][0])


@FUZZ
@given(cut=st.just(0) | st.integers(1, 10_000), flip=st.integers(0, 10_000), parts=st.integers(1, 3))
@example(cut=0, flip=1674, parts=1)  # a column name in the footer that is not UTF-8 (found by CI's draw)
def test_fuzz_corrupt_parquet(cut, flip, parts):
    """A Parquet file cut short or with a flipped byte is not_parquet, or its
    unreadable row groups are counted row by row; no scan of it crashes."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "c.parquet")
        pq.write_table(
            pa.table({"content": [f"def f_{k}(x):\n    return x + {k}\n" * 3 for k in range(40)]}),
            path,
            row_group_size=10,
        )
        data = bytearray(path.read_bytes())
        data[flip % len(data)] ^= 0xFF
        path.write_bytes(bytes(data[: len(data) - cut % len(data)]))
        skips, docs = Counter(), []
        for part in range(parts):
            docs += iter_source({"kind": "parquet", "paths": [str(path)], "content": "content"}, part, parts, [], skips)
        assert set(skips) <= {"not_parquet", "unreadable"} and skips["not_parquet"] <= 1
        if skips["not_parquet"]:
            assert not docs


# --- nothing outside the corpus root is read ---


def linked_corpus(tmp_path):
    """A root with a.py, a link to a file inside it, a link to a file outside
    it, a link to a directory outside it and a link into /proc."""
    root, outside = tmp_path / "corpus", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    (outside / "tree").mkdir(parents=True)
    (root / "sub" / "a.py").write_text("def a():\n    return 1\n")
    (outside / "secret.py").write_text("SECRET = 'outside the root'\n")
    (outside / "tree" / "t.py").write_text("T = 'in a tree outside the root'\n")
    (root / "inside.py").symlink_to(root / "sub" / "a.py")
    (root / "out.py").symlink_to(outside / "secret.py")
    (root / "outdir").symlink_to(outside / "tree")
    (root / "proc.py").symlink_to("/proc/self/status")
    (root / "null.py").symlink_to("/dev/null")
    return root


def read_files(source):
    skips = Counter()
    docs = {d.doc_id: d.data for d in iter_source(source, 0, 1, [], skips)}
    return docs, dict(skips)


def test_a_link_out_of_the_corpus_root_is_skipped_unread_and_logged(tmp_path, caplog):
    root = linked_corpus(tmp_path)
    docs, skips = read_files({"kind": "files", "root": str(root), "glob": "**/*.py"})
    assert docs == {
        "inside.py": b"def a():\n    return 1\n",
        "sub/a.py": b"def a():\n    return 1\n",
    }  # a link inside: read
    assert skips == {"outside_root": 1, "linked_directory": 1, "system_path": 2}
    assert f"{root}/out.py leads outside the corpus root (to {tmp_path}/outside/secret.py)" in caplog.text
    assert "linked directory " + str(root / "outdir") + " skipped" in caplog.text


def test_follow_links_reads_outside_links_but_never_proc_or_devices(tmp_path):
    root = linked_corpus(tmp_path)
    docs, skips = read_files({"kind": "files", "root": str(root), "glob": "**/*.py", "follow_links": True})
    assert sorted(docs) == ["inside.py", "out.py", "outdir/t.py", "sub/a.py"]
    assert docs["out.py"] == b"SECRET = 'outside the root'\n"
    assert skips == {"system_path": 2}


def test_a_directory_link_that_holds_the_root_is_never_walked(tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "a.py").write_text("A = 1\n")
    (root / "parent").symlink_to(tmp_path)  # would repeat the corpus, and walk everything beside it
    (root / "proc").symlink_to("/proc")
    for follow in (False, True):
        docs, skips = read_files({"kind": "files", "root": str(root), "glob": "**/*.py", "follow_links": follow})
        assert sorted(docs) == ["a.py"] and skips == {"linked_directory": 1, "system_path": 1}


def test_a_jsonl_glob_reads_nothing_outside_its_directory(tmp_path):
    data, outside = tmp_path / "data", tmp_path / "elsewhere"
    data.mkdir(), outside.mkdir()
    (data / "a.jsonl").write_text(json.dumps({"content": "inside"}) + "\n")
    (outside / "b.jsonl").write_text(json.dumps({"content": "outside"}) + "\n")
    (data / "b.jsonl").symlink_to(outside / "b.jsonl")
    source = {"kind": "jsonl", "paths": [f"{data}/*.jsonl"], "content": "content"}
    docs, skips = read_files(source)
    assert list(docs.values()) == ["inside"] and skips == {"outside_root": 1}
    docs, skips = read_files({**source, "follow_links": True})
    assert sorted(docs.values()) == ["inside", "outside"] and skips == {}
    docs, skips = read_files({**source, "paths": [str(data / "b.jsonl")]})  # named without wildcards: its own root
    assert list(docs.values()) == ["outside"] and skips == {}


def test_a_corpus_root_in_proc_is_an_error():
    with pytest.raises(InputError, match=r"/proc/self: the corpus root lies in /proc, /sys, /dev: never read"):
        list(iter_source({"kind": "files", "root": "/proc/self", "glob": "*"}, 0, 1, [], Counter()))


def test_a_fifo_is_skipped_without_hanging_even_behind_a_link_or_swapped_in(tmp_path):
    import signal

    root = tmp_path / "corpus"
    root.mkdir()
    os.mkfifo(root / "fifo.py")
    (root / "to-fifo.py").symlink_to(root / "fifo.py")
    previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("reading a FIFO blocked"))
    signal.alarm(10)
    try:
        docs, skips = read_files({"kind": "files", "root": str(root), "glob": "*.py", "follow_links": True})
        assert docs == {} and skips == {"not_regular": 2}
        with pytest.raises(OSError, match="not a regular file"):  # a file swapped for a FIFO after its check
            sources.open_regular(root / "fifo.py")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
