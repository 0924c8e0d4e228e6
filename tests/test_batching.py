"""Scoring at scale: batches built by a token budget over length-sorted
texts (every text once, results in input order, the budget kept, a text
longer than the budget still scored), an out-of-memory error answered by
halving the batch, and the budgeted pass equal to the fixed-batch one."""

import numpy as np
import pytest
import torch

from leaktrace.models.backend import ModelSpec
from leaktrace.models.batching import run_batches, token_batches
from leaktrace.models.hf import HFLanguageModel

LENGTHS = [5, 40, 12, 12, 3, 90, 7, 33, 12, 1]
TEXTS = [f"def f{i}(x):\n" + "    x = x + 1\n" * (i % 5) + "    return x\n" for i in range(12)] + ["y = 2"]


def test_batches_without_a_budget_are_fixed_slices_of_the_length_order():
    assert token_batches([1, 9, 3, 8], max_rows=2) == [[1, 3], [2, 0]]


@pytest.mark.parametrize("budget", [1, 24, 60, 100, 1000])
def test_token_budget_batches_cover_every_text_once_and_keep_the_budget(budget):
    batches = token_batches(LENGTHS, max_rows=4, token_budget=budget)
    assert sorted(i for b in batches for i in b) == list(range(len(LENGTHS)))
    flat = [i for b in batches for i in b]
    assert [LENGTHS[i] for i in flat] == sorted(LENGTHS, reverse=True)  # longest first
    for b in batches:
        width = max(LENGTHS[i] for i in b)
        assert len(b) <= 4
        assert len(b) * width <= budget or len(b) == 1  # a text longer than the budget runs alone
    if budget < 2 * 90:  # the longest text (index 5) does not fit twice: it runs alone
        assert batches[0] == [5]


def _oom_above(limit, seen):
    def run(batch):
        size = len(batch) * max(LENGTHS[i] for i in batch)
        if size > limit:
            raise torch.OutOfMemoryError(f"fake: {size} > {limit}")
        seen.append(batch)

    return run


def test_out_of_memory_halves_the_batch_and_finishes():
    seen: list[list[int]] = []
    run_batches(LENGTHS, _oom_above(100, seen), max_rows=8)
    assert sorted(i for b in seen for i in b) == list(range(len(LENGTHS)))
    assert all(len(b) * max(LENGTHS[i] for i in b) <= 100 for b in seen)
    with pytest.raises(RuntimeError, match="single sequence of 90 tokens"):
        run_batches(LENGTHS, _oom_above(80, []), max_rows=8)


@pytest.fixture(scope="module")
def fixed(tiny_model_dir):
    lm = HFLanguageModel(ModelSpec(str(tiny_model_dir)), batch_size=4, max_length=256, progress=False)
    return lm, lm.score(TEXTS)


def _assert_close(actual, expected):
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_array_equal(a.token_ids, e.token_ids)
        # another batch shape sums in another order: equal to float32 rounding, not bit for bit
        np.testing.assert_allclose(a.logprobs, e.logprobs, rtol=0, atol=1e-5)
        np.testing.assert_allclose(a.mu, e.mu, rtol=0, atol=1e-5)
        np.testing.assert_allclose(a.sigma, e.sigma, rtol=0, atol=1e-5)


def test_budgeted_pass_equals_the_fixed_batch_pass_in_input_order(tiny_model_dir, fixed):
    lm, expected = fixed
    budgeted = HFLanguageModel(
        ModelSpec(str(tiny_model_dir)), batch_size=64, token_budget=150, max_length=256, progress=False
    )
    widths = []
    forward = budgeted._forward_stats
    budgeted._forward_stats = lambda ids, *a: (widths.append(ids.shape), forward(ids, *a))[1]
    _assert_close(budgeted.score(TEXTS), expected)
    assert all(rows * width <= 150 or rows == 1 for rows, width in widths)
    assert max(rows for rows, _ in widths) > lm.batch_size  # short texts share a batch beyond the fixed size


def test_injected_out_of_memory_is_retried_with_half_the_batch(tiny_model_dir, fixed, monkeypatch):
    lm, expected = fixed
    forward, shapes = lm._forward_stats, []

    def fake(input_ids, *args):  # a GPU that holds 80 tokens per batch
        shapes.append(tuple(input_ids.shape))
        if input_ids.numel() > 80:
            raise torch.OutOfMemoryError("fake CUDA out of memory")
        return forward(input_ids, *args)

    monkeypatch.setattr(lm, "_forward_stats", fake)
    _assert_close(lm.score(TEXTS), expected)
    assert any(rows * width > 80 for rows, width in shapes)  # it did run out, and recovered


def test_device_auto_places_the_model_and_scores_the_same(tiny_model_dir, fixed):
    _, expected = fixed
    auto = HFLanguageModel(ModelSpec(str(tiny_model_dir), device="auto"), batch_size=4, max_length=256, progress=False)
    for a, e in zip(auto.score(TEXTS), expected, strict=True):
        np.testing.assert_array_equal(a.logprobs, e.logprobs)
