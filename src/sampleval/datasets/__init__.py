"""Test collections with document texts (Cranfield 1400) and runs produced from them."""

from sampleval.datasets.cranfield import read_documents, read_qrels, read_queries
from sampleval.datasets.retrieval import MODELS, cranfield_runs, rank, tokenize

__all__ = [
    "MODELS",
    "cranfield_runs",
    "rank",
    "read_documents",
    "read_qrels",
    "read_queries",
    "tokenize",
]
