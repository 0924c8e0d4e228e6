"""An optional LLM judge for candidate pairs, with LessLeak-Bench's four
manual labels (not related / related but not duplicate / semantically
equivalent / exact copy; the last two are duplicates). The model is anything
with ``chat(messages, *, max_new_tokens) -> str`` (the model backend's chat
interface); the prompt template lives in ``resources/prompts/leakage_judge.txt``.
An answer without a recognisable label is kept as ``unparsed`` and leaves the
rule-based decision in place."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

LABELS = ("not_related", "related_not_duplicate", "semantically_equivalent", "exact_copy")
DUPLICATE_LABELS = frozenset({"semantically_equivalent", "exact_copy"})
PROMPT_PATH = Path(__file__).resolve().parents[3] / "resources" / "prompts" / "leakage_judge.txt"
MAX_CHARS = 6000  # each text in the prompt is cut to this many characters

_LABEL = re.compile(r"\b(" + "|".join(label.replace("_", r"[ _-]") for label in LABELS) + r")\b", re.IGNORECASE)


class ChatModel(Protocol):
    def chat(self, messages: list[dict], *, max_new_tokens: int) -> str: ...


@dataclass(frozen=True)
class JudgeVerdict:
    label: str  # one of LABELS, or "unparsed"
    duplicate: bool | None  # None when unparsed
    raw: str


def load_template(path: Path = PROMPT_PATH) -> str:
    return Path(path).read_text(encoding="utf-8")


def parse_label(answer: str) -> str | None:
    """The label in an answer: the one after "Label:" if present, else the first one named."""
    after = answer.split("Label:", 1)[1] if "Label:" in answer else answer
    match = _LABEL.search(after) or _LABEL.search(answer)
    if not match:
        return None
    return re.sub(r"[ -]", "_", match.group(1).lower())


def judge_pair(
    model: ChatModel, template: str, benchmark: str, corpus: str, location: str, max_new_tokens: int = 16
) -> JudgeVerdict:
    prompt = template.format(benchmark=benchmark[:MAX_CHARS], corpus=corpus[:MAX_CHARS], location=location)
    answer = model.chat([{"role": "user", "content": prompt}], max_new_tokens=max_new_tokens)
    label = parse_label(answer)
    if label is None:
        return JudgeVerdict("unparsed", None, answer)
    return JudgeVerdict(label, label in DUPLICATE_LABELS, answer)


def open_judge(judge: dict):
    """The scan's judge model (its ``judge`` block: model, dtype, device) through
    the Hugging Face backend; imports torch, so only where a judge runs."""
    from leaktrace.models.backend import ModelSpec
    from leaktrace.models.hf import HFLanguageModel

    return HFLanguageModel(
        ModelSpec(judge["model"], dtype=judge.get("dtype", "float32"), device=judge.get("device", "cpu")),
        progress=False,
    )
