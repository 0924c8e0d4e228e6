"""Shared fixtures: a tiny random Llama with its own BPE tokenizer, saved to a
temporary directory, so model code is tested on real local files and never
reaches a hub."""

import os

# Tests never reach a network: the hub client reads this when it is imported.
os.environ["HF_HUB_OFFLINE"] = "1"

import pytest  # noqa: E402
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.models.tokenizer import train_bpe_tokenizer
from leaktrace.seeding import seed_everything
from transformers import LlamaConfig, LlamaForCausalLM

TRAINING_TEXT = [s.code for s in load_humaneval(shipped_humaneval_path(), "h")[:40]]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    seed_everything(0)
    tokenizer = train_bpe_tokenizer(TRAINING_TEXT, vocab_size=400)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    path = tmp_path_factory.mktemp("tiny-llama")
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
