"""HyClone's Stage 1 (Liang et al., 2025, as the functional-memorization
paper adapts it in App. C.2): an LLM screens each (ground truth, generation)
pair as a likely clone or not; metric ``hyclone_screen`` is 1.0 for a clone,
0.0 for none. Stage 2, execution, is ``similarity.execution``.

Neither the paper nor anything shipped here prints HyClone's Stage-1
prompt, so ``resources/prompts/hyclone_screen.txt`` is leaktrace's own,
written in the form of the paper's other judge prompts (App. C.1) and asking
for a JSON object {"clone": true | false, "reasoning": ...}; answers are
read as strictly as those of the judges. :func:`read_screen` reads the
screen's rows of the judges' table back as the gate of Stage 2."""

from __future__ import annotations

from pathlib import Path

from leaktrace.artifacts import read_records
from leaktrace.errors import InputError
from leaktrace.models.answers import UnparseableAnswer, json_object, text_field
from leaktrace.similarity.judges import Judge
from leaktrace.similarity.table import OK

NOT_A_CANDIDATE = "screen:no_clone"


def parse_screen(answer: str) -> float:
    """Only a JSON object with clone (true or false, not a string) and reasoning (a string)."""
    answer_object = json_object(answer, ("clone", "reasoning"))
    if not isinstance(answer_object["clone"], bool):
        raise UnparseableAnswer(f"type: clone is {type(answer_object['clone']).__name__}, not true or false")
    text_field(answer_object["reasoning"], "reasoning")
    return 1.0 if answer_object["clone"] else 0.0


HYCLONE_SCREEN = Judge("hyclone_screen", "hyclone_screen.txt", parse_screen)


def read_screen(screen: Path) -> dict[tuple[str, str], str]:
    """(sample_id, model) -> "ok" where HyClone's Stage 1 called the pair a
    likely clone (1.0), else the cause Stage 2 stops at: ``screen:no_clone``
    (0.0) or ``screen:<the judge's outcome>`` (no answer). ``screen``: the
    judges' table (the similarity families' long format)."""
    metric = HYCLONE_SCREEN.metric
    verdicts = {}
    for r in read_records(
        screen, ["sample_id", "metric", "target", "reference", "target_outcome", "reference_outcome"]
    ):
        if r["metric"] != metric:
            continue
        for model in ("target", "reference"):
            value = r[model]
            verdicts[(r["sample_id"], model)] = (
                OK if value == 1.0 else NOT_A_CANDIDATE if value == 0.0 else f"screen:{r[f'{model}_outcome']}"
            )
    if not verdicts:
        raise InputError(str(screen), None, f"no {metric!r} rows: Stage 2 cannot be gated by a screen that did not run")
    return verdicts
