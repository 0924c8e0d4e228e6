"""HyClone's Stage 1 (Liang et al., 2025, as the functional-memorization
paper adapts it in App. C.2): an LLM screens each (ground truth, generation)
pair as a likely clone or not; metric ``hyclone_screen`` is 1.0 for a clone,
0.0 for none. Stage 2, execution, is ``similarity.execution``.

Neither the paper nor anything shipped here prints HyClone's Stage-1
prompt, so ``resources/prompts/hyclone_screen.txt`` is leaktrace's own,
written in the form of the paper's other judge prompts (App. C.1) and asking
for a JSON object {"clone": true | false, "reasoning": ...}; answers are
read as strictly as those of the judges."""

from __future__ import annotations

from leaktrace.models.answers import UnparseableAnswer, json_object, text_field
from leaktrace.similarity.judges import Judge


def parse_screen(answer: str) -> float:
    """Only a JSON object with clone (true or false, not a string) and reasoning (a string)."""
    answer_object = json_object(answer, ("clone", "reasoning"))
    if not isinstance(answer_object["clone"], bool):
        raise UnparseableAnswer(f"type: clone is {type(answer_object['clone']).__name__}, not true or false")
    text_field(answer_object["reasoning"], "reasoning")
    return 1.0 if answer_object["clone"] else 0.0


HYCLONE_SCREEN = Judge("hyclone_screen", "hyclone_screen.txt", parse_screen)
