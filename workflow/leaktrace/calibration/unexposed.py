"""Which scored models are nulls for a test: models whose training did not
depend on the testbed's member / non-member assignment or on the
benchmark's order. The base model (``reference``) and Ref's smaller
reference model (``ref-model``) never saw the benchmark; a sham control
(``sham-…``) was fine-tuned as a target on code that is not the benchmark; a
complement twin (``twin-…``) was trained on the target's non-members, so its
exposure is the split's complement, drawn by the same seeded split and in
shuffled order. None of them can tell a random re-assignment of the labels
from the real one, or the benchmark's order from a random one."""

from __future__ import annotations

import re
from collections.abc import Iterable

BASE_MODEL = "reference"
REFERENCE_MODEL = "ref-model"
_FINE_TUNED_NULL = re.compile(r"(sham|twin)-r[0-9.]+-s\d+-e\d+")


def is_unexposed(model: str) -> bool:
    return model in (BASE_MODEL, REFERENCE_MODEL) or _FINE_TUNED_NULL.fullmatch(model) is not None


def unexposed_models(models: Iterable[str]) -> list[str]:
    """The unexposed ones of ``models``, in their order."""
    return [m for m in models if is_unexposed(m)]
