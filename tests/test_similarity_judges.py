"""LLM judges (App. C.1), HyClone's Stage-1 screen (App. C.2) and App. B's
LLM filter: the strict answer readers on hand-written answers, the prompts
as the paper prints them, and the full mechanics on the shipped tiny model
(no chat model exists here: its answers are unparseable and counted as
such), through the response cache, which a re-run never gets past."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from leaktrace.data.llm_function_filter import filter_conversation, parse_filter_answer, read_filter_answer
from leaktrace.models.answers import UnparseableAnswer
from leaktrace.models.backend import Completion
from leaktrace.settings.counterfactual_judges import JudgesSettings
from leaktrace.settings.counterfactual_llm_filter import LlmFilterSettings
from leaktrace.settings.llm import LlmRole
from leaktrace.similarity.hyclone_screen import HYCLONE_SCREEN, parse_screen
from leaktrace.similarity.judges import JUDGES, chat_prompt, parse_nikiema, parse_paper, parse_song, read_answer

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "resources" / "models" / "leaktrace-tiny"
# the project's papers sit next to the main checkout (../shared) or above the worktrees (../../shared)
PAPER = (
    next((p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if p.is_dir()), ROOT)
    / "papers"
    / "functional-memorization.txt"
)
TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"


# --- strict readers ------------------------------------------------------------


@pytest.mark.parametrize(
    "answer,score",
    [
        ("[[0.777]]", 0.777),
        ("[[1.000]]", 1.0),
        ("[[0]]", 0.0),
        ("The similarity is [[0.25]].", 0.25),
    ],
)
def test_song_reads_one_marker(answer, score):
    assert parse_song(answer) == score


@pytest.mark.parametrize(
    "answer,cause",
    [
        ("0.777", "markers"),
        ("[[0.5]] or maybe [[0.6]]", "markers"),
        ("[[1.2]]", "out_of_range"),
        ("[[high]]", "not_number"),
        ("[[-0.1]]", "not_number"),
        ("[[ ]]", "not_number"),
    ],
)
def test_song_refuses_anything_else(answer, cause):
    with pytest.raises(UnparseableAnswer, match=cause):
        parse_song(answer)


def test_nikiema_and_paper_read_exactly_their_json():
    assert parse_nikiema('{"similarity_rating": 0.8, "category": "similar", "reasoning": "same loop"}') == 0.8
    assert parse_nikiema('\n {"similarity_rating": 1, "category": "equivalent", "reasoning": ""}\n') == 1.0
    assert parse_paper('{"equivalence_score": 0.0, "reasoning": "different"}') == 0.0


@pytest.mark.parametrize(
    "parse,answer,cause",
    [
        (
            parse_nikiema,
            '```json\n{"similarity_rating": 0.8, "category": "similar", "reasoning": "x"}\n```',
            "not_json",
        ),
        (parse_nikiema, 'Here it is: {"similarity_rating": 0.8, "category": "similar", "reasoning": "x"}', "not_json"),
        (
            parse_nikiema,
            '{"similarity_rating": 0.8, "category": "similar", "reasoning": "x"} Hope this helps.',
            "not_json",
        ),
        (parse_nikiema, '{"similarity_rating": 0.8, "category": "similar", "reasoning": "x"', "not_json"),
        (parse_nikiema, '{"similarity_rating": 0.8, "category": "close", "reasoning": "x"}', "category"),
        (parse_nikiema, '{"similarity_rating": 80, "category": "similar", "reasoning": "x"}', "out_of_range"),
        (parse_nikiema, '{"similarity_rating": "0.8", "category": "similar", "reasoning": "x"}', "type"),
        (parse_nikiema, '{"similarity_rating": true, "category": "similar", "reasoning": "x"}', "type"),
        (parse_nikiema, '{"similarity_rating": NaN, "category": "similar", "reasoning": "x"}', "not_json"),
        (parse_nikiema, '{"similarity_rating": 0.8, "category": "similar"}', "keys"),
        (parse_paper, '{"equivalence_score": 0.5, "reasoning": "x", "confidence": 1}', "keys"),
        (parse_paper, '{"equivalence_score": 0.5, "equivalence_score": 0.9, "reasoning": "x"}', "duplicate_key"),
        (parse_paper, '[{"equivalence_score": 0.5, "reasoning": "x"}]', "not_object"),
        (parse_paper, '{"equivalence_score": -0.5, "reasoning": "x"}', "out_of_range"),
        (parse_paper, '{"equivalence_score": 0.5, "reasoning": null}', "type"),
    ],
)
def test_json_judges_refuse_anything_else(parse, answer, cause):
    with pytest.raises(UnparseableAnswer, match=cause):
        parse(answer)


def test_screen_is_one_or_zero_and_strict():
    assert parse_screen('{"clone": true, "reasoning": "same"}') == 1.0
    assert parse_screen('{"clone": false, "reasoning": "no"}') == 0.0
    for answer in ('{"clone": "yes", "reasoning": "same"}', '{"clone": 1, "reasoning": "same"}', "YES"):
        with pytest.raises(UnparseableAnswer):
            parse_screen(answer)


def test_filter_answer_is_one_of_the_two_structures():
    assert parse_filter_answer('{"label": "YES", "severity": 7, "reasoning": "pricing rules"}') == (
        "YES",
        7,
        "pricing rules",
    )
    assert parse_filter_answer('{"label": "NO", "severity": null, "reasoning": "textbook"}') == ("NO", None, "textbook")
    for answer, cause in [
        ('{"label": "YES", "severity": 11, "reasoning": "x"}', "out_of_range"),
        ('{"label": "YES", "severity": 0, "reasoning": "x"}', "out_of_range"),
        ('{"label": "YES", "severity": 5.0, "reasoning": "x"}', "type"),
        ('{"label": "YES", "severity": "5", "reasoning": "x"}', "type"),
        ('{"label": "YES", "severity": null, "reasoning": "x"}', "type"),
        ('{"label": "NO", "severity": 3, "reasoning": "x"}', "severity"),
        ('{"label": "yes", "severity": 3, "reasoning": "x"}', "label"),
        ('{"label": "YES", "severity": 3}', "keys"),
        ('{"label": "YES", "severity": 3, "reasoning": "x"}\n\nThe function is proprietary.', "not_json"),
        ('```\n{"label": "NO", "severity": null, "reasoning": "x"}\n```', "not_json"),
        ('{"label": "NO", "severity": null, "reasoning": "x",}', "not_json"),
    ]:
        with pytest.raises(UnparseableAnswer, match=cause):
            parse_filter_answer(answer)
    failed = read_filter_answer(Completion(None, error="timeout: 30 s"))
    assert (failed.label, failed.outcome, failed.detail) == (None, "timeout", "timeout: 30 s")
    assert read_filter_answer(Completion("NO")).outcome == "unparseable_answer"


def test_a_failed_call_keeps_its_cause_and_a_bad_answer_is_counted():
    judge = JUDGES["judge_paper"]
    assert read_answer(judge, Completion(None, error="http_503: busy")).outcome == "http_503"
    bad = read_answer(judge, Completion("0.9"))
    assert (bad.score, bad.outcome) == (None, "unparseable_answer") and bad.detail == "not_object: float"


# --- prompts -------------------------------------------------------------------


def test_prompts_put_both_functions_in_their_slots_once():
    truth, generated = "def f(x):\n    return {x}\n", "def f(x):\n    return '{generated_function}'\n"
    for judge in [*JUDGES.values(), HYCLONE_SCREEN]:
        system, user = judge.conversation(truth, generated)
        assert system["role"] == "system" and user["role"] == "user" and not system["content"].startswith("System")
        assert user["content"].count(truth) == 1 and user["content"].count(generated) == 1
        assert user["content"].index(truth) < user["content"].index(generated)
        assert "{reference_function}" not in user["content"]
    assert (
        '{"equivalence_score": 0.0 to 1.0, "reasoning": "brief explanation"}'
        in JUDGES["judge_paper"].conversation("a", "b")[1]["content"]
    )


def test_filter_prompt_cuts_the_file_at_8000_characters():
    file_text = "# context line\n" * 1000 + "def f():\n    return 1\n"  # 15,000 characters before the function
    [message] = filter_conversation(file_text, "def f():\n    return 1\n", 8000)
    content = message["content"]
    assert content.startswith("You are a code analysis tool that detects functional/semantic leakage")
    file_part = content.split("<file>\n", 1)[1].split("\n</file>", 1)[0]
    assert file_part == file_text[:8000].removesuffix("\n")
    assert content.endswith("<target_function>\ndef f():\n    return 1\n</target_function>\n")


def _paper_block(first: str, last: str) -> str:
    lines = PAPER.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(last))
    return "\n".join(lines[start : end + 1])


@pytest.mark.skipif(not PAPER.exists(), reason="the paper's text is not next to this checkout")
def test_prompts_are_the_papers_verbatim():
    prompts = ROOT / "resources" / "prompts"
    for name, first, last in [
        ("judge_song.txt", "System: You are a code similarity", "=====End====="),
        (
            "judge_nikiema.txt",
            "System: You are a code similarity evaluation system. You assess",
            "Respond with ONLY the JSON object.",
        ),
        ("judge_paper.txt", "System: You are a code analysis expert", '{"equivalence_score"'),
    ]:
        assert (prompts / name).read_text(encoding="utf-8") == _paper_block(first, last) + "\n", name
    listing = _paper_block("440 You are a code analysis tool", '495 {"label": "NO"').splitlines()
    assert [int(line[:3]) for line in listing] == list(range(440, 496))  # the listing's lines, none left out
    assert (prompts / "function_filter.txt").read_text(encoding="utf-8") == "\n".join(
        line[4:] for line in listing
    ) + "\n"
    assert chat_prompt("judge_song.txt")[0] == "You are a code similarity evaluation system."


# --- the stages, end to end ----------------------------------------------------


@pytest.fixture(scope="module")
def chat_tiny(tmp_path_factory):
    """The shipped tiny model with a plain chat template (it has none), on one torch thread."""
    import torch

    path = tmp_path_factory.mktemp("tiny-chat") / "leaktrace-tiny"
    shutil.copytree(TINY, path)
    config = json.loads((path / "tokenizer_config.json").read_text())
    (path / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": TEMPLATE}))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield LlmRole.from_flag(json.dumps({"backend": "transformers", "model": str(path), "batch_size": 8}))
    torch.set_num_threads(threads)


TRUTH = {
    "a": ("def total(xs):\n", "    s = 0\n    for x in xs:\n        s += x\n    return s\n"),
    "b": ("def scale(v, k):\n", "    return [k * x for x in v]\n"),
}


def _tables(tmp_path) -> tuple[Path, Path]:
    functions = [
        {"sample_id": s, "kept": True, "context": "import math\n\n", "signature": sig, "continuation": body}
        for s, (sig, body) in TRUTH.items()
    ]
    functions.append(
        {"sample_id": "dropped", "kept": False, "context": "", "signature": "def g():\n", "continuation": "    pass\n"}
    )
    generations = [
        {
            "sample_id": "a",
            "model": "target",
            "function": "    s = 0\n    for x in xs:\n        s += x\n    return s\n",
        },
        {"sample_id": "b", "model": "target", "function": "    return list(map(lambda x: k * x, v))\n"},
        {"sample_id": "a", "model": "reference", "function": "    return sum(xs)\n"},
        {"sample_id": "b", "model": "reference", "function": "    return list(map(lambda x: k * x, v))\n"},
    ]
    pq.write_table(pa.Table.from_pylist(functions), tmp_path / "functions.parquet")
    pq.write_table(pa.Table.from_pylist(generations), tmp_path / "generations.parquet")
    return tmp_path / "generations.parquet", tmp_path / "functions.parquet"


class _Counting:
    """The backend ``open_model`` builds, with every conversation it is asked counted."""

    def __init__(self, monkeypatch):
        import leaktrace.models.select as select

        self.asked, self.opened, construct = 0, 0, select._construct

        def counted(role):
            self.opened += 1
            model = construct(role)
            chat_many = model.chat_many

            def asking(conversations, sampling):
                self.asked += len(conversations)
                return chat_many(conversations, sampling)

            model.chat_many = asking
            return model

        monkeypatch.setattr(select, "_construct", counted)


METRICS = ["judge_song", "judge_nikiema", "judge_paper", "hyclone_screen"]
OPENAI = LlmRole.from_flag('{"backend": "openai"}')


def test_judges_on_the_tiny_model_count_every_answer_unparseable_and_never_ask_twice(tmp_path, chat_tiny, monkeypatch):
    from leaktrace.stages.counterfactual_judges import counterfactual_judges

    generations, functions = _tables(tmp_path)
    settings = JudgesSettings(metrics=tuple(METRICS), max_new_tokens=6)
    calls = _Counting(monkeypatch)

    def run(name):
        counterfactual_judges(
            generations,
            functions,
            chat_tiny,
            settings,
            tmp_path / f"{name}.parquet",
            tmp_path / f"{name}-answers.parquet",
            cache_dir=tmp_path / "cache",
        )

    run("first")
    # 2 samples x 2 models x 4 metrics, less b's 4 (target and reference generated the same function)
    assert (calls.opened, calls.asked) == (1, 12)
    table = pq.read_table(tmp_path / "first.parquet")
    assert table.column_names == [
        "sample_id",
        "metric",
        "target",
        "reference",
        "delta",
        "target_outcome",
        "reference_outcome",
    ]
    rows = table.to_pylist()
    assert [(r["sample_id"], r["metric"]) for r in rows] == [(s, m) for s in "ab" for m in METRICS]
    assert all(r["target"] is r["reference"] is r["delta"] is None for r in rows)
    assert {r["target_outcome"] for r in rows} == {r["reference_outcome"] for r in rows} == {"unparseable_answer"}
    answers = pq.read_table(tmp_path / "first-answers.parquet").to_pylist()
    assert len(answers) == 16 and all(a["answer"] is not None and a["detail"] for a in answers)

    run("again")
    assert (calls.opened, calls.asked) == (1, 12)  # every answer from the cache: no model loaded, nothing asked
    for name in ("", "-answers"):
        assert (tmp_path / f"again{name}.parquet").read_bytes() == (tmp_path / f"first{name}.parquet").read_bytes()


def test_llm_filter_on_the_tiny_model_counts_unparseable_answers(tmp_path, chat_tiny, monkeypatch):
    from leaktrace.stages.counterfactual_llm_filter import llm_filter

    _, functions = _tables(tmp_path)
    calls = _Counting(monkeypatch)
    settings = LlmFilterSettings(context_chars=8000, max_new_tokens=6)
    for name in ("first", "again"):
        llm_filter(functions, chat_tiny, settings, tmp_path / f"{name}.parquet", cache_dir=tmp_path / "cache")
    assert (calls.opened, calls.asked) == (1, 2)  # the two kept functions, asked once
    rows = pq.read_table(tmp_path / "first.parquet").to_pylist()
    assert [r["sample_id"] for r in rows] == ["a", "b"]
    assert all(
        r["label"] is r["severity"] is r["reasoning"] is None and r["outcome"] == "unparseable_answer" for r in rows
    )
    assert (tmp_path / "again.parquet").read_bytes() == (tmp_path / "first.parquet").read_bytes()


class _Scripted:
    """Answers by the prompt file's wording: valid for three metrics, a failed call for the screen."""

    name, counts = "scripted", {}

    def chat_many(self, conversations, sampling):
        out = []
        for _, user in conversations:
            text = user["content"]
            same = "return sum(xs)" not in text  # only a's reference differs from its ground truth
            if "grammar parsing" in text:
                out.append(Completion("[[0.900]]" if same else "[[0.400]]"))
            elif "Code Fragment 1" in text:
                out.append(
                    Completion(
                        json.dumps({"similarity_rating": 1.0 if same else 0.5, "category": "similar", "reasoning": "r"})
                    )
                )
            elif "Function A (Reference)" in text:
                out.append(Completion('```json\n{"equivalence_score": 1.0, "reasoning": "r"}\n```'))
            else:
                out.append(Completion(None, error="timeout: 30 s"))
        return out


def test_scores_outcomes_and_deltas_per_metric(tmp_path, monkeypatch):
    import leaktrace.stages.counterfactual_judges as stage

    monkeypatch.setattr(stage, "open_model", lambda role, needs, purpose, cache_dir: _Scripted())
    generations, functions = _tables(tmp_path)
    stage.counterfactual_judges(
        generations,
        functions,
        OPENAI,
        JudgesSettings(metrics=tuple(METRICS), max_new_tokens=8),
        tmp_path / "out.parquet",
        tmp_path / "answers.parquet",
    )
    rows = {(r["sample_id"], r["metric"]): r for r in pq.read_table(tmp_path / "out.parquet").to_pylist()}
    song_a = rows[("a", "judge_song")]
    assert (song_a["target"], song_a["reference"], song_a["target_outcome"]) == (0.9, 0.4, "ok")
    assert song_a["delta"] == pytest.approx(0.5)
    assert rows[("b", "judge_nikiema")]["delta"] == 0.0
    assert rows[("a", "judge_paper")]["target_outcome"] == "unparseable_answer"  # fenced: not ONLY the object
    screen = rows[("a", "hyclone_screen")]
    assert (screen["target"], screen["delta"], screen["reference_outcome"]) == (None, None, "timeout")


def test_a_generation_without_its_ground_truth_is_bad_input(tmp_path, monkeypatch):
    import leaktrace.stages.counterfactual_judges as stage
    from leaktrace.errors import InputError

    monkeypatch.setattr(stage, "open_model", lambda role, needs, purpose, cache_dir: _Scripted())
    generations, functions = _tables(tmp_path)
    rows = pq.read_table(generations).to_pylist()
    pq.write_table(pa.Table.from_pylist(rows + [{**rows[0], "sample_id": "z"}]), generations)
    with pytest.raises(InputError, match="no ground truth"):
        stage.counterfactual_judges(
            generations,
            functions,
            OPENAI,
            JudgesSettings(metrics=tuple(METRICS), max_new_tokens=8),
            tmp_path / "out.parquet",
            tmp_path / "answers.parquet",
        )
    pq.write_table(pa.Table.from_pylist(rows[:3]), generations)  # b has no reference generation
    with pytest.raises(InputError, match="both a target and a reference"):
        stage.counterfactual_judges(
            generations,
            functions,
            OPENAI,
            JudgesSettings(metrics=tuple(METRICS), max_new_tokens=8),
            tmp_path / "out.parquet",
            tmp_path / "answers.parquet",
        )
