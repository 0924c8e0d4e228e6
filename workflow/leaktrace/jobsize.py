"""What a job asks a cluster for: memory and wall time scaled from the model
it loads (its parameter count, read from the safetensors headers, and its
shape, read from config.json) and the data it handles (the uncompressed
size of its Parquet inputs), so a 7B model on the full corpus and the tiny
model on the micro config do not ask for one fixed figure.

The estimates are upper bounds by design (a job killed for memory or time
costs more than an idle reservation): weights in the run's dtype, float32
logits of a whole batch three times over (logits, log-softmax, moments), and
for training the activations of every layer; time as the FLOPs of the passes
(2 per parameter and token forward, 6 training) at a configured sustained
throughput, times a safety factor, with a floor."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
# bytes of text per token: a low figure (code tokenises at ~3.5-4), so the
# token count and everything scaled from it is over- rather than under-estimated
BYTES_PER_TOKEN = 3
# per training token and parameter (forward + backward), per forward token and parameter
FLOPS_PER_TOKEN = {"train": 6, "forward": 2}
# activations kept per layer, token and hidden unit, in units of the dtype
# (attention inputs, MLP intermediates, norms: a generous figure for a decoder)
TRAIN_ACTIVATIONS = 34


@dataclass(frozen=True)
class ModelSize:
    parameters: int
    vocab_size: int
    hidden_size: int
    num_layers: int
    max_positions: int


def parameter_count(model_dir: str | Path) -> int:
    """Parameters of every tensor in the directory's ``*.safetensors`` files,
    from their headers (no weight is read)."""
    files = sorted(Path(model_dir).glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"{model_dir}: no *.safetensors file")
    total = 0
    for file in files:
        with open(file, "rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            header = json.loads(handle.read(length))
        total += sum(math.prod(t["shape"]) for name, t in header.items() if name != "__metadata__")
    return total


def model_size(model_dir: str | Path) -> ModelSize:
    config = json.loads((Path(model_dir) / "config.json").read_text())
    config = config.get("text_config", config)
    return ModelSize(
        parameters=parameter_count(model_dir),
        vocab_size=config["vocab_size"],
        hidden_size=config["hidden_size"],
        num_layers=config["num_hidden_layers"],
        max_positions=config.get("max_position_embeddings", 2048),
    )


def parquet_tokens(paths: Iterable[str | Path]) -> int:
    """Tokens in Parquet files, estimated from their uncompressed size."""
    total = 0
    for path in paths:
        meta = pq.read_metadata(path)
        total += sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    return total // BYTES_PER_TOKEN


def parquet_rows(path: str | Path) -> int:
    return pq.read_metadata(path).num_rows


def memory_mb(model: ModelSize, *, dtype: str, batch_size: int, context: int, on_gpu: bool, training: bool,
              overhead_mb: int, processes: int = 1) -> int:
    """Host memory of a job: the interpreter and libraries, the weights (loaded
    in host memory first even for a GPU job, by each of its ``processes``) and,
    when the model runs on the CPU, the batch's logits and (training)
    activations. Rounded up to 100 MB."""
    width = DTYPE_BYTES[dtype]
    need = model.parameters * width * processes
    if not on_gpu:
        need += 3 * batch_size * context * model.vocab_size * 4
        if training:
            need += TRAIN_ACTIVATIONS * batch_size * context * model.hidden_size * model.num_layers * width
    return overhead_mb + math.ceil(need * 1.25 / 1e8) * 100


def runtime_min(model: ModelSize, *, tokens: int, kind: str, passes: float, flops_per_s: float, safety: float,
                minimum: int) -> int:
    """Wall-clock minutes of ``passes`` passes over ``tokens`` tokens."""
    seconds = FLOPS_PER_TOKEN[kind] * model.parameters * tokens * passes / flops_per_s
    return max(minimum, math.ceil(seconds * safety / 60))
