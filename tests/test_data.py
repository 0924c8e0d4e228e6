"""Benchmark ingestion (with its clear errors), function anatomy and filters,
corpora, and the testbed split."""

import gzip
import json
import random

import pytest

from leaktrace.data.corpora import iter_pydoc_text, iter_stdlib_code, shard
from leaktrace.data.functions import FunctionFilter, function_anatomy
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.data.split import assign_splits, pre_exposure
from leaktrace.errors import InputError

GOOD = {
    "task_id": "T/0",
    "prompt": 'import math\n\n\ndef area(r: float) -> float:\n    """Area of a circle."""\n',
    "canonical_solution": "    return math.pi * r * r\n",
    "test": "def check(candidate):\n    assert candidate(1.0) > 3\n",
    "entry_point": "area",
}


def write_jsonl(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def test_shipped_humaneval_has_164_parseable_problems():
    samples = load_humaneval(shipped_humaneval_path(), "humaneval")
    assert len(samples) == 164
    assert samples[0].sample_id == "humaneval/HumanEval/0"
    assert samples[0].code == samples[0].prompt + samples[0].solution


def test_gzipped_and_plain_files_read_the_same(tmp_path):
    plain = write_jsonl(tmp_path / "b.jsonl", [json.dumps(GOOD)])
    packed = tmp_path / "b.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert load_humaneval(plain, "b") == load_humaneval(packed, "b")


def test_malformed_line_names_file_and_line(tmp_path):
    path = write_jsonl(tmp_path / "bad.jsonl", [json.dumps(GOOD), '{"task_id": "T/1", "prompt": '])
    with pytest.raises(InputError, match=r"bad\.jsonl, record line 2: malformed JSON"):
        load_humaneval(path, "b")


def test_code_that_does_not_parse_names_the_record(tmp_path):
    broken = dict(GOOD, task_id="T/7", canonical_solution="    return math.pi *\n")
    path = write_jsonl(tmp_path / "b.jsonl", [json.dumps(broken)])
    with pytest.raises(InputError, match=r"record line 1 \(T/7\): code does not parse"):
        load_humaneval(path, "b")


def test_missing_fields_and_entry_point_are_named(tmp_path):
    path = write_jsonl(tmp_path / "b.jsonl", [json.dumps({k: v for k, v in GOOD.items() if k != "test"})])
    with pytest.raises(InputError, match="missing or non-string fields: test"):
        load_humaneval(path, "b")
    path = write_jsonl(tmp_path / "c.jsonl", [json.dumps(dict(GOOD, entry_point="volume"))])
    with pytest.raises(InputError, match="entry point 'volume' is not defined"):
        load_humaneval(path, "b")


def test_empty_benchmark_is_an_error(tmp_path):
    path = write_jsonl(tmp_path / "empty.jsonl", [""])
    with pytest.raises(InputError, match=r"empty\.jsonl: benchmark has no records"):
        load_humaneval(path, "b")


def test_anatomy_cuts_context_signature_and_continuation():
    code = GOOD["prompt"] + GOOD["canonical_solution"]
    anatomy = function_anatomy(code, "area")
    assert anatomy.context == "import math\n\n\n"
    assert anatomy.signature == "def area(r: float) -> float:\n"
    assert anatomy.continuation.startswith('    """Area')
    assert anatomy.context + anatomy.function == code
    assert anatomy.body_lines == 1
    assert anatomy.docstring == "Area of a circle."


def test_anatomy_handles_decorators_multiline_headers_and_one_liners():
    code = "import functools\n@functools.cache\ndef f(\n    a,\n    b,\n):\n    x = a\n    return x + b\n"
    anatomy = function_anatomy(code, "f")
    assert anatomy.signature == "@functools.cache\ndef f(\n    a,\n    b,\n):\n"
    assert anatomy.body_lines == 2
    one = function_anatomy("def g(x): return x\n", "g")
    assert one.signature == "def g(x): "
    assert one.continuation == "return x\n"
    method = function_anatomy("class A:\n    def __init__(self):\n        self.x = 1\n", "__init__")
    assert method.is_method


def test_function_filter_reasons():
    code = "class A:\n    def __init__(self):\n        self.x = 1\n"
    assert FunctionFilter().reason_to_drop(function_anatomy(code, "__init__")) == "function: __init__"
    anatomy = function_anatomy(GOOD["prompt"] + GOOD["canonical_solution"], "area")
    assert FunctionFilter().reason_to_drop(anatomy) is None
    paper = FunctionFilter(min_body_lines=10, max_body_lines=50, min_chars=500)
    assert paper.reason_to_drop(anatomy) == "function: body has 1 lines < 10"
    assert FunctionFilter(min_chars=500).reason_to_drop(anatomy).startswith("function: ")


def test_default_filter_keeps_all_of_humaneval():
    kept = [
        s
        for s in load_humaneval(shipped_humaneval_path(), "h")
        if FunctionFilter().reason_to_drop(function_anatomy(s.code, s.entry_point)) is None
    ]
    assert len(kept) == 164


def test_corpora_are_deterministic_and_sharded_evenly():
    docs = list(iter_stdlib_code(exclude=["test/*"]))
    assert len(docs) > 300 and all(d.doc_id.startswith("stdlib/") for d in docs)
    assert not any(d.doc_id.startswith("stdlib/test/") for d in docs)
    parts = shard(docs, 4)
    assert sum(map(len, parts)) == len(docs) and max(map(len, parts)) - min(map(len, parts)) <= 1
    assert [d.doc_id for d in iter_pydoc_text()] == sorted(d.doc_id for d in iter_pydoc_text())
    with pytest.raises(ValueError):
        shard(docs, 0)


def test_pre_exposure_filter():
    flagged, reason = pre_exposure(1.0, [1.5, 2.0])
    assert flagged is True and reason.startswith("pre-exposure: original has the lowest PPL")
    assert pre_exposure(1.6, [1.5, 2.0]) == (False, None)
    assert pre_exposure(1.0, [1.0, 2.0]) == (False, None)  # a tie is not the lowest: "already the easiest" is strict
    with pytest.raises(ValueError, match="at least one valid variant"):  # an eligible sample always has one
        pre_exposure(1.0, [])


def test_strata_are_split_one_to_one_each():
    """With strata (the pre-exposure flag under ``mark``), each is split at the member fraction on its own:
    10 cleared -> 5 + 5, 6 flagged -> 3 + 3, whatever the shuffle; the cleared ones' calibration fold is
    floor(5 * 0.4) = 2 per class. Without strata the same 16 ids split 8 + 8 with no such guarantee per stratum."""
    ids = [f"b/{i:02d}" for i in range(16)]
    strata = {sid: i >= 10 for i, sid in enumerate(ids)}
    for seed in range(5):
        a = assign_splits(ids, member_fraction=0.5, calibration_fraction=0.4, rng=random.Random(seed), strata=strata)
        for flag, size in ((False, 10), (True, 6)):
            group = [a[s] for s in ids if strata[s] is flag]
            assert sum(x.split == "member" for x in group) == size // 2
        cleared = [a[s] for s in ids if not strata[s]]
        assert sum(x.fold == "calibration" and x.split == "member" for x in cleared) == 2
    # one stratum is the unstratified split, draw for draw
    same = {sid: 0 for sid in ids}
    assert assign_splits(
        ids, member_fraction=0.5, calibration_fraction=0.4, rng=random.Random(1), strata=same
    ) == assign_splits(ids, member_fraction=0.5, calibration_fraction=0.4, rng=random.Random(1))
    with pytest.raises(ValueError, match="no stratum"):
        assign_splits(ids, member_fraction=0.5, calibration_fraction=0.0, rng=random.Random(0), strata={"b/00": True})


def test_split_is_one_to_one_stratified_and_seeded():
    ids = [f"b/{i}" for i in range(40)]
    a = assign_splits(ids, member_fraction=0.5, calibration_fraction=0.3, rng=random.Random(3))
    b = assign_splits(list(reversed(ids)), member_fraction=0.5, calibration_fraction=0.3, rng=random.Random(3))
    assert a == b
    members = [s for s, x in a.items() if x.split == "member"]
    assert len(members) == 20
    for split in ("member", "non-member"):
        folds = [x.fold for x in a.values() if x.split == split]
        assert folds.count("calibration") == 6 and folds.count("evaluation") == 14
    with pytest.raises(ValueError):
        assign_splits(ids, member_fraction=1.0, calibration_fraction=0.3, rng=random.Random(0))


def test_recall_prefix_is_held_out_before_a_balanced_split():
    ids = [f"b/{i}" for i in range(44)]
    a = assign_splits(ids, member_fraction=0.5, calibration_fraction=0.3, rng=random.Random(3), recall_prefix=4)
    held = [s for s, x in a.items() if x.fold == "recall-prefix"]
    assert len(held) == 4 and all(a[s].split == "non-member" for s in held)
    assert sum(x.split == "member" for x in a.values()) == 20
    assert sum(x.split == "non-member" and x.fold != "recall-prefix" for x in a.values()) == 20
    with pytest.raises(ValueError, match="hold out"):
        assign_splits(ids, member_fraction=0.5, calibration_fraction=0.3, rng=random.Random(3), recall_prefix=43)
