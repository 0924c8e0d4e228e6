"""A byte-level BPE tokenizer trained from scratch (Hugging Face ``tokenizers``),
wrapped as a ``PreTrainedTokenizerFast`` so it saves and loads like any hub
tokenizer. Byte-level means every input is encodable: no unknown tokens."""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

EOS = "<|endoftext|>"
PAD = "<|pad|>"


def train_bpe_tokenizer(texts: Iterable[str], vocab_size: int, min_frequency: int = 2) -> PreTrainedTokenizerFast:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[EOS, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=EOS,
        eos_token=EOS,
        pad_token=PAD,
        model_max_length=1_000_000,
    )
