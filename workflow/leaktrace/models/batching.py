"""Batches of a model pass built by a token budget over length-sorted
sequences, and a CUDA out-of-memory error answered by halving the batch.

Sequences are taken longest first (ties in input order), so a batch's
padded width is its first sequence's length and padding stays small. A
batch holds at most ``max_rows`` sequences and, with a ``token_budget``, at
most as many as fit ``rows x width <= token_budget`` (at least one: a
sequence longer than the budget runs alone). Without a budget the batches
are fixed ``max_rows`` slices of the sorted order, the batches the CPU
default has always run, so its results keep their bits (float reductions
differ with a batch's shape, in the last place).

On an out-of-memory error the batch is retried with half its rows, and the
budget stays halved for the rest of the pass; only a single sequence that
does not fit alone is an error."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import torch

log = logging.getLogger(__name__)


def by_length(lengths: Sequence[int]) -> list[int]:
    """Indices longest first, ties in input order."""
    return sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))


def batch_rows(width: int, *, max_rows: int, token_budget: int | None) -> int:
    """Rows of a batch whose longest sequence has ``width`` tokens."""
    if token_budget is None:
        return max_rows
    return max(1, min(max_rows, token_budget // max(1, width)))


def token_batches(lengths: Sequence[int], *, max_rows: int, token_budget: int | None = None) -> list[list[int]]:
    """Every batch of a pass that meets no out-of-memory error."""
    order, batches, start = by_length(lengths), [], 0
    while start < len(order):
        rows = batch_rows(lengths[order[start]], max_rows=max_rows, token_budget=token_budget)
        batches.append(order[start : start + rows])
        start += rows
    return batches


def run_batches(
    lengths: Sequence[int],
    run: Callable[[list[int]], None],
    *,
    max_rows: int,
    token_budget: int | None = None,
    progress: Callable[[int], object] | None = None,
) -> None:
    """``run(batch)`` over the batches of ``token_batches``, each batch a list
    of indices into ``lengths``; an out-of-memory error in ``run`` halves the
    batch (and the budget from there on) and runs it again. ``progress``
    is told how many sequences each finished batch held."""
    order, start = by_length(lengths), 0
    while start < len(order):
        width = lengths[order[start]]
        batch = order[start : start + batch_rows(width, max_rows=max_rows, token_budget=token_budget)]
        try:
            run(batch)
        except torch.OutOfMemoryError as error:
            if len(batch) == 1:
                raise RuntimeError(
                    f"out of memory on a single sequence of {width} tokens: cap the context "
                    "(max_length) or spread the model over more devices (device: auto)"
                ) from error
            failed = len(batch)
        else:
            failed = 0
        if failed:  # outside the handler, so the failed batch's tensors are freed before the retry
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            token_budget = (failed // 2) * width
            log.warning(
                "out of memory on %d sequences of up to %d tokens: retrying with a budget of %d tokens",
                failed,
                width,
                token_budget,
            )
            continue
        start += len(batch)
        if progress is not None:
            progress(len(batch))
