"""The package CLI as rules call it: bad input ends with exit code 2 and a
message that names the file and the record, not a traceback."""

import json
import subprocess
import sys


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "leaktrace", *args], capture_output=True, text=True, timeout=120)


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
    result = run_cli("ingest-benchmark", "--name", "b", "--settings", "{not json", "--output", str(tmp_path / "o.parquet"))
    assert result.returncode == 2
    assert "not valid JSON" in result.stderr
