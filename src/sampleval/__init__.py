"""sampleval: choose what to judge, estimate IR measures from partial judgments.

The main entry points are importable from the package itself, loaded on first use so that
``import sampleval`` (and the command line) stays instant::

    import sampleval
    runs = sampleval.read_runs("runs/")
    exact = sampleval.evaluate("qrels.txt", runs, ["AP", "P@10"])
    sample = sampleval.load_sample("my-sample")
    print(sample)                                 # a one-line summary
    estimates = sampleval.estimate(sample, runs)  # the design's default estimates
    selector = sampleval.METHODS["active"]        # the selection methods, by name
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_LAZY = {
    "evaluate": "sampleval.measures.evaluation",
    "estimate": "sampleval.estimation.estimates",
    "read_runs": "sampleval.io",
    "read_qrels": "sampleval.io",
    "load_sample": "sampleval.io.samples",
    "METHODS": "sampleval.selection",
    "simulate": "sampleval.selection",
}

__all__ = ["METHODS", "__version__", "estimate", "evaluate", "load_sample", "read_qrels",
           "read_runs", "simulate"]

if TYPE_CHECKING:
    from sampleval.estimation.estimates import estimate
    from sampleval.io import read_qrels, read_runs
    from sampleval.io.samples import load_sample
    from sampleval.measures.evaluation import evaluate
    from sampleval.selection import METHODS, simulate


def __getattr__(name: str) -> Any:
    """Import an entry point of :data:`_LAZY` the first time it is asked for."""
    if name not in _LAZY:
        raise AttributeError(f"module 'sampleval' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
