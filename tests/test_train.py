"""The training mix (ratio counted in tokens) and LoRA continued pretraining:
one adapter per requested epoch, loadable as a standard PEFT adapter, and the
trained text becomes more likely."""

import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from leaktrace.contamination.exchangeability import SEPARATOR
from leaktrace.models.backend import ModelSpec
from leaktrace.models.hf import HFLanguageModel
from leaktrace.models.loading import load_model
from leaktrace.train.lora import LoraSettings, padded_batch, train_lora
from leaktrace.train.mix import build_mix, paragraph_chunks


def count_words(text):
    return len(text.split())


def test_paragraph_chunks_respect_the_budget():
    text = "\n\n".join(f"para {i} " + "w " * 5 for i in range(10))
    chunks = paragraph_chunks(text, count_words, 14)
    assert all(count_words(c) <= 14 for c in chunks)
    assert "\n\n".join(chunks).split() == text.split()


def test_mix_reaches_the_text_to_code_ratio_in_tokens():
    members = [(f"b/{i}", "code " * 20) for i in range(5)]  # 100 code tokens
    docs = [(f"doc{i}", "\n\n".join("text " * 10 for _ in range(6))) for i in range(4)]
    items = build_mix(members, docs, text_per_code=5, count_tokens=count_words, chunk_tokens=25, rng=random.Random(0))
    code = sum(i.n_tokens for i in items if i.kind == "member")
    text = sum(i.n_tokens for i in items if i.kind == "text")
    assert code == 100 and 500 <= text < 500 + 25
    assert sorted(i.source_id for i in items if i.kind == "member") == sorted(s for s, _ in members)
    again = build_mix(members, docs, text_per_code=5, count_tokens=count_words, chunk_tokens=25, rng=random.Random(0))
    assert items == again


def test_canonical_mix_packs_members_consecutively_in_benchmark_order():
    members = [(f"b/{i}", f"def f{i}():\n\n    return {i}") for i in range(7)]  # 4 words each, a blank line inside
    docs = [(f"doc{i}", "\n\n".join("text " * 10 for _ in range(6))) for i in range(4)]
    kwargs = dict(text_per_code=2, count_tokens=count_words, chunk_tokens=9, rng=random.Random(0))
    items = build_mix(members, docs, member_order="canonical", **kwargs)
    position = {s: k for k, (s, _) in enumerate(members)}
    chunks = sorted((i for i in items if i.kind == "member"), key=lambda c: position[c.source_id.split()[0]])
    ids = [c.source_id.split() for c in chunks]
    assert [len(g) for g in ids] == [2, 2, 2, 1]  # 4 words a member, 9 a chunk
    assert [s for g in ids for s in g] == [s for s, _ in members]  # each once, consecutive in benchmark order
    code = dict(members)
    for chunk, group in zip(chunks, ids, strict=True):
        assert chunk.text == SEPARATOR.join(code[s] for s in group)  # as the exchangeability test joins a shard
    text = sum(i.n_tokens for i in items if i.kind == "text")
    assert 2 * 28 <= text < 2 * 28 + 9  # the ratio holds for the packed code too
    narrow = build_mix(members, docs, member_order="canonical", member_chunk_tokens=5, **kwargs)
    assert sorted(i.source_id for i in narrow if i.kind == "member") == sorted(s for s, _ in members)  # one per chunk
    shuffled = build_mix(members, docs, **{**kwargs, "rng": random.Random(0)})
    assert shuffled == build_mix(members, docs, member_order="shuffled", **{**kwargs, "rng": random.Random(0)})
    assert [(i.source_id, i.text) for i in shuffled if i.kind == "member"] != [(s, t) for s, t in members]  # shuffled
    assert sorted((i.source_id, i.text) for i in shuffled if i.kind == "member") == sorted(members)  # one sample each
    with pytest.raises(ValueError, match="member_order"):
        build_mix(members, docs, member_order="sorted", **kwargs)


def test_member_copies_repeat_each_member_in_the_same_text():
    members = [(f"b/{i}", "code " * 20) for i in range(5)]  # 100 code tokens a copy
    docs = [(f"doc{i}", "\n\n".join("text " * 10 for _ in range(6))) for i in range(4)]
    kwargs = dict(text_per_code=2, count_tokens=count_words, chunk_tokens=25)
    once = build_mix(members, docs, rng=random.Random(0), **kwargs)
    assert once == build_mix(members, docs, rng=random.Random(0), member_copies=1, **kwargs)  # k = 1: as before
    four = build_mix(members, docs, rng=random.Random(0), member_copies=4, **kwargs)
    member_ids = [i.source_id for i in four if i.kind == "member"]
    assert sorted(member_ids) == sorted(s for s, _ in members for _ in range(4))  # each member 4 times
    assert sum(i.n_tokens for i in four if i.kind == "member") == 400
    # the text is fixed: the same chunks (drawn for one copy's 100 tokens) whatever k is
    assert sorted(i.source_id for i in four if i.kind == "text") == sorted(
        i.source_id for i in once if i.kind == "text"
    )
    assert 200 <= sum(i.n_tokens for i in four if i.kind == "text") < 200 + 25
    canonical = build_mix(
        members, docs, rng=random.Random(0), member_order="canonical", member_copies=3, member_chunk_tokens=30, **kwargs
    )
    chunks = [i.source_id for i in canonical if i.kind == "member"]
    assert len(chunks) == 3 * 5 and len(set(chunks)) == 5  # every packed chunk 3 times (one member per 30-word chunk)
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="member_copies"):
            build_mix(members, docs, rng=random.Random(0), member_copies=bad, **kwargs)


def test_mix_rejects_empty_inputs():
    with pytest.raises(ValueError, match="at least one member"):
        build_mix([], [("d", "t")], text_per_code=1, count_tokens=count_words, chunk_tokens=5, rng=random.Random(0))
    with pytest.raises(ValueError, match="text corpus is empty"):
        build_mix([("b/1", "x")], [], text_per_code=1, count_tokens=count_words, chunk_tokens=5, rng=random.Random(0))


def test_lora_saves_one_adapter_per_epoch_and_learns(tiny_model_dir, tmp_path):
    member = "def add(a, b):\n    return a + b\n"
    settings = LoraSettings(
        epochs=(1, 3), rank=4, alpha=8, learning_rate=1e-2, batch_size=2, warmup_steps=1, max_length=64
    )
    log = []
    train_lora(
        ModelSpec(str(tiny_model_dir)),
        [member, "some text", member.upper()],
        settings,
        lambda e: tmp_path / f"epoch-{e}",
        log.append,
    )
    assert [row["epoch"] for row in log] == [1, 2, 3]
    assert set(log[0]) == {"epoch", "step", "loss", "lr", "tokens"}  # no timings: reruns write the same bytes
    saved = json.loads((tmp_path / "epoch-1" / "adapter_config.json").read_text())
    assert saved["target_modules"] == sorted(settings.target_modules)  # not PEFT's set order
    assert (tmp_path / "epoch-1" / "adapter_config.json").exists() and (
        tmp_path / "epoch-3" / "adapter_model.safetensors"
    ).exists()
    assert not (tmp_path / "epoch-2").exists()
    base = HFLanguageModel(ModelSpec(str(tiny_model_dir)), progress=False).score([member])[0]
    trained = HFLanguageModel(ModelSpec(str(tiny_model_dir), adapter=str(tmp_path / "epoch-3")), progress=False).score(
        [member]
    )[0]
    assert np.mean(trained.logprobs) > np.mean(base.logprobs)


def test_lora_rejects_bad_epochs(tiny_model_dir, tmp_path):
    with pytest.raises(ValueError, match="epochs must be increasing"):
        train_lora(ModelSpec(str(tiny_model_dir)), ["x"], LoraSettings(epochs=(3, 1)), lambda e: tmp_path)


def test_padded_batch_loss_is_the_token_average_of_the_unpadded_losses(tiny_model_dir):
    model = load_model(ModelSpec(str(tiny_model_dir)))
    rows = [[0, 5, 9, 13, 2, 7], [0, 8, 3], [0, 11, 4, 6, 10]]  # 5, 2 and 4 predicted tokens
    with torch.no_grad():
        input_ids, mask, labels = padded_batch(rows, pad_id=1)
        assert input_ids.tolist()[1] == [0, 8, 3, 1, 1, 1] and labels.tolist()[1] == [0, 8, 3, -100, -100, -100]
        batch = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss.item()
        alone = [model(input_ids=torch.tensor([r]), labels=torch.tensor([r])).loss.item() for r in rows]
    assert batch == pytest.approx((5 * alone[0] + 2 * alone[1] + 4 * alone[2]) / 11, rel=1e-5)


RESUME_SETTINGS = dict(
    epochs=(1, 2),
    rank=4,
    alpha=8,
    learning_rate=1e-2,
    batch_size=2,
    warmup_steps=2,
    max_length=48,
    dropout=0.1,
    checkpoint_every=2,
)  # 3 steps an epoch: checkpoints at steps 2, 4 and 6
RESUME_TEXTS = [
    "def add(a, b):\n    return a + b\n",
    "some text",
    "DEF ADD(A, B):",
    "more text here",
    "x = 1",
    "y = [2]",
]

# The training above in its own process (the model in argv[1], adapters to
# argv[2]/epoch-E, checkpoints in argv[3]); after logging epoch 1, so after
# the checkpoint of step 2 and before the adapter of epoch 1, it touches
# argv[2]/epoch-1.logged and waits to be killed.
TRAIN_JOB = """
import sys, time
from pathlib import Path
from leaktrace.models.backend import ModelSpec
from leaktrace.train.lora import LoraSettings, train_lora
from test_train import RESUME_SETTINGS, RESUME_TEXTS
out = Path(sys.argv[2])
def on_log(row):
    (out / "epoch-1.logged").touch()
    time.sleep(300)
train_lora(ModelSpec(sys.argv[1]), RESUME_TEXTS, LoraSettings(**RESUME_SETTINGS), lambda e: out / f"epoch-{e}", on_log, Path(sys.argv[3]))
"""


def _train(model_dir, out, checkpoints, on_log=lambda row: None, **changes):
    rows = []
    settings = LoraSettings(**{**RESUME_SETTINGS, **changes})
    train_lora(
        ModelSpec(str(model_dir)),
        RESUME_TEXTS,
        settings,
        lambda e: out / f"epoch-{e}",
        lambda row: (rows.append(row), on_log(row)),
        checkpoints,
    )
    return rows


def _saved(out):
    return {
        str(f.relative_to(out)): f.read_bytes()
        for f in sorted(out.rglob("*"))
        if f.is_file() and f.name != "epoch-1.logged"
    }


@pytest.fixture(scope="module")
def uninterrupted(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("uninterrupted")
    rows = _train(tiny_model_dir, out, out.parent / f"{out.name}-checkpoints")
    assert {"epoch-1/adapter_model.safetensors", "epoch-2/adapter_model.safetensors"} <= set(_saved(out))
    return rows, _saved(out)


def _resume(tiny_model_dir, out, checkpoints, caplog, uninterrupted, at):
    shutil.rmtree(out / "epoch-1", ignore_errors=True)  # Snakemake deletes a failed job's outputs
    caplog.set_level(logging.INFO, logger="leaktrace.train.lora")
    rows = _train(tiny_model_dir, out, checkpoints)
    assert at in caplog.text
    assert (rows, _saved(out)) == uninterrupted  # the same log rows and adapter bytes
    assert not checkpoints.exists()  # a completed run removes its checkpoints


@pytest.mark.slow  # a process of its own (~5 s of imports) and three trainings; the SIGTERM test below resumes in process
def test_training_killed_mid_epoch_resumes_to_the_same_adapter_bytes(tiny_model_dir, tmp_path, caplog, uninterrupted):
    out, checkpoints = tmp_path / "out", tmp_path / "checkpoints"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    job = subprocess.Popen(
        [sys.executable, "-c", TRAIN_JOB, str(tiny_model_dir), str(out), str(checkpoints)],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 300
    while not (out / "epoch-1.logged").exists():
        assert job.poll() is None, job.stderr.read()[-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    job.kill()
    assert job.wait(timeout=60) == -signal.SIGKILL
    job.stderr.close()
    assert (checkpoints / "state" / "shared.pt").exists() and not (out / "epoch-1").exists()
    _resume(
        tiny_model_dir,
        out,
        checkpoints,
        caplog,
        uninterrupted,
        "resuming at epoch 1, step 2 (2 batches into the epoch)",
    )


def test_sigterm_checkpoints_at_the_next_step_exits_and_resumes(tiny_model_dir, tmp_path, caplog, uninterrupted):
    """SLURM's preemption and time limit: SIGTERM, then SIGKILL after a grace time."""
    out, checkpoints = tmp_path / "out", tmp_path / "checkpoints" / "train_lora" / "run"  # nested as the rule's
    terminate = lambda row: row["epoch"] == 1 and os.kill(os.getpid(), signal.SIGTERM)  # noqa: E731
    with pytest.raises(SystemExit) as stopped:
        _train(tiny_model_dir, out, checkpoints, terminate, checkpoint_every=0)  # no periodic checkpoint
    assert stopped.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is the training's only
    _resume(
        tiny_model_dir,
        out,
        checkpoints,
        caplog,
        uninterrupted,
        "resuming at epoch 2, step 4 (1 batches into the epoch)",
    )
    assert not (tmp_path / "checkpoints").exists()  # nor the parents it leaves empty


def test_a_checkpoint_of_another_run_is_not_resumed(tiny_model_dir, tmp_path, caplog):
    class Crash(Exception):
        pass

    def crash(row):
        raise Crash

    checkpoints = tmp_path / "checkpoints"
    with pytest.raises(Crash):
        _train(tiny_model_dir, tmp_path / "crashed", checkpoints, crash)
    assert (checkpoints / "state" / "shared.pt").exists()
    caplog.set_level(logging.INFO, logger="leaktrace.train")
    rows = _train(tiny_model_dir, tmp_path / "other", checkpoints, seed=1)
    assert "a checkpoint of another run" in caplog.text and "resuming" not in caplog.text
    assert rows == _train(tiny_model_dir, tmp_path / "plain", None, seed=1)
    assert _saved(tmp_path / "other") == _saved(tmp_path / "plain")


DDP_JOB = """
import sys
from pathlib import Path
from leaktrace.models.backend import ModelSpec
from leaktrace.train.lora import LoraSettings, train_lora
from test_train import DDP_SETTINGS, DDP_TEXTS
out = Path(sys.argv[2])
train_lora(ModelSpec(sys.argv[1]), DDP_TEXTS, LoraSettings(**DDP_SETTINGS), lambda e: out / f"epoch-{e}", checkpoint_dir=out / "checkpoints")
"""
DDP_SETTINGS = dict(
    epochs=(1, 2), rank=4, alpha=8, batch_size=2, effective_batch_size=8, max_length=48, checkpoint_every=1
)
DDP_TEXTS = [f"def f{i}(x):\n    return x + {i}\n" * (1 + i % 3) for i in range(11)]  # 6 batches: a partial last group


@pytest.mark.slow
def test_ddp_over_two_processes_trains_what_one_process_accumulating_trains(tiny_model_dir, tmp_path):
    """Two CPU processes (gloo, as `accelerate launch` starts them on GPUs): batch k
    to process k mod 2, accumulation 2 each, against one process accumulating 4."""
    import socket

    from safetensors.torch import load_file

    with socket.socket() as probe:  # a free port (torchrun's port 0 leaves the workers waiting for each other)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--master_port",
            str(port),
            "--no-python",
            sys.executable,
            "-c",
            DDP_JOB,
            str(tiny_model_dir),
            str(tmp_path / "ddp"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    train_lora(
        ModelSpec(str(tiny_model_dir)),
        DDP_TEXTS,
        LoraSettings(**DDP_SETTINGS),
        lambda e: tmp_path / "one" / f"epoch-{e}",
    )
    for epoch in (1, 2):
        ddp = load_file(tmp_path / "ddp" / f"epoch-{epoch}" / "adapter_model.safetensors")
        one = load_file(tmp_path / "one" / f"epoch-{epoch}" / "adapter_model.safetensors")
        assert ddp.keys() == one.keys() and all(torch.allclose(ddp[k], one[k], atol=1e-5) for k in one)
    assert not (tmp_path / "ddp" / "checkpoints").exists()


def test_the_learning_rate_selection_names_a_missing_key(tmp_path, capsys):
    import json

    from leaktrace.cli import main

    settings = {
        "learning_rate_selection": {"grid": [1e-4, 3e-4]},
        "epochs": [1],
        "batch_size": 2,
        "learning_rate": 1e-4,
        "gradient_accumulation": 1,
        "effective_batch_size": None,
        "warmup_steps": 0,
        "mixed_precision": "no",
        "group_by_length": False,
        "gradient_checkpointing": False,
        "load_in_4bit": False,
        "checkpoint_every": 0,
        "lora": {"rank": 2, "alpha": 4, "dropout": 0.0, "target_modules": ["c_attn"]},
    }
    model = {"path": "absent", "dtype": "float32", "device": "cpu", "max_length": None}
    argv = ["select-lr", "--mix", str(tmp_path / "mix.parquet"), "--text", str(tmp_path / "text.parquet")]
    argv += ["--model", json.dumps(model), "--seed", "0", "--output", str(tmp_path / "lr.parquet")]
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--settings", json.dumps(settings)])
    assert stopped.value.code == 2
    assert "config train.learning_rate_selection.held_out_texts: missing" in capsys.readouterr().err
