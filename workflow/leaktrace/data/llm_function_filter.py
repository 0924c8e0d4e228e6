"""The LLM filter of the functional-memorization paper's App. B: an LLM
reads a function with its source file and says whether it holds meaningful
proprietary functional logic (label YES / NO) and, for YES, how severe its
leakage would be (1-10).

The instructions are the paper's prompt, verbatim
(``resources/prompts/function_filter.txt``, App. B without the listing's line
numbers). The paper prints the instructions only, not how the file and the
function follow them ("the target function (delimited below)"), so the
delimiters in ``INPUTS`` are leaktrace's own; the whole is one user turn. The
file is what the functions table holds of it (the context before the
function, then the function), cut to its first 8,000 characters as in the
paper. The answer is read strictly: exactly the JSON object the prompt asks
for, a YES with an integer severity 1-10, a NO with a null severity; every
other answer is counted as ``unparseable_answer`` with its cause.
:func:`read_filter` reads the filter's table back as the samples it keeps."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from leaktrace.artifacts import read_columns
from leaktrace.models.answers import UnparseableAnswer, json_object, text_field
from leaktrace.models.backend import Completion, Message

PROMPT_PATH = Path(__file__).resolve().parents[3] / "resources" / "prompts" / "function_filter.txt"
UNPARSEABLE = "unparseable_answer"
INPUTS = "\n\n<file>\n{file}\n</file>\n\n<target_function>\n{function}\n</target_function>\n"


@cache
def instructions() -> str:
    return PROMPT_PATH.read_text(encoding="utf-8").removesuffix("\n")


def filter_conversation(file_text: str, function: str, context_chars: int) -> list[Message]:
    """The prompt for one function: the instructions, then the first
    ``context_chars`` characters of its file and the function itself."""
    inputs = INPUTS.format(file=file_text[:context_chars].removesuffix("\n"), function=function.removesuffix("\n"))
    return [{"role": "user", "content": instructions() + inputs}]


@dataclass(frozen=True)
class FilterVerdict:
    label: str | None  # "YES" | "NO"; None unless outcome is "ok"
    severity: int | None  # 1-10 for YES, None for NO
    reasoning: str | None
    outcome: str  # "ok", "unparseable_answer", or the call's failure ("timeout", ...)
    detail: str | None = None


def parse_filter_answer(answer: str) -> tuple[str, int | None, str]:
    """(label, severity, reasoning) of an answer that is exactly one of the
    prompt's two structures."""
    answer_object = json_object(answer, ("label", "severity", "reasoning"))
    label, severity = answer_object["label"], answer_object["severity"]
    reasoning = text_field(answer_object["reasoning"], "reasoning")
    if label == "NO":
        if severity is not None:
            raise UnparseableAnswer(f"severity: {severity!r} with label NO, asked null")
        return label, None, reasoning
    if label != "YES":
        raise UnparseableAnswer(f"label: {label!r}, asked YES or NO")
    if isinstance(severity, bool) or not isinstance(severity, int):
        raise UnparseableAnswer(f"type: severity {severity!r} with label YES, asked an integer 1-10")
    if not 1 <= severity <= 10:
        raise UnparseableAnswer(f"out_of_range: severity = {severity}")
    return label, severity, reasoning


def read_filter_answer(answer: Completion) -> FilterVerdict:
    if not answer.ok:
        return FilterVerdict(None, None, None, answer.outcome, answer.error)
    try:
        return FilterVerdict(*parse_filter_answer(answer.text or ""), "ok")
    except UnparseableAnswer as error:
        return FilterVerdict(None, None, None, UNPARSEABLE, str(error))


@dataclass(frozen=True)
class FilterSelection:
    """App. B's filter on the samples of the similarity tables."""

    severity: dict[str, int]  # the samples it keeps (labelled YES) -> their severity
    removed: dict[str, int]  # cause -> samples removed: "NO", the outcome of a failed answer, "no filter answer"

    def summary(self, n_samples: int) -> str:
        causes = ", ".join(f"{count} {cause}" for cause, count in self.removed.items()) or "none"
        return (
            f"App. B's LLM filter: the {len(self.severity)} of {n_samples} samples it labelled YES are analysed (the "
            f"paper's 7,422 functions are its YES); removed: {causes}."
        )


def read_filter(llm_filter: Path, sample_ids: set[str]) -> FilterSelection:
    """YES (with its severity) is kept; NO, an unparseable answer or a failed
    call (by outcome) and a sample the filter has no row for are removed."""
    answers = {
        r["sample_id"]: r
        for r in read_columns(llm_filter, ["sample_id", "label", "severity", "outcome"], "App. B's filter table")
    }
    severity, removed = {}, Counter()
    for sample_id in sorted(sample_ids):
        answer = answers.get(sample_id)
        if answer is None:
            removed["no filter answer"] += 1
        elif answer["outcome"] == "ok" and answer["label"] == "YES":
            severity[sample_id] = int(answer["severity"])
        else:
            removed[answer["label"] if answer["outcome"] == "ok" else answer["outcome"]] += 1
    return FilterSelection(severity, dict(sorted(removed.items())))
