"""The package CLI as rules call it: bad input ends with exit code 2 and a
message that names the file and the record, not a traceback."""

import gzip
import json
from dataclasses import asdict

import pytest
from helpers import assert_one_line_error, run_cli

from leaktrace.leakage.settings import scan_slice


def ingest(benchmark, output):
    settings = json.dumps({"format": "humaneval", "path": str(benchmark)})
    return run_cli("ingest-benchmark", "--name", "b", "--settings", settings, "--output", str(output))


def test_malformed_benchmark_line_is_reported_with_file_and_line(tmp_path):
    bad = tmp_path / "bench.jsonl"
    bad.write_text('{"task_id": "T/0", "prompt": "x"\n')
    result = ingest(bad, tmp_path / "out.parquet")
    assert result.returncode == 2
    assert f"{bad}, record line 1: malformed JSON" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out.parquet").exists()


def test_empty_benchmark_is_reported(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = ingest(empty, tmp_path / "out.parquet")
    assert result.returncode == 2
    assert "benchmark has no records" in result.stderr


def test_invalid_settings_json_is_a_usage_error(tmp_path):
    result = run_cli(
        "ingest-benchmark", "--name", "b", "--settings", "{not json", "--output", str(tmp_path / "o.parquet")
    )
    assert result.returncode == 2
    assert "not valid JSON" in result.stderr


GOOD = {
    "task_id": "T/0",
    "prompt": "def f(x):\n",
    "canonical_solution": "    return x\n",
    "test": "",
    "entry_point": "f",
}
BAD_FILES = {
    "non-UTF-8 line": (b'{"task_id": "caf\xe9"}\n', "record line 1: not UTF-8"),
    "binary file": (bytes(range(256)) * 4, "record line 1: binary data"),
    "corrupt gzip": (gzip.compress(json.dumps(GOOD).encode() * 50)[:40], "record line 1: corrupt gzip data"),
    "lone surrogate": (
        json.dumps(dict(GOOD, test="\ud800")).encode(),
        "record line 1: field 'test' holds a lone surrogate",
    ),
    "deeply nested JSON": (b"[" * 100_000 + b"]" * 100_000, "record line 1: JSON nested too deeply"),
    "deeply nested code": (
        json.dumps(dict(GOOD, canonical_solution="    return " + "-" * 100_000 + "x\n")).encode(),
        "record line 1 (T/0): code is nested too deeply",
    ),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_a_bad_benchmark_file_is_one_line_on_stderr(tmp_path, case):
    data, message = BAD_FILES[case]
    bench = tmp_path / "bench.jsonl"
    bench.write_bytes(data)
    result = ingest(bench, tmp_path / "out.parquet")
    assert_one_line_error(result, str(bench), message)
    assert not (tmp_path / "out.parquet").exists()


def test_a_directory_or_a_name_with_a_line_break_is_one_line_on_stderr(tmp_path):
    assert_one_line_error(ingest(tmp_path, tmp_path / "out.parquet"), f"{tmp_path}: is a directory")
    odd = tmp_path / "two\nlines.jsonl"
    odd.write_bytes(b"\xff\n")
    assert_one_line_error(ingest(odd, tmp_path / "out.parquet"), "two\\nlines.jsonl, record line 1: not UTF-8")


def test_a_scan_of_a_missing_corpus_root_is_one_line_on_stderr(tmp_path):
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps(GOOD) + "\n")
    assert ingest(bench, tmp_path / "bench.parquet").returncode == 0
    scan = scan_slice({"corpus": {"kind": "files", "root": str(tmp_path / "nowhere"), "glob": "*"}})
    common = [
        "--scan",
        "s",
        "--benchmark",
        str(tmp_path / "bench.parquet"),
        "--scan-settings",
        json.dumps(asdict(scan)),
    ]
    assert run_cli("leakage-index", *common, "--output", str(tmp_path / "index.parquet")).returncode == 0
    result = run_cli(
        "leakage-scan",
        *common,
        "--index",
        str(tmp_path / "index.parquet"),
        "--part",
        "0",
        "--parts",
        "1",
        "--pairs",
        str(tmp_path / "p.parquet"),
        "--accounting",
        str(tmp_path / "a.parquet"),
    )
    assert_one_line_error(result, f"{tmp_path / 'nowhere'}: corpus root is not a directory")
