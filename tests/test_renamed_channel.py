"""The scan's identifier-normalised candidate channel (leakage/renamed.py):
its definition on hand-written code, the vectorised hashes equal to the
definition's on real files, and a renamed copy of a 5-line function made a
candidate, and then a duplicate, at the default settings, where the raw
channel alone misses it; the lessleak preset keeps LessLeak's raw channel only.
The compiled stripping of Python's comments and strings is the regular
expression's on random texts made of the characters it turns on."""

import random

import numpy as np
import pytest

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.benchmarks import GENERIC_BENCHMARK_SCHEMA
from leaktrace.data.corpora import iter_stdlib_code
from leaktrace.leakage import kernels
from leaktrace.leakage.minhash import MinHashScheme, Signer
from leaktrace.leakage.renamed import _strip, normalised_code, normalised_shingle_hashes
from leaktrace.leakage.settings import resolve, scan_slice
from leaktrace.stages.leakage import build_index, gather, scan_shard


def _slice(scan: dict):
    """A scan's slice with the schema's defaults (the corpus unused)."""
    return scan_slice({"corpus": {"kind": "files", "root": "."}, **scan})


DIGIT_SUM = (
    "def digit_sum(number):\n    total = 0\n    while number:\n        number, digit = divmod(number, 10)\n"
    "        total += digit\n    return total\n"
)
RENAMED = (
    "def sum_of_digits(n):\n    # the digits, one by one\n    acc = 0\n    while n:\n        n, d = divmod(n, 10)\n"
    "        acc += d\n    return acc\n"
)


def test_names_become_id_and_keywords_builtins_attributes_and_numbers_stay():
    code = 'def f(items, key=None):\n    """Doc."""\n    out = sorted(items, key=key)  # why\n    return out.copy() + [len("x"), 3]\n'
    assert normalised_code(code, "python") == (
        "def ID ( ID , ID = None ) : STR ID = sorted ( ID , ID = ID ) return ID . copy ( ) + [ len ( STR ) , 3 ]"
    )
    assert normalised_code(DIGIT_SUM, "python") == normalised_code(RENAMED, "python")
    assert (
        normalised_code("int add(int a, int b) { return a + b; } // sum", "cpp")
        == "int ID ( int ID , int ID ) { return ID + ID ; }"
    )
    assert normalised_code("Any words at all.", "text") == ""


@pytest.mark.parametrize("scheme", [MinHashScheme(), MinHashScheme(tokenizer="code", hash="sha1")])
def test_the_vectorised_hashes_are_the_definitions(scheme):
    signer = Signer(scheme)
    documents = [d.text for d, _ in zip(iter_stdlib_code(), range(60), strict=False)] + [
        DIGIT_SUM,
        RENAMED,
        "",
        "é = 1",
    ]
    for text in documents:
        expected = signer.shingle_hashes(normalised_code(text, "python"))
        found = normalised_shingle_hashes(signer, text, "python")
        assert found[0] == expected[0] and np.array_equal(found[1], expected[1])


def test_the_compiled_python_stripping_is_the_patterns():
    rng = random.Random(0)
    pieces = ['"', "'", '"""', "'''", "\\", "\n", "\r", "#", "r", "b", "f", "u", "R", "B", "x", " ", "é", "STR"]
    texts = ["x = f\"a\" + rb'b' # c\n", 'elif"x"', "buf'x'", '"""open\n', "'a\\\nb'", 'u"\\é"']
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 16))) for _ in range(20000)]
    for text in texts:
        found = kernels.strip_python(np.frombuffer(text.encode("utf-8"), dtype=np.uint8), kernels.STRING_PREFIX)
        assert found.tobytes() == _strip(text, "python").encode("utf-8"), text


def _scan(tmp_path, renamed):
    bench = [
        {
            "sample_id": "b/digit_sum",
            "benchmark": "b",
            "task_id": "digit_sum",
            "prompt": "",
            "solution": DIGIT_SUM,
            "code": DIGIT_SUM,
            "test": "",
            "entry_point": "digit_sum",
            "text": "",
            "kind": "code",
            "language": "python",
            "test_format": None,
        }
    ]
    write_table(bench, GENERIC_BENCHMARK_SCHEMA, tmp_path / "b.parquet")
    corpus = tmp_path / "corpus"
    corpus.mkdir(exist_ok=True)
    (corpus / "numbers.py").write_text("def clamp(v, lo, hi):\n    return max(lo, min(hi, v))\n\n\n" + RENAMED)
    settings = scan_slice(
        {"benchmark": "b", "corpus": {"kind": "files", "root": str(corpus), "glob": "*.py"}, "renamed": renamed}
    )
    out = tmp_path / ("on" if renamed else "off")
    build_index("s", (tmp_path / "b.parquet",), settings, out / "index.parquet")
    scan_shard(
        "s", out / "index.parquet", (tmp_path / "b.parquet",), settings, 0, 1, out / "p.parquet", out / "a.parquet"
    )
    gather(
        "s",
        out / "index.parquet",
        {"b": tmp_path / "b.parquet"},
        (out / "p.parquet",),
        (out / "a.parquet",),
        settings,
        out / "g",
    )
    return read_records(out / "g" / "pairs.parquet"), read_records(out / "index.parquet")


def test_a_renamed_copy_of_a_short_function_is_found_at_the_default_settings(tmp_path):
    pairs, index = _scan(tmp_path, None)  # the default preset: both channels
    assert [(p["unit"], p["duplicate"], p["clone_type"]) for p in pairs] == [("sum_of_digits", True, "type-2")]
    assert index[0]["renamed_signature"] is not None
    raw_only, index = _scan(tmp_path, False)
    assert raw_only == [] and index[0]["renamed_signature"] is None


def test_the_lessleak_preset_has_the_raw_channel_only():
    assert resolve("x", _slice({})).renamed and not resolve("x", _slice({"preset": "lessleak"})).renamed
    assert resolve("x", _slice({"preset": "lessleak", "renamed": True})).renamed
    assert "identifier-normalised" in resolve("x", _slice({})).describe()
