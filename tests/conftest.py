"""Shared fixtures: the real TREC-COVID and Cranfield data beside the repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_path(*parts: str) -> Path:
    """A path under ../shared/data; fails in CI and skips elsewhere when it is missing."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        message = f"real data missing: {path} (../shared/data beside the repository)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def covid() -> Path:
    """The trec-covid directory (runs of rounds 1 and 5, qrels of every round)."""
    return shared_path("trec-covid")


@pytest.fixture(scope="session")
def cranfield_dir() -> Path:
    """The Cranfield 1400 directory (texts, queries, qrels)."""
    return shared_path("cranfield")
