"""The Hugging Face backend: token statistics equal a hand computation from an
unbatched forward pass, batching and padding change nothing, greedy generation
is batch-independent and stops on the stop condition, and loading is local."""

import numpy as np
import pytest
import torch
from leaktrace.errors import InputError
from leaktrace.models.backend import ModelSpec
from leaktrace.models.hf import HFLanguageModel, length_buckets
from leaktrace.models.loading import load_model

TEXTS = ["def add(a, b):\n    return a + b\n", "x = 1", "for i in range(10):\n    print(i * i)\n" * 3]


@pytest.fixture(scope="module")
def lm(tiny_model_dir):
    return HFLanguageModel(ModelSpec(str(tiny_model_dir)), batch_size=2, max_length=256, progress=False)


def test_token_stats_match_a_manual_forward_pass(lm):
    stats = lm.score(TEXTS)
    for text, s in zip(TEXTS, stats, strict=True):
        ids = torch.tensor([[lm.bos_id, *lm.encode(text)]])
        with torch.no_grad():
            logp = torch.log_softmax(lm.model(input_ids=ids).logits[0, :-1].double(), -1)
        expected = logp.gather(-1, ids[0, 1:, None]).squeeze(-1).numpy()
        p = logp.exp()
        mu = (p * logp).sum(-1).numpy()
        sigma = np.sqrt(((p * logp**2).sum(-1) - (p * logp).sum(-1) ** 2).numpy())
        assert s.n_tokens == len(lm.encode(text))
        np.testing.assert_allclose(s.logprobs, expected, atol=1e-4)
        np.testing.assert_allclose(s.mu, mu, atol=1e-4)
        np.testing.assert_allclose(s.sigma, sigma, atol=1e-4)
        assert not s.truncated


def test_batch_size_does_not_change_scores(tiny_model_dir, lm):
    single = HFLanguageModel(ModelSpec(str(tiny_model_dir)), batch_size=1, max_length=256, progress=False)
    for a, b in zip(lm.score(TEXTS), single.score(TEXTS), strict=True):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5)


def test_long_texts_are_truncated_and_flagged(tiny_model_dir):
    short = HFLanguageModel(ModelSpec(str(tiny_model_dir)), batch_size=2, max_length=8, progress=False)
    (s,) = short.score([TEXTS[2]])
    assert s.n_tokens == 7 and s.truncated


def test_greedy_generation_is_batch_independent_and_stops(lm):
    prompts = [lm.encode("def add(a, b):\n"), lm.encode("for i in range(10):\n")]
    batched = lm.generate(prompts, max_new_tokens=12)
    alone = [lm.generate([p], max_new_tokens=12)[0] for p in prompts]
    assert batched == alone
    full = lm.generate(prompts, max_new_tokens=40)
    stopped = lm.generate(prompts, max_new_tokens=40, stops=[lambda text: len(text) > 0, lambda text: False])
    assert full[0].startswith(stopped[0]) and len(stopped[0]) < len(full[0])
    assert stopped[1] == full[1]


def test_length_buckets_group_similar_lengths():
    assert length_buckets([1, 9, 3, 8], 2) == [[1, 3], [2, 0]]


def test_missing_local_model_or_adapter_is_a_clear_error(tiny_model_dir, tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_model(ModelSpec(str(tmp_path / "nowhere" / "model")))
    with pytest.raises(InputError, match="adapter directory does not exist"):
        load_model(ModelSpec(str(tiny_model_dir), adapter=str(tmp_path / "no-adapter")))


def test_a_hub_id_goes_through_hub_resolution():
    # conftest sets HF_HUB_OFFLINE, so an uncached hub id fails at once instead of downloading
    with pytest.raises(OSError):
        load_model(ModelSpec("leaktrace-test/definitely-not-cached"))
