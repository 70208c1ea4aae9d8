"""Seeds of trials and splits, derived stably from what identifies them.

Trial i of a cell draws from ``numpy.random.SeedSequence(S, spawn_key=(..., i, split))`` where
the leading words of the spawn key are a SHA-256 digest of the method's canonical text and the
budget's label (not Python's ``hash()``, which changes between processes). So a trial's
randomness depends on nothing but (S, method, budget, trial, split): not on ``--jobs``, the
backend, the order cells run in, or the other cells of the grid.
"""

from __future__ import annotations

import hashlib

import numpy as np

_DIGEST_WORDS = 4  # 128 bits of the digest


def _words(text: str) -> tuple[int, ...]:
    digest = hashlib.sha256(text.encode()).digest()
    return tuple(int.from_bytes(digest[4 * k:4 * k + 4], "little")
                 for k in range(_DIGEST_WORDS))


def trial_seed(seed: int, method: str, budget: str, trial: int,
               split: int) -> np.random.SeedSequence:
    """The seed sequence of one trial (``method``: the canonical method text; ``budget``: the
    budget's label, e.g. ``rate=0.05``)."""
    if seed < 0:
        raise ValueError("the seed must be a non-negative integer")
    return np.random.SeedSequence(seed, spawn_key=(*_words(f"{method}\0{budget}"), trial,
                                                   split))


def trial_rng(seed: int, method: str, budget: str, trial: int,
              split: int) -> np.random.Generator:
    """A generator seeded by :func:`trial_seed`."""
    return np.random.default_rng(trial_seed(seed, method, budget, trial, split))


def split_rng(seed: int, mode: str, split: int) -> np.random.Generator:
    """The generator that draws split ``split`` of the runs for a leave-out ``mode`` (the same
    for every method, as in Voorhees' experiments)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(
        *_words(f"split\0{mode}"), split)))
