"""train: the mixed corpus (and the sham control's, the same mix without the
benchmark), then LoRA continued pretraining of the base model with one
adapter per requested epoch."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.contamination.exchangeability import shard_budget
from leaktrace.data.samples import require_runnable
from leaktrace.models.configured import model_spec
from leaktrace.models.context import context_limit
from leaktrace.models.loading import load_model_config, load_tokenizer
from leaktrace.seeding import derive_seed, rng_for
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.train import TrainSettings
from leaktrace.train.lora import LoraSettings, train_lora
from leaktrace.train.mix import MixItem, build_mix
from leaktrace.train.sham import sham_mix

log = logging.getLogger(__name__)

MIX_SCHEMA = pa.schema(
    [("kind", pa.string()), ("source_id", pa.string()), ("text", pa.string()), ("n_tokens", pa.int32())]
)

TRAIN_LOG_SCHEMA = pa.schema(
    [("epoch", pa.int32()), ("step", pa.int64()), ("loss", pa.float64()), ("lr", pa.float64()), ("tokens", pa.int64())]
)


def make_mix(
    samples: Path,
    benchmark: Path,
    text: tuple[Path, ...],
    text_per_code: float,
    model: ModelSettings,
    seed: int,
    output: Path,
    member_order: Literal["shuffled", "canonical"] = "shuffled",
    member_copies: int = 1,
) -> None:
    """The training mix: the split's members (their code from the benchmark
    table) and ``text_per_code`` general-text tokens (from the corpus shards
    ``text``) per member-code token, cut to the base model's context.

    ``member_order`` canonical packs the members in the benchmark's order (as
    the exchangeability test packs its shards); ``member_copies`` inserts each
    member that many times, the text drawn for one copy."""
    members = {r["sample_id"] for r in read_records(samples, ["sample_id", "split"]) if r["split"] == "member"}
    rows = [r for r in read_records(benchmark) if r["sample_id"] in members]
    require_runnable(rows, str(benchmark), "training-mix")
    codes = [(r["sample_id"], r["code"]) for r in rows]
    docs = [(r["doc_id"], r["text"]) for part in text for r in read_records(part, ["doc_id", "text"])]
    spec = model_spec(model, None)
    tokenizer = load_tokenizer(spec)
    context = context_limit(load_model_config(spec), model.max_length)
    items = build_mix(
        codes,
        docs,
        text_per_code=text_per_code,
        count_tokens=lambda t: len(tokenizer(t, add_special_tokens=False)["input_ids"]),
        chunk_tokens=context - 2,  # room for BOS and EOS
        rng=rng_for(seed, "mix"),
        member_order=member_order,
        # canonical members packed as the exchangeability test packs its shards, so each shard is a sequence trained on
        member_chunk_tokens=shard_budget(context),
        member_copies=member_copies,
    )
    write_table([vars(i) for i in items], MIX_SCHEMA, output)
    code_tokens = sum(i.n_tokens for i in items if i.kind == "member")
    text_tokens = sum(i.n_tokens for i in items if i.kind == "text")
    n_chunks = sum(i.kind == "member" for i in items)
    log.info(
        "mix: %d members (%s, x%d, %d chunks, %d tokens), %d text chunks (%d tokens)",
        len(codes),
        member_order,
        member_copies,
        n_chunks,
        code_tokens,
        len(items) - n_chunks,
        text_tokens,
    )


def make_sham_mix(mix: Path, code: tuple[Path, ...], model: ModelSettings, seed: int, output: Path) -> None:
    """The sham control's mix: the target's ``mix`` with its members replaced
    by length-matched functions of the code corpus (its shards ``code``; train/sham.py)."""
    items = [MixItem(**r) for r in read_records(mix)]
    docs = [(r["doc_id"], r["text"]) for part in code for r in read_records(part, ["doc_id", "text"])]
    tokenizer = load_tokenizer(model_spec(model, None))
    sham = sham_mix(
        items, docs, lambda t: len(tokenizer(t, add_special_tokens=False)["input_ids"]), rng_for(seed, "sham-mix")
    )
    write_table([vars(i) for i in sham], MIX_SCHEMA, output)
    before = sum(i.n_tokens for i in items if i.kind == "member")
    after = sum(i.n_tokens for i in sham if i.kind != "text")
    log.info(
        "sham mix: %d member sequences (%d tokens) replaced by as many functions of non-benchmark code (%d tokens)",
        sum(i.kind == "member" for i in items),
        before,
        after,
    )


def train_adapters(
    mix: Path,
    model: ModelSettings,
    settings: TrainSettings,
    seed: int,
    adapters: tuple[Path, ...],
    log: Path,
    checkpoint_dir: Path | None = None,
) -> None:
    """One LoRA run of the base model on ``mix``: an adapter after each of
    ``train.epochs`` (``adapters``, in that order) and the training log.

    With ``checkpoint_dir`` (outside the outputs) a killed run's rerun
    resumes from its last checkpoint (train.checkpoint)."""
    epochs = settings.epochs
    if len(adapters) != len(epochs):
        raise ValueError(f"{len(adapters)} adapter outputs for epochs {epochs}")
    lora = LoraSettings.from_config(settings, max_length=model.max_length, seed=derive_seed(seed, "lora"))
    by_epoch = dict(zip(epochs, adapters, strict=True))
    rows: list[dict] = []
    train_lora(
        model_spec(model, None),
        [r["text"] for r in read_records(mix, ["text"])],
        lora,
        by_epoch.__getitem__,
        rows.append,
        checkpoint_dir,
    )
    if not _is_main_process():
        return
    write_table(rows, TRAIN_LOG_SCHEMA, log)


def _is_main_process() -> bool:
    """Under ``accelerate launch`` (DDP), only the first process writes the log."""
    from accelerate import PartialState

    return PartialState().is_main_process
