"""select-lr: the testbed's LoRA learning rate, chosen by a rule that looks at
no detector and no membership label.

A run continues pretraining on the mix of member code and general text, the
way a model builder would; so the learning rate is the one a model builder
would pick: the grid value whose adapter, after the last configured epoch,
has the lowest loss on general text held out of the mix (chunks of the same
corpus that the mix never drew). Ties go to the smaller rate. Every rate
tried is kept in the output table, and the config records the choice."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.models.configured import model_spec
from leaktrace.models.context import context_limit
from leaktrace.models.loading import load_model_config, load_tokenizer
from leaktrace.seeding import derive_seed, rng_for
from leaktrace.settings.learning_rate import SelectionSettings
from leaktrace.settings.models import ModelSettings
from leaktrace.train.lora import LoraSettings, train_lora
from leaktrace.train.mix import paragraph_chunks

log = logging.getLogger(__name__)

SELECTION_SCHEMA = pa.schema(
    [
        ("learning_rate", pa.float64()),
        ("epoch", pa.int32()),
        ("train_loss", pa.float64()),  # mean training loss of the last epoch
        ("held_out_loss", pa.float64()),  # mean token loss on the held-out general text
        ("held_out_texts", pa.int32()),
        ("selected", pa.bool_()),
    ]
)


def held_out_text(
    mix: Path, text_parts: Sequence[Path], count_tokens, chunk_tokens: int, n: int, seed: int
) -> list[str]:
    """``n`` general-text chunks, cut as the mix cuts them, that the mix never drew."""
    used = {r["source_id"] for r in read_records(mix, ["kind", "source_id"]) if r["kind"] == "text"}
    pool = [
        chunk
        for part in text_parts
        for r in read_records(part, ["doc_id", "text"])
        for k, chunk in enumerate(paragraph_chunks(r["text"], count_tokens, chunk_tokens))
        if f"{r['doc_id']}#{k}" not in used
    ]
    if len(pool) < n:
        raise ValueError(f"only {len(pool)} general-text chunks are held out of {mix}; the selection asks for {n}")
    return rng_for(seed, "learning-rate", "held-out").sample(pool, n)


def select_learning_rate(
    mix: Path, text: tuple[Path, ...], model: ModelSettings, settings: SelectionSettings, seed: int, output: Path
) -> None:
    """The testbed's LoRA learning rate: each rate of
    ``train.learning_rate_selection.grid`` trained on ``mix`` as a LoRA run
    trains, and scored on general text (the corpus shards ``text``) held out
    of the mix; the table marks the rate of lowest held-out loss."""
    s = settings
    from leaktrace.models.hf import HFLanguageModel  # imports torch: only where a model runs

    selection = s.learning_rate_selection
    spec = model_spec(model, None)
    tokenizer = load_tokenizer(spec)
    held_out = held_out_text(
        mix,
        text,
        lambda t: len(tokenizer(t, add_special_tokens=False)["input_ids"]),
        context_limit(load_model_config(spec), model.max_length) - 2,
        selection.held_out_texts,
        seed,
    )
    texts = [r["text"] for r in read_records(mix, ["text"])]
    last = max(s.epochs)
    rows = []
    for rate in sorted(selection.grid):
        lora = LoraSettings.from_config(
            settings,
            max_length=model.max_length,
            seed=derive_seed(seed, "lora"),
            epochs=(last,),
            learning_rate=rate,
        )
        epochs: list[dict] = []
        with tempfile.TemporaryDirectory(prefix="leaktrace-lr-") as tmp:
            train_lora(spec, texts, lora, lambda epoch: Path(tmp) / f"epoch-{epoch}", epochs.append)
            lm = HFLanguageModel(
                model_spec(model, str(Path(tmp) / f"epoch-{last}")),
                batch_size=s.batch_size,
                max_length=model.max_length,
                progress=False,
            )
            stats = lm.score(held_out)
        loss = float(np.mean(np.concatenate([-s.logprobs.astype(np.float64) for s in stats])))
        rows.append(
            {
                "learning_rate": rate,
                "epoch": last,
                "train_loss": epochs[-1]["loss"],
                "held_out_loss": loss,
                "held_out_texts": len(held_out),
                "selected": False,
            }
        )
        log.info(
            "learning rate %g: training loss %.4f, held-out general-text loss %.4f", rate, epochs[-1]["loss"], loss
        )
    best = min(rows, key=lambda r: (r["held_out_loss"], r["learning_rate"]))
    best["selected"] = True
    write_table(rows, SELECTION_SCHEMA, output)
    log.info("selected learning rate %g (config train.learning_rate: %g)", best["learning_rate"], s.learning_rate)
