"""Checkpoints of a LoRA run, so a job killed mid-epoch (preempted, out of
time, SIGKILL) resumes where it stopped and ends with the adapters an
uninterrupted run saves.

A checkpoint is taken right after an optimizer step, when no gradient is
pending: the trainable (LoRA) weights, the optimizer, scheduler and
loss-scaler states, the data position, the log rows of finished epochs and,
per process, every RNG state, its share of the epoch's losses and its token
count. It replaces the previous one atomically (written beside it, then
renamed), so a kill while writing leaves the last complete one. The adapters
of finished epochs are kept beside it, since a failed job's outputs are
deleted (Snakemake) before the rerun.

The directory must lie outside the job's outputs. It is bound to the run by
a fingerprint of everything that decides the result (settings, model, texts,
number of processes): a checkpoint of another run is discarded, never
resumed. A completed run removes it.

SIGTERM (SLURM's preemption and time-limit signal) and SIGUSR1 (``sbatch
--signal``) ask for a checkpoint at the next optimizer step, after which the
process exits with 128 + the signal's number."""

from __future__ import annotations

import logging
import os
import random
import shutil
import signal
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


def rng_states() -> dict:
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_states(states: dict) -> None:
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    if states["cuda"]:
        torch.cuda.set_rng_state_all(states["cuda"])


class Checkpoints:
    """The checkpoints of one run in ``directory``; ``accelerator`` says which
    process this is (the main process writes the shared state)."""

    def __init__(self, directory: Path, fingerprint: str, accelerator):
        self.directory = Path(directory)
        self.fingerprint = fingerprint
        self.accelerator = accelerator
        self.current = self.directory / "state"
        self.stop_signal: int | None = None

    def _rank_file(self, directory: Path) -> Path:
        return directory / f"rank-{self.accelerator.process_index}.pt"

    def adapter_copy(self, epoch: int) -> Path:
        return self.directory / "adapters" / f"epoch-{epoch}"

    def load(self) -> tuple[dict, dict] | None:
        """(shared state, this process's state) of the run's last checkpoint,
        or None; a checkpoint of another run is removed."""
        # "state.old" alone: killed between the two renames of ``save``
        found = [d for d in (self.current, self.directory / "state.old") if (d / "shared.pt").exists()]
        if not found:
            return None
        shared = torch.load(found[0] / "shared.pt", weights_only=False)
        if shared["fingerprint"] != self.fingerprint:
            log.warning(
                "%s: a checkpoint of another run (settings, model, texts or processes differ); starting afresh",
                self.directory,
            )
            self.accelerator.wait_for_everyone()
            if self.accelerator.is_main_process:
                shutil.rmtree(self.directory)
            return None
        return shared, torch.load(self._rank_file(found[0]), weights_only=False)

    def save(self, shared: dict, own: dict) -> None:
        """Write a checkpoint (every process its own part), replacing the last."""
        staging = self.directory / "state.tmp"
        if self.accelerator.is_main_process:
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
        self.accelerator.wait_for_everyone()
        torch.save({**own, "rng": rng_states()}, self._rank_file(staging))
        self.accelerator.wait_for_everyone()
        if self.accelerator.is_main_process:
            torch.save({**shared, "fingerprint": self.fingerprint}, staging / "shared.pt")
            old = self.directory / "state.old"
            if self.current.exists():
                shutil.rmtree(old, ignore_errors=True)
                self.current.rename(old)
            staging.rename(self.current)
            shutil.rmtree(old, ignore_errors=True)
        self.accelerator.wait_for_everyone()
        log.info("checkpoint at step %d (epoch %d, %d batches in)", shared["step"], shared["epoch"], shared["round"])

    def keep_adapter(self, epoch: int, saved: Path) -> None:
        if self.accelerator.is_main_process:
            copy = self.adapter_copy(epoch)
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(saved, copy)

    def restore_adapter(self, epoch: int, out: Path) -> None:
        if self.accelerator.is_main_process:
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(self.adapter_copy(epoch), out)

    def stop_requested(self) -> bool:
        """Whether any process received a stop signal (all processes agree)."""
        flag = torch.tensor([0.0 if self.stop_signal is None else 1.0], device=self.accelerator.device)
        return bool(self.accelerator.reduce(flag, "sum").item() > 0)

    def remove(self) -> None:
        """Delete the run's checkpoints and the parent directories they leave
        empty (the results stay free of empty checkpoint trees)."""
        self.accelerator.wait_for_everyone()
        if self.accelerator.is_main_process:
            shutil.rmtree(self.directory, ignore_errors=True)
            try:
                os.removedirs(self.directory.parent)  # stops at the first parent that holds anything
            except OSError:
                pass

    @contextmanager
    def signals(self):
        """Note SIGTERM/SIGUSR1 instead of dying at once (main thread only:
        elsewhere Python cannot install handlers)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def note(signum, frame):
            self.stop_signal = signum
            log.warning("signal %d: checkpointing at the next optimizer step", signum)

        previous = {s: signal.signal(s, note) for s in STOP_SIGNALS}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
