"""The counterfactual generations (functional-memorisation paper, Sec. 3):
the prompt a model continues, as token ids, and the table of each model's
continuation with the function parsed out of it
(``counterfactual/<source>/generations.parquet``), which every similarity
family reads."""

from __future__ import annotations

import pyarrow as pa

GENERATIONS_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("model", pa.string()),  # "target" or "reference"
        ("prompt_tokens", pa.int32()),
        ("generated", pa.string()),
        ("function", pa.string()),
        ("parsed", pa.bool_()),
    ]
)


def prompt_ids(lm, context: str, signature: str, context_tokens: int) -> list[int]:
    """Up to ``context_tokens`` tokens of preceding context, then the signature
    without its final newline.

    Context and signature are tokenised as one string, as they were in
    training: byte-level BPE merges whitespace runs with what follows, so
    tokenising them apart (or ending on a bare newline) gives token sequences
    the model has never seen, and it starts a new top-level line instead of
    the body."""
    head = signature.removesuffix("\n")
    ids = lm.encode(context + head)
    keep = len(lm.encode(head)) + context_tokens
    return ids[-keep:]
