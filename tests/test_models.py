"""The Hugging Face backend: token statistics equal a hand computation from an
unbatched forward pass, batching and padding change nothing, greedy generation
is batch-independent and stops on the stop condition, and loading is local."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from leaktrace.detect.srdetection_blackbox import continuation_overlaps
from leaktrace.errors import InputError
from leaktrace.models.backend import ModelSpec
from leaktrace.models.context import context_limit, fit_prefix, trained_context
from leaktrace.models.hf import HFLanguageModel, distribution_stats
from leaktrace.models.loading import load_model, load_model_config, load_tokenizer
from leaktrace.models.token_counts import (
    cached_token_counts,
    count_tokens,
    read_token_counts,
    tokenizer_fingerprint,
    write_token_counts,
)
from leaktrace.models.tokenizer import train_bpe_tokenizer

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


def test_split_projection_and_log_probability_only_rows_equal_the_whole_model(lm, tmp_path):
    """Scoring projects the decoder's hidden states chunk by chunk; rows that
    ask for log-probabilities only skip mu and sigma. Both agree with the
    model run whole, and the cache stores the skipped moments as nulls."""
    from leaktrace.models.token_table import read_token_stats, write_token_stats

    assert lm._split_head is not None
    fast = lm.score(TEXTS, moments=[True, False] + [True] * (len(TEXTS) - 2))
    split, lm._split_head = lm._split_head, None
    try:
        whole = lm.score(TEXTS)
    finally:
        lm._split_head = split
    for f, w in zip(fast, whole, strict=True):
        np.testing.assert_allclose(f.logprobs, w.logprobs, atol=1e-5)
    assert fast[1].mu is None and fast[1].sigma is None
    np.testing.assert_allclose(fast[0].sigma, whole[0].sigma, atol=1e-5)
    write_token_stats([("s", i, "text") for i in range(len(TEXTS))], fast, tmp_path / "t.parquet")
    back = read_token_stats(tmp_path / "t.parquet")
    assert back[("s", 1, "text")].mu is None and back[("s", 0, "text")].mu is not None
    with pytest.raises(ValueError, match="moment flags"):
        lm.score(TEXTS, moments=[True])


def test_next_token_statistics_keep_precision_for_flat_distributions():
    # near-uniform logits: |log p| ~ 8.3 while sigma ~ 0.1, where E[(log p)^2] - mu^2
    # in float32 loses about 0.2% of sigma to cancellation
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(64, 4096, generator=generator) * 0.1
    targets = torch.randint(0, 4096, (64,), generator=generator)
    token_lp, mu, sigma = distribution_stats(logits, targets)
    logp = torch.log_softmax(logits.double(), -1)
    p = logp.exp()
    exact_mu = (p * logp).sum(-1)
    exact_sigma = (p * (logp - exact_mu[:, None]) ** 2).sum(-1).sqrt()
    np.testing.assert_allclose(token_lp, logp.gather(-1, targets[:, None]).squeeze(-1), atol=1e-5)
    np.testing.assert_allclose(mu, exact_mu, atol=1e-4)
    np.testing.assert_allclose(sigma, exact_sigma, rtol=2e-5)


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


def test_missing_local_model_or_adapter_is_a_clear_error(tiny_model_dir, tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_model(ModelSpec(str(tmp_path / "nowhere" / "model")))
    with pytest.raises(InputError, match="adapter directory does not exist"):
        load_model(ModelSpec(str(tiny_model_dir), adapter=str(tmp_path / "no-adapter")))


def test_a_hub_id_goes_through_hub_resolution():
    # conftest sets HF_HUB_OFFLINE, so an uncached hub id fails at once instead of downloading
    with pytest.raises(OSError):
        load_model(ModelSpec("leaktrace-test/definitely-not-cached"))


PREFIX = "def sub(a, b):\n    return a - b\n\n\n"


def manual_conditioned(lm, prefix_ids, text):
    """log p of the text's tokens after [BOS] + prefix_ids, from one unbatched full-sequence pass."""
    text_ids = lm.encode(text)
    ids = torch.tensor([[lm.bos_id, *prefix_ids, *text_ids]])
    with torch.no_grad():
        logp = torch.log_softmax(lm.model(input_ids=ids).logits[0].double(), -1)
    start = 1 + len(prefix_ids)
    return logp[start - 1 : -1].gather(-1, ids[0, start:, None]).squeeze(-1).numpy()


def test_conditioned_scoring_equals_a_full_sequence_pass(lm):
    stats = lm.score_conditioned([PREFIX], TEXTS)
    unconditioned = lm.score(TEXTS)
    prefix_ids = lm.encode(PREFIX)
    for text, s, u in zip(TEXTS, stats, unconditioned, strict=True):
        assert list(s.token_ids) == list(u.token_ids) == lm.encode(text)  # prefix tokens unscored, text alone
        assert (s.prefix_shots, s.prefix_tokens) == (1, len(prefix_ids))
        np.testing.assert_allclose(s.logprobs, manual_conditioned(lm, prefix_ids, text), atol=1e-4)
        assert not np.allclose(s.logprobs, u.logprobs, atol=1e-3)  # the prefix does condition the text
        # no second BOS between prefix and text: that sequence scores differently
        with_bos = manual_conditioned(lm, [*prefix_ids, lm.bos_id], text)
        assert np.abs(s.logprobs - with_bos).max() > 1e-3


def test_conditioned_scoring_without_shots_is_the_unconditioned_pass(lm, tiny_model_dir):
    for a, b in zip(lm.score_conditioned([], TEXTS), lm.score(TEXTS, moments=[False] * len(TEXTS)), strict=True):
        assert (a.prefix_shots, a.prefix_tokens) == (0, 0) and a.mu is None  # ReCaLL reads log-probabilities only
        np.testing.assert_array_equal(a.logprobs, b.logprobs)  # the same pass, bit for bit
    # each text's result does not depend on the texts batched with it
    single = HFLanguageModel(ModelSpec(str(tiny_model_dir)), batch_size=1, progress=False)
    for a, b in zip(lm.score_conditioned([PREFIX], TEXTS), single.score_conditioned([PREFIX], TEXTS), strict=True):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5)


def test_fit_prefix_drops_shots_from_the_front_then_cuts_the_first_kept():
    shots = [[1, 2, 3], [4, 5], [6, 7, 8, 9]]
    assert fit_prefix(shots, 9) == ([1, 2, 3, 4, 5, 6, 7, 8, 9], 3)
    assert fit_prefix(shots, 20) == ([1, 2, 3, 4, 5, 6, 7, 8, 9], 3)
    assert fit_prefix(shots, 6) == ([4, 5, 6, 7, 8, 9], 2)
    assert fit_prefix(shots, 5) == ([5, 6, 7, 8, 9], 2)  # the second shot cut from its front
    assert fit_prefix(shots, 4) == ([6, 7, 8, 9], 1)
    assert fit_prefix(shots, 2) == ([8, 9], 1)
    assert fit_prefix(shots, 0) == ([], 0)


def test_context_is_the_trained_one_capped_by_the_config(tiny_model_dir):
    config = load_model_config(ModelSpec(str(tiny_model_dir)))  # max_position_embeddings 512
    assert trained_context(config) == 512
    assert context_limit(config, None) == 512 and context_limit(config, 1024) == 512 and context_limit(config, 64) == 64
    assert HFLanguageModel(ModelSpec(str(tiny_model_dir)), progress=False).max_length == 512
    with pytest.raises(ValueError, match="declares no context length"):
        trained_context(object())


def test_shipped_model_declares_the_context_it_was_pretrained_with():
    root = Path(__file__).resolve().parents[1]
    declared = json.loads((root / "resources/models/leaktrace-tiny/config.json").read_text())["max_position_embeddings"]
    pretrained = yaml.safe_load((root / "config/config.yaml").read_text())["base_model"]["pretrain"]["settings"][
        "context_length"
    ]
    assert declared == pretrained == 512


def test_conditioned_scoring_fits_every_prefix_beside_its_text(tiny_model_dir):
    """A 28-token context, shots of a and b tokens, and texts that leave room
    for both shots, for part of the second only, and for nothing."""
    short = HFLanguageModel(ModelSpec(str(tiny_model_dir)), batch_size=2, max_length=28, progress=False)
    shots = ["x = 1\n\n\n", "def sub(a, b):\n    return a - b\n\n\n"]
    first, second = short.encode(shots[0]), short.encode(shots[1])
    roomy, tight, full = "y = 2", TEXTS[0], TEXTS[2]
    n_roomy, n_tight = len(short.encode(roomy)), len(short.encode(tight))
    assert n_roomy + len(first) + len(second) <= 27 < n_tight + len(second) and n_tight < 27 <= len(short.encode(full))
    stats = short.score_conditioned(shots, [roomy, tight, full])
    expected = [(first + second, 2), (second[len(second) - (27 - n_tight) :], 1), ([], 0)]
    for text, s, (prefix, n_shots) in zip([roomy, tight, full], stats, expected, strict=True):
        assert (s.prefix_shots, s.prefix_tokens) == (n_shots, len(prefix))
        assert 1 + s.prefix_tokens + s.n_tokens <= 28
        assert list(s.token_ids) == short.encode(text)[:27]  # the text is never cut for the prefix
        np.testing.assert_allclose(s.logprobs, manual_conditioned(short, prefix, short.decode(s.token_ids)), atol=1e-4)
    assert stats[2].truncated and not stats[1].truncated
    assert (stats[1].prefix_tokens, stats[2].prefix_tokens) == (27 - n_tight, 0)


def test_chat_needs_a_template_and_then_generates_greedily(tiny_model_dir):
    chat_lm = HFLanguageModel(ModelSpec(str(tiny_model_dir)), batch_size=2, max_length=256, progress=False)
    messages = [{"role": "user", "content": "def add(a, b):"}]
    with pytest.raises(ValueError, match="no chat template"):
        chat_lm.chat(messages, max_new_tokens=5)
    chat_lm.tokenizer.chat_template = (
        "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}"
    )
    reply = chat_lm.chat(messages, max_new_tokens=8)
    assert reply == chat_lm.generate([chat_lm.encode("user: def add(a, b):\nassistant:")], max_new_tokens=8)[0]


def test_token_counts_round_trip_and_are_keyed_by_tokenizer(lm, tmp_path, tiny_model_dir):
    texts = ["def f(x):\n    return x\n", "x = x + 1\n"]
    counts = count_tokens(lm.tokenizer, texts, batch_size=1)
    expected = np.bincount(np.array(lm.encode(texts[0]) + lm.encode(texts[1])), minlength=len(lm.tokenizer))
    np.testing.assert_array_equal(counts.counts, expected)
    assert counts.tokenizer == tokenizer_fingerprint(load_tokenizer(ModelSpec(str(tiny_model_dir))))
    path = tmp_path / "counts.parquet"
    write_token_counts(counts, path)
    again = read_token_counts(path, counts.tokenizer)
    assert again.tokenizer == counts.tokenizer
    np.testing.assert_array_equal(again.counts, counts.counts)
    with pytest.raises(InputError, match="no token counts for tokenizer other"):
        read_token_counts(path, "other")
    with pytest.raises(ValueError, match="the model's tokenizer is other"):
        counts.check_tokenizer("other")
    cached = cached_token_counts(lm.tokenizer, texts, tmp_path / "cache", "tiny")
    assert (tmp_path / "cache" / f"tiny.{counts.tokenizer}.parquet").exists()
    reread = cached_token_counts(lm.tokenizer, iter(()), tmp_path / "cache", "tiny")  # read, not recounted
    np.testing.assert_array_equal(reread.counts, cached.counts)
    other = train_bpe_tokenizer(texts * 5, vocab_size=300)
    assert tokenizer_fingerprint(other) != counts.tokenizer


def test_blackbox_continuations_on_the_tiny_model(lm):
    texts = [("s", 0, TEXTS[0]), ("s", 1, TEXTS[0].replace("add", "plus")), ("t", 0, TEXTS[2])]
    rows = continuation_overlaps(lm, texts, prefix_fraction=0.5, ngram=2, max_new_tokens=6)
    for (sid, vid, text), row in zip(texts, rows, strict=True):
        ids = lm.encode(text)
        assert (row["sample_id"], row["variant_id"]) == (sid, vid)
        assert row["prefix_tokens"] == len(ids) // 2 and row["prefix_tokens"] + row["suffix_tokens"] == len(ids)
        assert len(row["generated_ids"]) <= min(6, len(row["suffix_ids"]))
        expected = lm.generate([ids[: len(ids) // 2]], max_new_tokens=6)[0]
        assert lm.encode(expected)[: len(row["generated_ids"])] == row["generated_ids"]
        assert 0.0 <= row["ngo"] <= 1.0
