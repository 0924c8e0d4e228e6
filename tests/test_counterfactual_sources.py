"""Counterfactual sample source (b), functions sampled from a corpus with the
App. B filters, and any two models as target and reference (hub id at a
revision, local path, adapter), on local files only."""

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from leaktrace.data.functions import all_function_anatomies, function_anatomy
from leaktrace.errors import InputError
from leaktrace.settings.counterfactual_corpus_functions import CorpusSampling, CorpusSource
from leaktrace.stages.counterfactual_corpus_functions import sample_corpus_functions

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "resources" / "models" / "leaktrace-tiny"
TINY_REF = REPO / "resources" / "models" / "leaktrace-tiny-ref"
FILTERS = {
    "min_body_lines": 10,
    "max_body_lines": 50,
    "min_chars": 500,
    "exclude_init": True,
    "max_documents": None,
    "max_bytes": 1_000_000,
}


def corpus_source(source: dict) -> CorpusSource:
    """``source`` as the ``--source`` flag reads it."""
    return CorpusSource.from_flag(json.dumps(source))


def long_function(name: str, indent: str = "", lines: int = 12, docstring: bool = True) -> str:
    """A function of ``lines`` body lines (docstring excluded) and over 500 characters."""
    body = "".join(
        f"{indent}    value_{i} = '{name}_{i}'.upper() + str({i} * offset_of_this_line)\n" for i in range(lines)
    )
    doc = f'{indent}    """Compute {name}."""\n' if docstring else ""
    return f"{indent}def {name}(offset_of_this_line):\n{doc}{body}{indent}    return value_0\n"


MODULE_A = (
    "import os\n\n\n" + long_function("alpha") + "\n\ndef short(x):\n    return x\n\n\n"
    "class Box:\n"
    + long_function("__init__", indent="    ")
    + "\n"
    + long_function("method", indent="    ")
    + "\n\n"
    + long_function("too_long", lines=51)
    + "\n\ndef small_but_long(x):\n"
    + "    x += 1\n" * 12
    + "    return x\n"
)
MODULE_B = "# second file\n" + long_function("beta") + "\n" + long_function("gamma", docstring=False)
ELIGIBLE = {"alpha", "method", "beta", "gamma"}


def write_corpus(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text(MODULE_A)
    (root / "b.py").write_text(MODULE_B)
    (root / "broken.py").write_text("def broken(:\n    pass\n")
    (root / "notes.md").write_text(MODULE_B)  # matched by the glob, not Python
    return root


def sample(
    tmp_path: Path, source: dict, n: int = 10, seed: int = 1, name: str = "mini", **settings
) -> tuple[list, list]:
    functions, accounting = tmp_path / f"{name}-{seed}-{n}.parquet", tmp_path / f"{name}-{seed}-{n}.acc.parquet"
    sampling = CorpusSampling(**{**FILTERS, "n": n, **settings})
    sample_corpus_functions(name, corpus_source(source), sampling, seed, functions, accounting)
    return pq.read_table(functions).to_pylist(), pq.read_table(accounting).to_pylist()


def test_files_source_keeps_the_app_b_functions_with_file_context_and_signature(tmp_path):
    root = write_corpus(tmp_path / "corpus")
    rows, accounting = sample(tmp_path, {"kind": "files", "root": str(root), "glob": "**/*"})
    assert {r["name"] for r in rows} == ELIGIBLE
    counts = {(a["stage"], a["reason"]): a["count"] for a in accounting}
    assert counts[("document", "read")] == 4 and counts[("document", "parse_error")] == 1
    assert counts[("document", "not_python")] == 1
    assert counts[("function", "function: __init__")] == 1
    assert counts[("function", "function: body has N lines > N")] == 1
    assert counts[("function", "function: body has N lines < N")] == 1  # short
    assert counts[("function", "function: N characters < N")] == 1  # small_but_long: 13 lines, under 500 characters
    assert counts[("function", "eligible")] == counts[("function", "sampled")] == 4
    files = {"alpha": MODULE_A, "method": MODULE_A, "beta": MODULE_B, "gamma": MODULE_B}
    for r in rows:
        text = files[r["name"]]
        assert text.startswith(r["context"] + r["signature"] + r["continuation"])  # cut on lines of its own file
        assert r["path"].endswith("pkg/a.py" if text is MODULE_A else "b.py")
        assert r["split"] is None and r["kept"] and 10 <= r["body_lines"] <= 50 and r["n_chars"] >= 500
        assert r["signature"].lstrip().startswith("def ") and '"""' not in r["signature"]  # the prompt has no docstring
    method = next(r for r in rows if r["name"] == "method")
    assert method["context"].endswith("value_0\n\n") and "class Box:" in method["context"]
    assert method["sample_id"] == f"pkg/a.py::method:{method['start_line']}"


def test_jsonl_source_gives_the_same_functions_and_a_seeded_sample_of_n(tmp_path):
    root = write_corpus(tmp_path / "corpus")
    records = [{"path": p, "content": (root / p).read_text()} for p in ("pkg/a.py", "b.py", "broken.py")]
    jsonl = tmp_path / "corpus.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    source = {"kind": "jsonl", "paths": [str(jsonl)], "content": "content", "id": "path"}
    rows, _ = sample(tmp_path, source)
    assert {r["name"] for r in rows} == ELIGIBLE
    first, _ = sample(tmp_path, source, n=2, seed=1)
    again, _ = sample(tmp_path, source, n=2, seed=1, name="mini")
    assert first == again and len(first) == 2
    # the sample depends on the seed, and on each function's own id, not on the order documents are read in
    assert any(sample(tmp_path, source, n=2, seed=seed)[0] != first for seed in (2, 3))
    reversed_jsonl = tmp_path / "reversed.jsonl"
    reversed_jsonl.write_text("".join(json.dumps(r) + "\n" for r in reversed(records)))
    reordered, _ = sample(tmp_path, {**source, "paths": [str(reversed_jsonl)]}, n=2, seed=1)
    assert [r["sample_id"] for r in reordered] == [r["sample_id"] for r in first]
    capped, accounting = sample(tmp_path, source, max_documents=1)
    assert {r["name"] for r in capped} == {"alpha", "method"}
    assert {(a["reason"], a["count"]) for a in accounting if a["stage"] == "document"} == {("read", 1)}


def test_a_source_without_an_eligible_function_is_a_clear_error(tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "m.py").write_text("def short(x):\n    return x\n")
    with pytest.raises(InputError, match=r"no function passes the filters; 1 documents read .* 1 functions parsed"):
        sample(tmp_path, {"kind": "files", "root": str(root), "glob": "*.py"})


def test_every_function_of_a_module_is_parsed_with_its_own_lines():
    code = "x = '\x0c'\n@decorator\nasync def f(a):\n    def inner():\n        return a\n    return inner\n"
    names = [(a.name, a.start_line, a.is_method) for a in all_function_anatomies(code)]
    assert names == [("f", 2, False), ("inner", 4, False)]
    f = function_anatomy(code, "f")
    assert f.context == "x = '\x0c'\n" and f.signature == "@decorator\nasync def f(a):\n"


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory):
    """A hub cache on local disk: repository ``org/tiny`` with revisions
    ``stage1`` (the shipped reference model) and ``stage2`` (the base model)."""
    cache = tmp_path_factory.mktemp("hub-cache")
    repo = cache / "models--org--tiny"
    for revision, model, commit in (("stage1", TINY_REF, "1" * 40), ("stage2", TINY, "2" * 40)):
        snapshot = repo / "snapshots" / commit
        snapshot.mkdir(parents=True)
        for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
            shutil.copy(model / name, snapshot / name)
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / revision).write_text(commit)
    return cache


@pytest.fixture
def offline_hub(hub_cache, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub_cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return hub_cache


def test_revisions_of_one_hub_repository_load_their_own_weights(offline_hub):
    from leaktrace.models.backend import ModelSpec
    from leaktrace.models.loading import load_model_config

    assert load_model_config(ModelSpec("org/tiny", revision="stage1")).hidden_size == 64
    assert load_model_config(ModelSpec("org/tiny", revision="stage2")).hidden_size == 128
    with pytest.raises(InputError, match="cannot load revision 'stage3'"):
        load_model_config(ModelSpec("org/tiny", revision="stage3"))
    with pytest.raises(InputError, match="revision 'stage1' given for a local directory"):
        load_model_config(ModelSpec(str(TINY), revision="stage1"))


def test_two_model_counterfactual_on_a_corpus_source(tmp_path, offline_hub):
    """Target: a hub revision with a LoRA adapter on top; reference: a local
    path. The revision resolves to the reference's weights and the adapter
    starts at zero, so both must generate the same text; the table has no split."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from leaktrace.settings.counterfactual import CounterfactualSettings
    from leaktrace.settings.models import AdaptedModel
    from leaktrace.stages.counterfactual import counterfactual

    adapter = tmp_path / "adapter"
    base = AutoModelForCausalLM.from_pretrained(TINY_REF)
    get_peft_model(base, LoraConfig(r=2, target_modules=["q_proj", "v_proj"])).save_pretrained(adapter)
    root = write_corpus(tmp_path / "corpus")
    functions, accounting = tmp_path / "functions.parquet", tmp_path / "sampling.parquet"
    sample_corpus_functions(
        "mini",
        corpus_source({"kind": "files", "root": str(root), "glob": "*.py"}),
        CorpusSampling(**{**FILTERS, "n": 1}),
        1,
        functions,
        accounting,
    )
    target = {
        "path": "org/tiny",
        "revision": "stage1",
        "adapter": str(adapter),
        "dtype": "float32",
        "device": "cpu",
        "max_length": None,
    }
    reference = {"path": str(TINY_REF), "dtype": "float32", "device": "cpu", "max_length": None}
    generations, similarity = tmp_path / "generations.parquet", tmp_path / "similarity.parquet"
    counterfactual(
        functions,
        AdaptedModel.from_flag(json.dumps(target)),
        AdaptedModel.from_flag(json.dumps(reference)),
        CounterfactualSettings(context_tokens=16, max_new_tokens=4, batch_size=1),
        generations,
        similarity,
    )
    rows = pq.read_table(generations).to_pylist()
    assert len(rows) == 2 and {r["model"] for r in rows} == {"target", "reference"}
    by_role = {
        role: {r["sample_id"]: r["generated"] for r in rows if r["model"] == role} for role in ("target", "reference")
    }
    assert by_role["target"] == by_role["reference"]
    assert all(r["delta"] == 0 for r in pq.read_table(similarity).to_pylist())
