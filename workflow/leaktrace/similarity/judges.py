"""LLM-as-a-judge similarity (functional-memorization paper, Sec. 3 and
App. C.1): the model sees the ground-truth function and a generation and
answers with a similarity in the format its prompt asks for.

The three prompts are the paper's, verbatim (``resources/prompts/``, copied
from App. C.1 with the paper's line breaks; "System:" and "User:" mark the
two chat turns): Song et al.'s structure-similarity prompt (``[[0.777]]``),
Nikiema et al.'s JSON rating with a category, and the paper's own
functional-equivalence JSON. Each answer is read strictly
(``models.answers``); every other answer is counted as
``unparseable_answer`` with its cause, never guessed. Score rule: each prompt
already asks for a number in [0, 1], so the score is that number itself; a
number outside [0, 1] is unparseable, not clipped."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from leaktrace.models.answers import UnparseableAnswer, json_object, text_field, unit_interval
from leaktrace.models.backend import Completion, Message, Sampling

PROMPTS = Path(__file__).resolve().parents[3] / "resources" / "prompts"
UNPARSEABLE = "unparseable_answer"
_SYSTEM, _USER = "System: ", "\n\nUser: "
_SLOTS = re.compile(r"\{(reference_function|generated_function)\}")
_SONG_MARK = re.compile(r"\[\[([^\[\]]*)\]\]")
_DECIMAL = re.compile(r"\d+(?:\.\d+)?")
NIKIEMA_CATEGORIES = ("equivalent", "similar", "opposed", "unrelated")


@cache
def chat_prompt(name: str) -> tuple[str, str]:
    """(system, user template) of a prompt file written as the paper prints
    it: "System: ..." then a blank line and "User: ..."."""
    text = (PROMPTS / name).read_text(encoding="utf-8").removesuffix("\n")
    if not text.startswith(_SYSTEM) or _USER not in text:
        raise ValueError(f"{name}: expected 'System: ...' and, after a blank line, 'User: ...'")
    system, user = text[len(_SYSTEM) :].split(_USER, 1)
    return system, user


def fill(template: str, reference_function: str, generated_function: str) -> str:
    """The template with both functions in their slots, in one pass (a
    function that itself contains "{generated_function}" stays as it is; the
    prompts' literal JSON braces are untouched)."""
    values = {"reference_function": reference_function, "generated_function": generated_function}
    return _SLOTS.sub(lambda m: values[m.group(1)], template)


def parse_song(answer: str) -> float:
    """Exactly one ``[[number]]`` in the answer, the number written as a plain
    decimal in [0, 1]. The prompt asks for that format, not for nothing else,
    so text around it is allowed; two markers are ambiguous and refused."""
    marks = _SONG_MARK.findall(answer)
    if len(marks) != 1:
        raise UnparseableAnswer(f"markers: {len(marks)} [[...]] in the answer, asked one")
    if not _DECIMAL.fullmatch(marks[0].strip()):
        raise UnparseableAnswer(f"not_number: [[{marks[0]}]]")
    return unit_interval(float(marks[0]), "score")


def parse_nikiema(answer: str) -> float:
    """Only a JSON object with similarity_rating (a number in [0, 1]), category
    (one of the four) and reasoning (a string); the score is the rating."""
    answer_object = json_object(answer, ("similarity_rating", "category", "reasoning"))
    if answer_object["category"] not in NIKIEMA_CATEGORIES:
        raise UnparseableAnswer(f"category: {answer_object['category']!r}")
    text_field(answer_object["reasoning"], "reasoning")
    return unit_interval(answer_object["similarity_rating"], "similarity_rating")


def parse_paper(answer: str) -> float:
    """Only a JSON object with equivalence_score (a number in [0, 1]) and reasoning (a string)."""
    answer_object = json_object(answer, ("equivalence_score", "reasoning"))
    text_field(answer_object["reasoning"], "reasoning")
    return unit_interval(answer_object["equivalence_score"], "equivalence_score")


@dataclass(frozen=True)
class Judge:
    """One metric: its prompt file and the strict reader of its answers."""

    metric: str
    prompt: str
    parse: Callable[[str], float]

    def conversation(self, reference_function: str, generated_function: str) -> list[Message]:
        system, user = chat_prompt(self.prompt)
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": fill(user, reference_function, generated_function)},
        ]


JUDGES = {
    j.metric: j
    for j in (
        Judge("judge_song", "judge_song.txt", parse_song),
        Judge("judge_nikiema", "judge_nikiema.txt", parse_nikiema),
        Judge("judge_paper", "judge_paper.txt", parse_paper),
    )
}


@dataclass(frozen=True)
class Verdict:
    """A judged pair: the score in [0, 1], or None with the outcome's cause
    (``unparseable_answer``, or the call's failure: "timeout", "http_503", ...)."""

    score: float | None
    outcome: str
    detail: str | None = None


def read_answer(judge: Judge, answer: Completion) -> Verdict:
    if not answer.ok:
        return Verdict(None, answer.outcome, answer.error)
    try:
        return Verdict(judge.parse(answer.text or ""), "ok")
    except UnparseableAnswer as error:
        return Verdict(None, UNPARSEABLE, str(error))


def judge_pairs(model, items: Sequence[tuple[Judge, str, str]], sampling: Sampling) -> list[tuple[Completion, Verdict]]:
    """Each (judge, ground truth, generation) asked in one batched
    ``chat_many`` call (through the response cache when ``model`` is a
    ``CachedModel``), with its answer and verdict."""
    answers = model.chat_many([judge.conversation(truth, generated) for judge, truth, generated in items], sampling)
    return [(answer, read_answer(judge, answer)) for (judge, _, _), answer in zip(items, answers, strict=True)]
