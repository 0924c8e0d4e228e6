"""The CUDA code paths, checked against the CPU: the token pass (plain and
ReCaLL-conditioned) in float32 and bfloat16, greedy generation, LoRA
training with bf16 mixed precision, and a SIGTERM checkpoint resumed with
the CUDA random state. Skipped where torch sees no GPU (CI has none); run on
a GPU node with ``pytest -m gpu tests/test_gpu.py``."""

import multiprocessing
import os
import shutil
import signal
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.models.backend import ModelSpec
from leaktrace.models.hf import HFLanguageModel
from leaktrace.train.lora import LoraSettings, train_lora

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

SHIPPED = Path(__file__).resolve().parents[1] / "resources/models/leaktrace-tiny"  # trained: its log p vary widely
SAMPLES = load_humaneval(shipped_humaneval_path(), "h")[:24]
CODES = [s.code for s in SAMPLES]


def _pass(model_dir, device, dtype="float32", **kwargs):
    return HFLanguageModel(ModelSpec(str(model_dir), dtype=dtype, device=device), progress=False, **kwargs)


def _gaps(cpu, gpu, field):
    """(largest, mean) absolute difference of one statistic over every token."""
    gaps = np.concatenate([np.abs(getattr(a, field) - getattr(b, field)) for a, b in zip(cpu, gpu, strict=True)])
    return float(gaps.max()), float(gaps.mean())


# float32: the same arithmetic in another order; bfloat16: 8 bits of mantissa
# through 4 layers, against log p that spread over about 15 nats on this model
@pytest.mark.parametrize("dtype, largest, mean", [("float32", 1e-4, 1e-5), ("bfloat16", 0.5, 0.05)])
def test_token_pass_on_cuda_matches_the_cpu(dtype, largest, mean):
    """Every statistic the detectors read (log p, Min-K%++'s mu and sigma),
    batched by a token budget on the GPU and by fixed batches on the CPU."""
    cpu = _pass(SHIPPED, "cpu", batch_size=8).score(CODES)
    gpu = _pass(SHIPPED, "cuda", dtype, batch_size=64, token_budget=4096).score(CODES)
    assert [s.token_ids.tolist() for s in cpu] == [s.token_ids.tolist() for s in gpu]
    for field in ("logprobs", "mu", "sigma"):
        worst, average = _gaps(cpu, gpu, field)
        assert worst < largest and average < mean, (field, worst, average)


def test_device_auto_places_the_model_on_the_gpu_and_scores_as_cuda_does():
    """``device: auto`` (accelerate's device_map, for a model larger than one
    GPU) on a model that fits one: the same statistics as ``cuda``."""
    auto = _pass(SHIPPED, "auto", token_budget=4096)
    assert auto.model.device.type == "cuda"
    cuda = _pass(SHIPPED, "cuda", token_budget=4096).score(CODES)
    assert _gaps(auto.score(CODES), cuda, "logprobs")[0] < 1e-5


def test_recall_conditioned_pass_on_cuda_matches_the_cpu():
    shots, texts = CODES[:3], CODES[3:12]
    cpu = _pass(SHIPPED, "cpu").score_conditioned(shots, texts)
    gpu = _pass(SHIPPED, "cuda", token_budget=4096).score_conditioned(shots, texts)
    assert [(s.prefix_shots, s.prefix_tokens) for s in cpu] == [(s.prefix_shots, s.prefix_tokens) for s in gpu]
    assert _gaps(cpu, gpu, "logprobs")[0] < 1e-4


def test_greedy_generation_on_cuda_takes_the_cpu_models_best_token_at_every_step():
    """The GPU's greedy continuation, left-padded in one batch, re-scored on
    the CPU: each token it chose is the CPU model's most likely one (up to a
    float32 near-tie), so batching and padding on the GPU change nothing."""
    prompts = [s.prompt for s in SAMPLES[:8]]
    gpu = _pass(SHIPPED, "cuda", batch_size=8)
    cpu = _pass(SHIPPED, "cpu")
    ids = [gpu.encode(p) for p in prompts]
    continuations = gpu._continuations([[gpu.bos_id, *x] for x in ids], max_new_tokens=24, stops=None)
    eos = gpu.tokenizer.eos_token_id
    continuations = [c[: c.index(eos) + 1] if eos in c else c for c in continuations]  # padding follows an EOS
    assert all(len(c) > 0 for c in continuations)
    with torch.inference_mode():
        for prompt, new in zip(ids, continuations, strict=True):
            row = torch.tensor([[cpu.bos_id, *prompt, *new]])
            logits = cpu.model(input_ids=row).logits[0, len(prompt) : len(prompt) + len(new)].float()
            chosen = logits.gather(1, torch.tensor(new)[:, None])[:, 0]
            assert torch.all(chosen >= logits.max(dim=1).values - 1e-4)


def _trained(model_dir, out, device, checkpoints=None, on_log=lambda row: None, **changes):
    settings = LoraSettings(
        **{
            **dict(
                epochs=(1, 2),
                rank=4,
                alpha=8,
                learning_rate=1e-2,
                batch_size=4,
                warmup_steps=2,
                max_length=96,
                dropout=0.1,
                checkpoint_every=0,
            ),
            **changes,
        }
    )
    rows = []
    train_lora(
        ModelSpec(str(model_dir), device=device),
        CODES,
        settings,
        lambda e: out / f"epoch-{e}",
        lambda row: (rows.append(row), on_log(row)),
        checkpoints,
    )
    return rows


def _adapter(out, epoch):
    return load_file(out / f"epoch-{epoch}" / "adapter_model.safetensors")


def test_lora_trains_on_cuda_with_bf16_mixed_precision_and_the_adapter_scores_on_the_cpu(tiny_model_dir, tmp_path):
    # a process of its own: accelerate fixes the mixed precision once per process
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        rows = pool.submit(_trained, tiny_model_dir, tmp_path, "cuda", mixed_precision="bf16").result()
    assert [r["epoch"] for r in rows] == [1, 2] and all(np.isfinite(r["loss"]) for r in rows)
    assert rows[1]["loss"] < rows[0]["loss"]
    base = _pass(tiny_model_dir, "cpu").score(CODES)
    trained = HFLanguageModel(ModelSpec(str(tiny_model_dir), adapter=str(tmp_path / "epoch-2")), progress=False).score(
        CODES
    )
    assert np.mean([s.logprobs.mean() for s in trained]) > np.mean([s.logprobs.mean() for s in base])


def test_sigterm_on_cuda_resumes_with_the_cuda_random_state(tiny_model_dir, tmp_path, caplog):
    """Dropout draws its masks from the CUDA generator: a resumed run equals an
    uninterrupted one only if the checkpoint restored that generator too."""
    whole = tmp_path / "whole"
    expected = _trained(tiny_model_dir, whole, "cuda", tmp_path / "whole-checkpoints")
    out, checkpoints = tmp_path / "out", tmp_path / "checkpoints"
    stop = lambda row: row["epoch"] == 1 and os.kill(os.getpid(), signal.SIGTERM)  # noqa: E731
    with pytest.raises(SystemExit):
        _trained(tiny_model_dir, out, "cuda", checkpoints, stop)
    shutil.rmtree(out / "epoch-1", ignore_errors=True)  # Snakemake deletes a failed job's outputs
    caplog.set_level("INFO", logger="leaktrace.train.lora")
    resumed = _trained(tiny_model_dir, out, "cuda", checkpoints)
    assert "resuming at epoch 2" in caplog.text
    assert [r["epoch"] for r in resumed] == [1, 2]  # the log rows of the epochs before the stop come back
    assert [r["loss"] for r in resumed] == pytest.approx([r["loss"] for r in expected], rel=1e-5)
    want, got = _adapter(whole, 2), _adapter(out, 2)
    assert want.keys() == got.keys()
    for name in want:
        torch.testing.assert_close(got[name], want[name], rtol=1e-4, atol=1e-6)
