"""counterfactual_llm_filter: App. B's LLM filter over the functions that
passed the rule-based filter (10-50 body lines, at least 500 characters, no
``__init__``): per function the label, severity and reasoning the LLM gave,
or the outcome that kept them null."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.llm_function_filter import filter_conversation, read_filter_answer
from leaktrace.models.backend import Capability, Sampling
from leaktrace.models.select import open_model
from leaktrace.settings.counterfactual_llm_filter import LlmFilterSettings
from leaktrace.settings.llm import LlmRole

log = logging.getLogger(__name__)

FILTER_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("label", pa.string()),  # "YES" (meaningful functional logic) | "NO"; null unless outcome is ok
        ("severity", pa.int8()),  # 1-10 for YES, null for NO
        ("reasoning", pa.string()),
        ("outcome", pa.string()),  # "ok", "unparseable_answer", or the call's failure ("timeout", ...)
        ("detail", pa.string()),  # why not ok
        ("answer", pa.string()),  # the reply as given; null when the call failed
    ]
)


def llm_filter(
    functions: Path, judge: LlmRole, settings: LlmFilterSettings, output: Path, cache_dir: Path | None = None
) -> None:
    """Ask App. B's LLM filter whether each kept function holds meaningful functional logic, and how
    severe its memorisation would be; per function the label, severity and reasoning it gave.

    ``judge``: the filter's role (``similarity.filter.judge``, else ``llm.judge``); ``cache_dir``: its
    response cache."""
    rows = [
        r for r in read_records(functions, ["sample_id", "kept", "context", "signature", "continuation"]) if r["kept"]
    ]
    conversations = [
        filter_conversation(
            r["context"] + r["signature"] + r["continuation"],
            r["signature"] + r["continuation"],
            settings.context_chars,
        )
        for r in rows
    ]
    lm = open_model(judge.as_config(), {Capability.CHAT}, "App. B's LLM filter (llm.judge)", cache_dir)
    answers = lm.chat_many(conversations, Sampling(max_new_tokens=settings.max_new_tokens))
    out, outcomes = [], Counter()
    for r, answer in zip(rows, answers, strict=True):
        v = read_filter_answer(answer)
        outcomes[v.outcome if v.label is None else f"{v.outcome} {v.label}"] += 1
        out.append(
            {
                "sample_id": r["sample_id"],
                "label": v.label,
                "severity": v.severity,
                "reasoning": v.reasoning,
                "outcome": v.outcome,
                "detail": v.detail,
                "answer": answer.text,
            }
        )
    write_table(out, FILTER_SCHEMA, output)
    log.info(
        "LLM filter under %s, %d functions: %s; calls: %s",
        lm.name,
        len(rows),
        dict(sorted(outcomes.items())),
        dict(getattr(lm, "counts", {})),
    )
