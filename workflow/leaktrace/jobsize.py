"""What a job asks a cluster for: memory and wall time from what it does
with its inputs, so a 7B model on the full corpus and the tiny model on the
micro config do not ask for one fixed figure.

Every job is a fresh interpreter: ``start_s`` of start-up (imports) and
``base_mb`` of memory before any work. Then, by what the job does:

- reads and writes tables (every job): its Parquet inputs' uncompressed bytes
  at ``cpu_bytes_per_s``, held in memory ``data_copies`` times (a pandas frame
  of them and the arrays it derives);
- runs programs in the sandbox: ``sandbox_run_s`` a run (a program against its
  tests), the runs shared by the job's workers;
- runs a model: weights in the run's dtype (loaded in host memory first even
  for a GPU job, once per process), and on a CPU float32 logits of a whole
  batch three times over (logits, log-softmax, moments; six times with a
  backward pass) and, training, the activations of every layer; time as the
  FLOPs of the tokens it passes (2 per
  parameter and token forward, plus attention over the context; three times
  that training) at a sustained throughput, plus ``token_s`` a token for what
  is not FLOPs (tokenising, batching, the Python loop: what a small model's
  pass is made of), and for each generated token a decoding step of its batch
  (``decode_step_s``);
- tokenises text without a model: ``token_s`` a token;
- scans a corpus it streams (a ``leakage_scan`` shard of a files, JSONL,
  Parquet or hub corpus, read outside the pipeline's tables): the CPU
  seconds per MB of corpus text its preset was measured at
  (``scan_s_per_mb``), over the bytes of its own share of the corpus, and in
  memory the largest document it holds at once (``max_bytes``)
  ``data_copies`` times plus the Parquet it holds while reading (a row
  group's compressed column chunks and one decoded batch).

Times are multiplied by ``safety``, rounded up to whole minutes (SLURM's
unit), at least ``min_runtime``, and then multiplied by the attempt (a job
that ran out of its limit is retried with twice the time and memory: the
profile's ``retries``), so a retry gets more time even where the floor set
the first attempt's. Token counts are estimated from bytes (BYTES_PER_TOKEN, a low
figure, so they err high)."""

from __future__ import annotations

import errno
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
# float32 logits of a batch held at once: logits, log-softmax and the moments
# of a forward pass; with a backward pass, their gradients too
LOGIT_COPIES = {False: 3, True: 6}


@dataclass(frozen=True)
class ModelSize:
    parameters: int
    vocab_size: int
    hidden_size: int
    num_layers: int
    max_positions: int


@dataclass(frozen=True)
class Rates:
    """The `cluster` config block's figures for the estimates."""

    start_s: float
    base_mb: int
    cpu_bytes_per_s: float
    data_copies: float
    sandbox_run_s: float
    token_s: float
    decode_step_s: float
    flops_per_s_cpu_core: float
    flops_per_s_gpu: float
    safety: float
    min_runtime: int
    scan_s_per_mb: dict[str, float]  # preset -> CPU s of a leakage_scan job per MB of corpus text

    @classmethod
    def from_config(cls, cluster: dict) -> Rates:
        return cls(
            start_s=cluster["start_s"],
            base_mb=cluster["base_mb"],
            cpu_bytes_per_s=cluster["cpu_bytes_per_s"],
            data_copies=cluster["data_copies"],
            sandbox_run_s=cluster["sandbox_run_s"],
            token_s=cluster["token_s"],
            decode_step_s=cluster["decode_step_s"],
            flops_per_s_cpu_core=cluster["flops_per_s"]["cpu_core"],
            flops_per_s_gpu=cluster["flops_per_s"]["gpu"],
            safety=cluster["safety"],
            min_runtime=cluster["min_runtime"],
            scan_s_per_mb=dict(cluster["scan_s_per_mb"]),
        )


@dataclass(frozen=True)
class TableShape:
    rows: int
    bytes: int  # uncompressed
    originals: int  # rows of the benchmark's own functions (variant_id 0) in a table of variants; else every row

    @property
    def tokens(self) -> int:
        return self.bytes // BYTES_PER_TOKEN

    def only_originals(self) -> TableShape:
        """The originals' share of the table (their bytes in proportion to their rows)."""
        share = self.originals / self.rows if self.rows else 0
        return TableShape(self.originals, round(self.bytes * share), self.originals)


def parquet_shape(path: str | Path) -> TableShape:
    """Rows and uncompressed bytes of a Parquet file, from its footer, and its
    originals (its ``variant_id`` column, when it has one, is read). A file not
    made yet raises FileNotFoundError naming it: Snakemake then defers the
    estimate until the job's inputs exist (``<TBD>`` in a dry run)."""
    if not Path(path).exists():
        raise FileNotFoundError(errno.ENOENT, "not made yet", str(path))
    file = pq.ParquetFile(path)
    meta = file.metadata
    originals = meta.num_rows
    if "variant_id" in file.schema_arrow.names:
        originals = int((file.read(columns=["variant_id"]).column(0).to_numpy(zero_copy_only=False) == 0).sum())
    return TableShape(
        meta.num_rows, sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)), originals
    )


def tables_shape(paths: Iterable[str | Path]) -> TableShape:
    shapes = [parquet_shape(p) for p in paths]
    return TableShape(sum(s.rows for s in shapes), sum(s.bytes for s in shapes), sum(s.originals for s in shapes))


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


def llama_size(
    *, vocab_size: int, hidden_size: int, intermediate_size: int, num_layers: int, context_length: int, **_
) -> ModelSize:
    """The size of a Llama decoder with untied embeddings, from its shape (a
    model the pipeline pretrains: no safetensors to read yet)."""
    per_layer = 4 * hidden_size * hidden_size + 3 * hidden_size * intermediate_size + 2 * hidden_size
    return ModelSize(
        parameters=2 * vocab_size * hidden_size + num_layers * per_layer + hidden_size,
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_layers=num_layers,
        max_positions=context_length,
    )


def _round_mb(megabytes: float) -> int:
    return math.ceil(megabytes / 100) * 100


def data_memory_mb(data: TableShape, rates: Rates) -> float:
    return data.bytes * rates.data_copies / 1e6


def cpu_memory_mb(data: TableShape, rates: Rates, *, processes: int = 1, attempt: int = 1) -> int:
    """A CPU job's memory: an interpreter for each of its ``processes`` (a job
    with several threads runs them as worker processes: sandbox runs, process
    pools) and its tables, rounded up to 100 MB."""
    return _round_mb((rates.base_mb * processes + data_memory_mb(data, rates)) * attempt)


def model_memory_mb(
    model: ModelSize,
    rates: Rates,
    *,
    dtype: str,
    batch_size: int,
    context: int,
    on_gpu: bool,
    training: bool,
    processes: int = 1,
    attempt: int = 1,
) -> int:
    """Host memory of a job that runs a model: the interpreter, the weights
    (loaded in host memory first even for a GPU job, by each of its
    ``processes``) and, when the model runs on the CPU, the batch's logits and
    (training) activations. Rounded up to 100 MB. Known from the config
    alone, before the job's inputs exist (a cluster.one_job group is sized
    with it)."""
    width = DTYPE_BYTES[dtype]
    need = model.parameters * width * processes
    if not on_gpu:
        need += LOGIT_COPIES[training] * batch_size * context * model.vocab_size * 4
        if training:
            need += TRAIN_ACTIVATIONS * batch_size * context * model.hidden_size * model.num_layers * width
    return _round_mb((rates.base_mb + need * 1.25 / 1e6) * attempt)


def scan_memory_mb(data: TableShape, rates: Rates, *, held_bytes: int, document_bytes: int, attempt: int = 1) -> int:
    """A leakage scan job's memory over a corpus it streams: an interpreter,
    its Parquet inputs (the benchmark and its index) as :func:`cpu_memory_mb`
    has them, the largest document it holds (``document_bytes``, the scan's
    ``max_bytes``: larger ones are chunked) ``data_copies`` times, and
    ``held_bytes`` of Parquet held while it is read. Rounded up to 100 MB."""
    corpus = (document_bytes * rates.data_copies + held_bytes) / 1e6
    return _round_mb((rates.base_mb + data_memory_mb(data, rates) + corpus) * attempt)


def scan_seconds(corpus_bytes: int, preset: str, rates: Rates) -> float:
    """CPU seconds of a leakage scan job over ``corpus_bytes`` of corpus
    text at its preset's measured rate (1 MB = 10^6 bytes, as the figure's
    script counts)."""
    return corpus_bytes / 1e6 * rates.scan_s_per_mb[preset]


def runtime_min(work_s: float, rates: Rates, *, attempt: int = 1) -> int:
    """Minutes to ask for a job whose work takes ``work_s`` seconds after
    start-up: the estimate with its floor, times the attempt (the floor
    applies first, so a retry never gets the first attempt's time again)."""
    return max(rates.min_runtime, math.ceil((rates.start_s + work_s) * rates.safety / 60)) * attempt


def data_seconds(data: TableShape, rates: Rates) -> float:
    return data.bytes / rates.cpu_bytes_per_s


def sandbox_seconds(runs: int, workers: int, rates: Rates) -> float:
    return runs * rates.sandbox_run_s / max(1, workers)


def flops_per_token(model: ModelSize, kind: str, context: int) -> float:
    """FLOPs of a token through the model (Kaplan et al. 2020): 2 per parameter
    and, for attention over up to ``context`` tokens, 2 x layers x context x
    hidden, forward; three times that training (the backward pass is twice
    the forward)."""
    forward = 2 * model.parameters + 2 * model.num_layers * context * model.hidden_size
    return forward * FLOPS_PER_TOKEN[kind] / FLOPS_PER_TOKEN["forward"]


def model_seconds(
    model: ModelSize,
    rates: Rates,
    *,
    kind: str,
    tokens: int,
    generated: int,
    batch_size: int,
    context: int,
    flops_per_s: float,
) -> float:
    """Seconds of ``tokens`` passed through the model (``kind`` train or
    forward) and ``generated`` new tokens decoded in batches of ``batch_size``."""
    flops = flops_per_token(model, kind, context) * tokens + flops_per_token(model, "forward", context) * generated
    return flops / flops_per_s + (tokens + generated) * rates.token_s + generated * rates.decode_step_s / batch_size
