"""leakage-rq3-runs: the completions behind LessLeak-Bench's RQ3. A model
completes every problem of a benchmark with tests n times, sampled at the
configured temperature through the pipeline's generation path
(``llm.generator`` included), and each completion runs against the
problem's tests in the sandbox, once per distinct program (a memorising
model draws the same completion again and again: the default run's target
drew 368 distinct completions in 1,640 draws).

Two prompts (``prompt``):

- ``completion``: the problem's prompt (a signature and docstring; for a
  unittest-format sample without one, ClassEval's, its class skeleton, the
  problem text), completed and cut at Codex's stop sequences; prompt +
  completion runs against the problem's tests. A skeleton's completion
  fills its last method, so a class whose skeleton leaves other methods
  without a body fails their tests: completion mode measures less than
  ClassEval's own whole-class generation, which the instruction prompt is;
- ``instruction``: LessLeak's RQ3 (Sec. 5.3: zero-shot, "### Instruction:
  [instruction input from APPS data sample] ### Response:"), the problem's
  text as the instruction; the response, cut at a new ``###`` heading, is a
  whole program (the first fenced code block when it has one).

Either way the program runs against the problem's tests in any format
(`leaktrace.sandbox.sample_runs`): APPS's standard input/output cases
(every case) or calls, HumanEval's ``check``, or unittest classes
(ClassEval). Problems whose tests no sandbox path runs (DS-1000's, which
exec the solution's source) are left out, and the log says how many."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.samples import sample_tests, test_format_of
from leaktrace.models.configured import generation_model
from leaktrace.sandbox import SandboxLimits
from leaktrace.sandbox.sample_runs import run_sample_tests
from leaktrace.seeding import derive_seed
from leaktrace.settings.leakage_rq3 import Rq3Runs
from leaktrace.settings.llm import LlmRole
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.score import TokenBatch

log = logging.getLogger(__name__)

# Codex's stop sequences for HumanEval completions: a new top-level statement ends the function.
STOPS = ("\nclass ", "\ndef ", "\n#", "\nif ", "\nprint(")
INSTRUCTION = "### Instruction: {instruction} ### Response:"
RESPONSE_END = "###"  # a base model that goes on writes the next instruction
_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|$)", re.DOTALL)

RUNS_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("model", pa.string()),
        ("draw", pa.int32()),
        ("completion", pa.string()),
        ("status", pa.string()),  # the sandbox's: ok (every test passed), wrong, error, timeout, killed
    ]
)


def _cut(text: str) -> str:
    ends = [i for i in (text.find(s) for s in STOPS) if i >= 0]
    return text[: min(ends)] if ends else text


def _stop(text: str) -> bool:
    return any(s in text for s in STOPS)


def response_code(text: str) -> str:
    """The program in an instruction-prompt response: cut at a new ``###``
    heading; its first fenced code block if it has one, else all of it."""
    text = text.split(RESPONSE_END, 1)[0]
    fenced = _FENCE.search(text)
    return fenced.group(1) if fenced else text.strip("\n")


def _instruction_stop(text: str) -> bool:
    return RESPONSE_END in text


UNRUNNABLE_FORMATS = ("exec",)  # DS-1000's tests exec the solution's source: no sandbox path runs them


def completion_prompt(row: dict) -> str | None:
    """The code a completion continues: the sample's prompt, or a unittest
    sample's problem text (ClassEval's class skeleton) where it has none."""
    if row.get("prompt"):
        return row["prompt"]
    return (row.get("text") or None) if test_format_of(row) == "unittest" else None


def _problems(rows: list[dict], prompt: str, source: str) -> list[tuple[dict, str, object, str | None]]:
    """(row, prompt text, tests, entry point) of every problem the prompt can be run on."""
    out = []
    for r in rows:
        if not (r.get("test") or "").strip() or test_format_of(r) in UNRUNNABLE_FORMATS:
            continue
        if prompt == "completion" and completion_prompt(r) and r.get("entry_point"):
            tests, entry_point = sample_tests(r, source)
            out.append((r, completion_prompt(r), tests, entry_point))
        elif prompt == "instruction" and r.get("text"):
            tests, entry_point = sample_tests(r, source)
            out.append((r, INSTRUCTION.format(instruction=r["text"]), tests, entry_point))
    return out


def generate_and_run(
    benchmark: Path,
    model: ModelSettings,
    name: str,
    settings: Rq3Runs,
    batch: TokenBatch,
    seed: int,
    output: Path,
    adapter: Path | None = None,
    generator: LlmRole | None = None,
    cache_dir: Path | None = None,
) -> None:
    """LessLeak's RQ3 runs of one model (``name`` in the tables, its
    ``adapter`` on the base ``model``): every problem of ``benchmark`` the
    prompt can run on, completed n times (draw j sampled with its own seed,
    so a backend's response cache keeps the draws apart), each completion
    run against the problem's tests in the sandbox."""
    prompt = settings.prompt
    records = read_records(benchmark)
    problems = _problems(records, prompt, str(benchmark))
    left_out = sum(test_format_of(r) in UNRUNNABLE_FORMATS and bool((r.get("test") or "").strip()) for r in records)
    if left_out:
        log.warning(
            "rq3 %s: %d problems left out: their tests exec the solution's source, which no sandbox path runs",
            name,
            left_out,
        )
    lm = generation_model(
        model,
        adapter,
        batch,
        generator,
        cache_dir,
        "LessLeak RQ3 generation",
    )
    prompts = [lm.encode(text) for _, text, _, _ in problems]
    max_new_tokens = min(settings.max_new_tokens, lm.max_length - 1 - max(map(len, prompts), default=0))
    if max_new_tokens < 1:
        raise ValueError(f"the longest prompt fills the model's {lm.max_length}-token context")
    stop, cut = (_stop, _cut) if prompt == "completion" else (_instruction_stop, response_code)
    rows = []
    for draw in range(settings.n):
        texts = lm.sample(
            prompts,
            max_new_tokens=max_new_tokens,
            temperature=settings.temperature,
            seed=derive_seed(seed, "rq3", name, draw),
            stops=[stop] * len(prompts),
        )
        rows += [
            {"sample_id": r["sample_id"], "model": name, "draw": draw, "completion": cut(t)}
            for (r, _, _, _), t in zip(problems, texts, strict=True)
        ]
    by_id = {r["sample_id"]: (r, tests, entry_point) for r, _, tests, entry_point in problems}
    limits = SandboxLimits(**settings.sandbox.given())
    workers = settings.workers
    # a completion drawn more than once is one program against the same tests: it runs once
    keys = [
        (
            row["sample_id"],
            completion_prompt(by_id[row["sample_id"]][0]) + row["completion"]
            if prompt == "completion"
            else row["completion"],
        )
        for row in rows
    ]
    distinct = {key: i for i, key in enumerate(dict.fromkeys(keys))}
    programs = [(code, *by_id[sample_id][1:]) for sample_id, code in distinct]
    results = run_sample_tests(programs, limits, workers=workers)
    for row, key in zip(rows, keys, strict=True):
        row["status"] = results[distinct[key]].status
    rows.sort(key=lambda r: (r["sample_id"], r["draw"]))
    write_table(rows, RUNS_SCHEMA, output)
    log.info(
        "rq3 %s (%s prompt): %d problems x %d draws, %d distinct programs run, %d completions pass",
        name,
        prompt,
        len(problems),
        settings.n,
        len(distinct),
        sum(r["status"] == "ok" for r in rows),
    )
