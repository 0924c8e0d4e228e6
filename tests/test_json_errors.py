"""A malformed JSON line or file is named by its file, the line in the file and
the column of the offending character, whichever reader meets it (benchmarks,
candidate pairs, users' code to mutate, corpus JSONL). The decoder's own words
("line 1 column 501") count within the one line it was given."""

import json
import logging
from collections import Counter

import pytest

from leaktrace.data.benchmarks import load_benchmark
from leaktrace.data.humaneval import load_humaneval
from leaktrace.errors import InputError
from leaktrace.leakage.pairs import read_pairs
from leaktrace.leakage.sources import iter_source
from leaktrace.settings.ingest import BenchmarkEntry
from leaktrace.stages.mutate import _read_jsonl

HUMANEVAL = {
    "task_id": "T/0",
    "prompt": "def f():\n",
    "canonical_solution": "    return 1\n",
    "test": "def check(c):\n    assert c() == 1\n",
    "entry_point": "f",
}


def faulty_line(record: dict) -> tuple[str, int]:
    """``record`` as a JSON line whose first value is 490 two-byte characters and lacks
    the comma after it, and the column (in characters) of the quote the decoder stops at."""
    first = next(iter(record))
    text = json.dumps({**record, first: "é" * 490}, ensure_ascii=False)
    comma = text.index('", "') + 1
    line = text[:comma] + " " + text[comma + 1 :]
    return line, line.index('"', comma) + 1


def seventh_line_faulty(record: dict, fields_of=lambda k: {"task_id": f"T/{k}"}) -> tuple[str, int]:
    """Six good lines, then the faulty one: the text of the file and the fault's column."""
    good = [json.dumps({**record, **fields_of(k)}) for k in range(6)]
    line, column = faulty_line({**record, **fields_of(6)})
    assert column > 490 and len(line[: column - 1].encode()) > column  # characters, not bytes
    return "\n".join([*good, line]) + "\n", column


def test_a_benchmark_line_is_named_with_its_line_and_column(tmp_path):
    text, column = seventh_line_faulty(HUMANEVAL)
    path = tmp_path / "bench.jsonl"
    path.write_text(text, encoding="utf-8")
    expected = f"{path}, record line 7: malformed JSON (Expecting ',' delimiter at line 7, column {column})"
    with pytest.raises(InputError) as err:
        load_humaneval(path, "b")
    assert str(err.value) == expected
    with pytest.raises(InputError) as err:  # the configurable reader: the same error
        load_benchmark(BenchmarkEntry(format="jsonl", preset="humaneval", path=str(path)), "b")
    assert str(err.value) == expected


def test_a_json_benchmark_file_is_named_with_the_line_and_column_in_the_file(tmp_path):
    line, column = faulty_line({"id": "a", "text": "x"})
    path = tmp_path / "bench.json"
    path.write_text("[\n" + "".join(f' {{"id": "{k}", "text": "x"}},\n' for k in range(5)) + line + "\n]\n")
    with pytest.raises(InputError) as err:
        load_benchmark(BenchmarkEntry(format="json", preset="text", path=str(path)), "b")
    assert str(err.value) == f"{path}: malformed JSON (Expecting ',' delimiter at line 7, column {column})"


def test_a_byte_that_is_not_utf8_is_named_with_its_line_and_character_column(tmp_path):
    path = tmp_path / "bench.json"
    path.write_bytes('[\n {"id": "a",\n  "text": "éé'.encode() + b'\xe9"}\n]\n')
    with pytest.raises(InputError, match=r"bench\.json: not UTF-8 \(byte 0xe9 at line 3, column 14\)$"):
        load_benchmark(BenchmarkEntry(format="json", preset="text", path=str(path)), "b")
    lines = tmp_path / "bench.jsonl"
    lines.write_bytes(json.dumps(HUMANEVAL).encode() + b"\n" + '{"task_id": "é'.encode() + b'\xe9"}\n')
    with pytest.raises(InputError, match=r"record line 2: not UTF-8 \(byte 0xe9 at line 2, column 15\)$"):
        load_humaneval(lines, "b")


def test_a_pairs_line_is_named_with_its_line_and_column(tmp_path):
    text, column = seventh_line_faulty(
        {"bench_text": "a", "corpus_text": "b"}, lambda k: {"bench_text": f"def f{k}(): pass"}
    )
    path = tmp_path / "pairs.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_pairs(path)
    assert str(err.value) == f"{path}, record line 7: not JSON (Expecting ',' delimiter at line 7, column {column})"


def test_code_to_mutate_is_split_at_newlines_only(tmp_path):
    """U+2028 in a string is valid JSON, written unescaped by ensure_ascii=False; str.splitlines splits there."""
    first = json.dumps({"id": "a", "code": "x = 1  # \u2028 a separator\n"}, ensure_ascii=False)
    text, column = seventh_line_faulty({"id": "a", "code": "y = 2\n"}, lambda k: {"id": f"r{k}"})
    path = tmp_path / "code.jsonl"
    path.write_text(first + "\n" + text.split("\n", 1)[1], encoding="utf-8")  # the first good line replaced
    with pytest.raises(InputError) as err:
        _read_jsonl(path)
    assert str(err.value) == f"{path}, record line 7: not JSON (Expecting ',' delimiter at line 7, column {column})"
    path.write_text(first + "\n", encoding="utf-8")
    assert [r["code"] for r in _read_jsonl(path)] == ["x = 1  # \u2028 a separator\n"]


def test_a_corpus_line_skipped_as_bad_is_logged_with_its_line_and_column(tmp_path, caplog):
    text, column = seventh_line_faulty({"id": "a", "content": "x = 1"}, lambda k: {"id": f"r{k}"})
    path = tmp_path / "corpus.jsonl"
    path.write_text(text, encoding="utf-8")
    skips = Counter()
    with caplog.at_level(logging.WARNING):
        docs = list(
            iter_source({"kind": "jsonl", "paths": [str(path)], "content": "content", "id": "id"}, 0, 1, [], skips)
        )
    assert len(docs) == 6 and skips["bad_record"] == 1
    assert f"line 7: not a JSON record (Expecting ',' delimiter at line 7, column {column})" in caplog.text
