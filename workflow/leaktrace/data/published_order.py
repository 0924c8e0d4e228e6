"""A benchmark released in a randomised order: its rows in a seeded uniform
permutation. Under the null (a model that never saw this order), the order
is exchangeable by construction, so Oren et al.'s test of it is valid by
design (the real order of a benchmark need not be)."""

from __future__ import annotations

import random
from collections.abc import Sequence


def published_order(rows: Sequence, rng: random.Random) -> list:
    """The rows in a uniformly random order drawn by ``rng``."""
    if not rows:
        raise ValueError("a benchmark to publish needs at least one row")
    return rng.sample(list(rows), len(rows))
