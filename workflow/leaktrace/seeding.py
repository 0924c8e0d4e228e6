"""One run seed in the config; every random choice derives its own stream from
it by name, so adding a random step never shifts the others."""

from __future__ import annotations

import hashlib
import random


def derive_seed(run_seed: int, *names: object) -> int:
    key = "/".join([str(run_seed), *map(str, names)]).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") >> 1


def rng_for(run_seed: int, *names: object) -> random.Random:
    return random.Random(derive_seed(run_seed, *names))


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (for training and sampling)."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
