"""Readers and writers for the field's formats (plain or gzipped, from files, pipes or ``-``).

The names load their module on first use (PEP 562), so that importing one reader (the command
line reads runs in background threads while it imports pandas and numba) does not import the
others and their dependencies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sampleval.io.qrels import read_qrels, write_qrels
    from sampleval.io.runs import expand_run_paths, read_run, read_runs, write_run
    from sampleval.io.samples import (
        read_prels,
        read_sample_qrels,
        write_prels,
        write_sample_qrels,
    )

_HOMES = {
    "read_qrels": "qrels", "write_qrels": "qrels",
    "expand_run_paths": "runs", "read_run": "runs", "read_runs": "runs", "write_run": "runs",
    "read_prels": "samples", "read_sample_qrels": "samples", "write_prels": "samples",
    "write_sample_qrels": "samples",
}

__all__ = [
    "expand_run_paths",
    "read_prels",
    "read_qrels",
    "read_run",
    "read_runs",
    "read_sample_qrels",
    "write_prels",
    "write_qrels",
    "write_run",
    "write_sample_qrels",
]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f"sampleval.io.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'sampleval.io' has no attribute {name!r}")
