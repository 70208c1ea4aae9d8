"""The command-line options every simulation experiment shares."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.errors import UsageError
from sampleval.io import read_qrels, read_runs

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "trec-covid"


def simulation_parser(doc: str, trials: int) -> argparse.ArgumentParser:
    """A parser described by ``doc``'s first paragraph, with --trials (default ``trials``),
    --rate, --depth, --seed and --data."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=trials,
                        help=f"simulated judging campaigns (default {trials})")
    parser.add_argument("--rate", type=float, default=0.1,
                        help="budget per topic, as a share of its pool (default 0.1)")
    add_data_arguments(parser, "seed of the first trial; trial i uses SEED + i (default 0)")
    return parser


def add_data_arguments(parser: argparse.ArgumentParser, seed_help: str) -> None:
    """--depth, --seed (described by ``seed_help``) and --data."""
    parser.add_argument("--depth", type=int, default=100,
                        help="pool depth: each run's top DEPTH documents (default 100)")
    parser.add_argument("--seed", type=int, default=0, help=seed_help)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="the trec-covid directory with round5/runs and qrels/ "
                             "(default ../shared/data/trec-covid beside the repository)")


def read_round5(data: Path) -> tuple[list[Run], Qrels]:
    """TREC-COVID round 5 from ``data``: the 126 runs and the round-5 qrels (UsageError
    naming the missing file when the data is not there)."""
    qrels_path = data / "qrels" / "qrels.covid-round5.txt"
    if not qrels_path.exists():
        raise UsageError(f"data missing: {qrels_path}")
    return (read_runs(data / "round5" / "runs", progress=show_progress()),
            read_qrels(qrels_path))


def show_progress() -> bool:
    """Whether experiments show progress bars: when standard error is a terminal."""
    return sys.stderr.isatty()


COLLECTIONS = ("round5", "round1", "round5-rel2", "round1-rel2", "cranfield", "synthetic")
CRANFIELD_RUNS: tuple[tuple[str, dict[str, float]], ...] = (
    ("bm25", {"k1": 0.5, "b": 0.3}), ("bm25", {"k1": 0.9, "b": 0.4}),
    ("bm25", {"k1": 1.2, "b": 0.75}), ("bm25", {"k1": 2.0, "b": 0.75}),
    ("bm25", {"k1": 1.5, "b": 1.0}), ("bm25", {"k1": 3.0, "b": 0.5}),
    ("bm25-title", {"k1": 0.9, "b": 0.4}), ("bm25-title", {"k1": 1.5, "b": 0.75}),
    ("lm-dirichlet", {"mu": 50.0}), ("lm-dirichlet", {"mu": 200.0}),
    ("lm-dirichlet", {"mu": 500.0}), ("lm-dirichlet", {"mu": 1000.0}),
    ("lm-dirichlet", {"mu": 2000.0}), ("lm-dirichlet", {"mu": 5000.0}),
    ("tfidf", {}), ("tf", {}))
"""Cranfield's runs for the calibration studies: the project's retrieval models
(:data:`sampleval.datasets.MODELS`) at several parameters."""


def binary_at(qrels: Qrels, level: int) -> Qrels:
    """``qrels`` with grade ``level`` and above as the only relevant grade (1), the rest 0:
    the sparser collection of ``rel=LEVEL``."""
    frame = qrels.to_frame()
    return Qrels.from_frame(frame.assign(relevance=(frame["relevance"] >= level).astype(int)))


def read_collection(name: str, data: Path, depth: int = 100) -> tuple[list[Run], Qrels]:
    """Runs and qrels of collection ``name`` (:data:`COLLECTIONS`): TREC-COVID round 5 or 1
    from ``data`` (``-rel2``: grade 2 the only relevant one), Cranfield 1400 from
    ``data``'s sibling ``cranfield`` with the 16 runs of :data:`CRANFIELD_RUNS` (the
    project's retrieval models at several parameters, to ``depth``), or ``synthetic``: a
    seeded sparse collection (:func:`sampleval.datasets.synthetic.make_collection`, 30 topics, 20
    runs, about 2% of each topic's pool relevant, judged to ``depth``)."""
    import pandas as pd

    if name not in COLLECTIONS:
        raise UsageError(f"unknown collection {name!r} (one of {', '.join(COLLECTIONS)})")
    if name.startswith("round5"):
        runs, qrels = read_round5(data)
    elif name.startswith("round1"):
        qrels_path = data / "qrels" / "qrels.covid-round1.txt"
        if not qrels_path.exists():
            raise UsageError(f"data missing: {qrels_path}")
        runs, qrels = (read_runs(data / "round1" / "runs", progress=show_progress()),
                       read_qrels(qrels_path))
    elif name == "cranfield":
        from sampleval.datasets import rank, read_documents, read_queries
        from sampleval.datasets import read_qrels as read_cranqrel

        where = data.parent / "cranfield"
        documents, queries = read_documents(where), read_queries(where)
        runs = [Run.from_frame(rank(documents, queries, model, depth, **params),
                               f"cran-{model}-{i}", source=str(where))
                for i, (model, params) in enumerate(CRANFIELD_RUNS)]
        qrels = read_cranqrel(where)
    else:
        import numpy as np

        from sampleval.datasets.synthetic import make_collection

        made = make_collection(np.random.default_rng(29), n_topics=30, n_runs=20, n_docs=2000,
                               depth=depth, pool_depth=depth, rel_rate=0.01, rich_rate=0.03)
        runs = [Run.from_frame(frame, name) for name, frame in made.runs.items()]
        qrels = Qrels.from_frame(pd.DataFrame(made.qrels))
    return runs, binary_at(qrels, 2) if name.endswith("-rel2") else qrels
