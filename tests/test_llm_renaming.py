"""SrDetection's LLM renaming (Table 7): parsing answers, the pure-renaming
check, counted outcomes, and the stage's LLM set through a scripted backend."""

import json
import logging

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from leaktrace.artifacts import read_records
from leaktrace.models.backend import Completion
from leaktrace.settings.llm import LlmRole
from leaktrace.variants.llm_renaming import (
    PROMPT_PATH,
    check_renaming,
    parse_versions,
    renaming_prompt,
    renamings_from_answer,
)
from leaktrace.variants.natural import variants_settings

CODE = '''def count_items(items, limit):
    """Count the items below limit.
    >>> count_items([1, 5, 2], 3)
    2
    """
    total = 0  # the running total
    for item in items:
        if item < limit:
            total += 1
    return total
'''
GOOD = CODE.replace("items", "values").replace("item ", "value ").replace("total", "count")
LOGIC = GOOD.replace("<", "<=")
# a pure renaming the sandbox catches: the name is also output text (f"{x=}")
SHOWN_CODE = 'def twice(x):\n    scale = 2\n    return f"{scale=}" * x\n'
TEST = "def check(candidate):\n    assert candidate([1, 5, 2], 3) == 2\n"


def test_the_prompt_is_table_7_verbatim():
    text = PROMPT_PATH.read_text(encoding="utf-8")
    assert text.startswith(
        "You are given a Python code snippet: <code>{{python_code_snippet}}</code>\nTask: Generate 10"
    )
    assert "– Preserve comments, formatting, indentation, spacing, and line breaks exactly." in text
    assert renaming_prompt("x = 1").count("<code>x = 1</code>") == 1


def test_versions_are_parsed_from_the_usual_answer_shapes():
    one, two = "def f(a):\n    return a\n", "def f(b):\n    return b\n"
    assert parse_versions(f"Here:\n{json.dumps([one, two])}\nDone.") == [one, two]
    assert parse_versions(f"1. {json.dumps(one)}\n2. {json.dumps(two)}\n") == [one, two]
    assert parse_versions("<code>def f(a):\\n    return a\\n</code> and <code>def f(b):\\n    return b\\n</code>") == [
        one,
        two,
    ]
    assert parse_versions(f"```python\n{one}```\n```python\n{two}```") == [one, two]
    assert parse_versions("I cannot help with that.") == []


def test_pure_renaming_is_accepted_with_its_renames():
    renames, why = check_renaming(CODE, GOOD)
    assert why is None and renames == {
        "count_items": "count_values",
        "items": "values",
        "item": "value",
        "total": "count",
    }
    # a comment or docstring may follow the renames in some places and not others
    partly = GOOD.replace("Count the values below", "Count the items below")
    assert check_renaming(CODE, partly)[1] is None


@pytest.mark.parametrize(
    ("candidate", "cause"),
    [
        (CODE, "unchanged"),
        (LOGIC, "token"),
        (GOOD.replace("    return count", "    return  count"), "formatting"),
        (GOOD.replace("count = 0  # the running count", "count = 0  # a running count"), "text changed"),
        (CODE.replace("total", "limit"), "collision"),
        (CODE.replace("total = 0", "tally = 0"), "inconsistent"),
        (CODE.replace("for item in", "for x in"), "inconsistent"),
        ("def f(xs):\n    return len(xs)\n", "token count"),
        ("def f(:\n", "not python"),
    ],
)
def test_anything_but_a_pure_renaming_is_refused_with_its_cause(candidate, cause):
    renames, why = check_renaming(CODE, candidate)
    assert renames is None and why.split(":")[0] == cause


def test_fixed_names_are_refused():
    code = "import math\n\ndef f(xs):\n    xs.append(math.pi)\n    return len(xs)\n"
    for old, new in (("append", "push"), ("len", "size"), ("math", "m")):
        assert check_renaming(code, code.replace(old, new))[1].startswith("fixed name")
    assert check_renaming(code, code.replace("xs", "ys"), reserved={"xs"})[1].startswith("fixed name")


def test_every_version_and_answer_is_a_counted_outcome():
    answer = Completion(json.dumps([GOOD, LOGIC, GOOD, CODE]))
    found = renamings_from_answer(answer, CODE, "count_items")
    assert [v.text for v in found.variants] == [GOOD] and found.variants[0].entry_point == "count_values"
    assert found.outcomes == {
        "answer with 4 versions": 1,
        "version pure renaming": 1,
        "version token": 1,
        "version duplicate": 1,
        "version unchanged": 1,
    }
    failed = renamings_from_answer(Completion(None, error="timeout: no answer in 60 s"), CODE, "count_items")
    assert failed.variants == [] and failed.outcomes == {"answer timeout": 1}
    garbage = renamings_from_answer(Completion("sure! here you go"), CODE, "count_items")
    assert garbage.variants == [] and garbage.outcomes == {"answer with 0 versions": 1}


class _ScriptedModel:
    """Canned answers through the backend interface (``chat_many``), keyed by the program in the prompt."""

    name = "scripted"

    def __init__(self, answers):
        self.answers, self.prompts = answers, []

    def chat_many(self, conversations, sampling):
        self.prompts += [c[0]["content"] for c in conversations]
        return [
            self.answers[next(code for code in self.answers if f"<code>{code}</code>" in c[0]["content"])]
            for c in conversations
        ]


def test_stage_keeps_llm_renamings_that_pass_and_tops_up_with_the_ast_renamer(tmp_path, monkeypatch, caplog):
    import leaktrace.stages.variants as stage

    shown_test = "def check(candidate):\n    assert candidate(2) == 'scale=2scale=2'\n"
    model = _ScriptedModel(
        {
            CODE: Completion(json.dumps([GOOD, LOGIC, GOOD, CODE])),
            SHOWN_CODE: Completion(json.dumps([SHOWN_CODE.replace("scale", "factor")])),
        }
    )
    import leaktrace.models.select as select  # the stage imports open_model when an LLM makes variants

    monkeypatch.setattr(select, "open_model", lambda role, needs, purpose, cache_dir: model)
    rows = [
        {"sample_id": "s", "code": CODE, "test": TEST, "entry_point": "count_items"},
        {"sample_id": "e", "code": SHOWN_CODE, "test": shown_test, "entry_point": "twice"},
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "benchmark.parquet")
    pq.write_table(
        pa.Table.from_pylist([{"sample_id": r["sample_id"], "kept": True} for r in rows]),
        tmp_path / "functions.parquet",
    )
    words = [
        "count",
        "tally",
        "items",
        "elems",
        "limit",
        "total",
        "sum",
        "item",
        "elem",
        "twice",
        "double",
        "x",
        "scale",
        "factor",
    ]
    pq.write_table(
        pa.Table.from_pylist([{"kind": "variable", "name": w, "count": 4} for w in words]), tmp_path / "lexicon.parquet"
    )
    settings = variants_settings(
        n=2,
        names_per_variant=None,
        io_cases=None,
        test_cases={"compose": True, "untransformed": 2},
        llm_max_new_tokens=64,
        sandbox={"isolation": "weak"},
    )
    with caplog.at_level(logging.INFO, logger="leaktrace.stages.variants"):
        stage.make_variants_table(
            tmp_path / "benchmark.parquet",
            tmp_path / "functions.parquet",
            tmp_path / "lexicon.parquet",
            settings,
            7,
            2,
            tmp_path / "variants.parquet",
            llm=LlmRole.from_flag('{"backend": "openai", "model": "scripted"}'),
        )
    table = read_records(tmp_path / "variants.parquet")

    def kind_of(sid, kind):
        return [
            (r["variant_id"], r["generator"], r["text"]) for r in table if r["sample_id"] == sid and r["kind"] == kind
        ]

    # ids: 1-2 rename (the LLM's, tau_t composed), 5-6 ast+tt (the AST renamer's), 7-8 llm (without tau_t)
    headline, untransformed = kind_of("s", "rename"), kind_of("s", "llm")
    assert [(i, g) for i, g, _ in headline] == [(1, "llm+tt"), (2, "ast+tt")]  # one version passed; topped up
    assert untransformed[0] == (7, "llm", GOOD) and [g for _, g, _ in untransformed] == ["llm", "ast"]
    assert [(i, g) for i, g, _ in kind_of("s", "ast+tt")] == [(5, "ast+tt"), (6, "ast+tt")]
    assert [g for _, g, _ in kind_of("e", "rename")] == ["ast", "ast"]  # its one version failed the test in the sandbox
    assert all(r["valid"] for r in table)
    assert len(model.prompts) == 2
    assert "'version pure renaming': 2" in caplog.text and "'version token': 1" in caplog.text
    assert "'version passes': 1" in caplog.text and "'version wrong': 1" in caplog.text  # 'factor=2factor=2'
    assert "'topped up': 3" in caplog.text
