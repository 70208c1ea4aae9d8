"""Small vectorised retrieval models, to produce runs of our own over a document collection."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import chain
from os import PathLike

import numpy as np
import pandas as pd
from scipy import sparse

from sampleval.core.run import Run
from sampleval.datasets.cranfield import read_documents, read_queries
from sampleval.errors import UsageError

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself may
    me more most must my no nor not of off on once only or other our out over own same she
    should so some such than that the their them then there these they this those through to
    too under until up very was we were what when where which while who whom why will with
    would you your
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
MODELS = ("bm25", "tfidf", "lm-dirichlet", "bm25-title", "tf")

_TOKEN = re.compile(r"[a-z0-9]+")
Scorer = Callable[[sparse.csr_matrix, sparse.csr_matrix], np.ndarray]


def _stem(word: str) -> str:
    """Harman's S-stemmer: fold the common English plurals to their singular."""
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric tokens, without stopwords, plurals folded."""
    return [_stem(token) for token in _TOKEN.findall(text.lower()) if token not in STOPWORDS]


def _counts(tokens: Sequence[list[str]], vocabulary: dict[str, int]) -> sparse.csr_matrix:
    """Term-count matrix, one row per token list; terms outside ``vocabulary`` are ignored."""
    rows = [[vocabulary[token] for token in row if token in vocabulary] for row in tokens]
    indptr = np.concatenate([[0], np.cumsum([len(row) for row in rows], dtype=np.int64)])
    indices = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=int(indptr[-1]))
    matrix = sparse.csr_matrix(
        (np.ones(len(indices)), indices, indptr), shape=(len(rows), len(vocabulary))
    )
    matrix.sum_duplicates()
    return matrix


def _with_data(matrix: sparse.csr_matrix, data: np.ndarray) -> sparse.csr_matrix:
    """A matrix with the sparsity pattern of ``matrix`` and the stored values ``data``."""
    return sparse.csr_matrix((data, matrix.indices, matrix.indptr), shape=matrix.shape)


def _row_sums(matrix: sparse.csr_matrix) -> np.ndarray:
    return np.asarray(matrix.sum(axis=1)).ravel()


def _per_entry(matrix: sparse.csr_matrix, row_values: np.ndarray) -> np.ndarray:
    """Spread one value per row over that row's stored entries."""
    return np.repeat(row_values, np.diff(matrix.indptr))


def _document_frequency(documents: sparse.csr_matrix) -> np.ndarray:
    return np.bincount(documents.indices, minlength=documents.shape[1])


def _bm25(
    documents: sparse.csr_matrix, queries: sparse.csr_matrix, k1: float, b: float
) -> np.ndarray:
    """Okapi BM25 with the non-negative idf log(1 + (N - df + 0.5) / (df + 0.5))."""
    df = _document_frequency(documents)
    idf = np.log1p((documents.shape[0] - df + 0.5) / (df + 0.5))
    lengths = _row_sums(documents)
    relative = lengths / (lengths.mean() or 1.0)
    tf = documents.data
    norm = k1 * (1.0 - b + b * _per_entry(documents, relative))
    weights = _with_data(documents, tf * (k1 + 1.0) / (tf + norm) * idf[documents.indices])
    return (queries @ weights.T).toarray()


def _tfidf(documents: sparse.csr_matrix, queries: sparse.csr_matrix) -> np.ndarray:
    """Cosine between (1 + log tf) * log(N / df) vectors."""
    idf = np.log(documents.shape[0] / np.maximum(_document_frequency(documents), 1))

    def unit_vectors(matrix: sparse.csr_matrix) -> sparse.csr_matrix:
        weighted = _with_data(matrix, (1.0 + np.log(matrix.data)) * idf[matrix.indices])
        norms = np.sqrt(_row_sums(weighted.multiply(weighted).tocsr()))
        inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        return sparse.csr_matrix(sparse.diags(inverse) @ weighted)

    return (unit_vectors(queries) @ unit_vectors(documents).T).toarray()


def _lm_dirichlet(
    documents: sparse.csr_matrix, queries: sparse.csr_matrix, mu: float
) -> np.ndarray:
    """Query log-likelihood with Dirichlet smoothing, less a constant per query.

    sum_t qtf * log((tf + mu p(t|C)) / (|d| + mu)) - sum_t qtf * log(mu p(t|C))
    = sum_{t in d} qtf * log(1 + tf / (mu p(t|C))) + |q| * log(mu / (|d| + mu)).
    """
    collection = np.asarray(documents.sum(axis=0)).ravel()
    background = collection / max(collection.sum(), 1.0)
    matched = _with_data(documents, np.log1p(documents.data / (mu * background[documents.indices])))
    length_prior = np.log(mu / (_row_sums(documents) + mu))
    return (queries @ matched.T).toarray() + np.outer(_row_sums(queries), length_prior)


def _term_overlap(documents: sparse.csr_matrix, queries: sparse.csr_matrix) -> np.ndarray:
    """Dot product of raw term counts: a deliberately weak model."""
    return (queries @ documents.T).toarray()


def _top(
    scores: np.ndarray, doc_ids: np.ndarray, query_ids: np.ndarray, depth: int
) -> pd.DataFrame:
    """The ``depth`` best documents per query (ties in collection order)."""
    depth = min(depth, scores.shape[1])
    order = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
    return pd.DataFrame(
        {
            "query_id": np.repeat(query_ids, depth),
            "doc_id": doc_ids[order.ravel()],
            "score": np.take_along_axis(scores, order, axis=1).ravel(),
        }
    )


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise UsageError(f"{what} need the columns {', '.join(missing)}")


def rank(
    documents: pd.DataFrame,
    queries: pd.DataFrame,
    model: str,
    depth: int = 100,
    *,
    k1: float = 0.9,
    b: float = 0.4,
    mu: float = 2000.0,
) -> pd.DataFrame:
    """Rank ``documents`` (doc_id, text, title) for ``queries`` (query_id, text) with ``model``.

    Returns ``query_id, doc_id, score``: the top ``depth`` documents of every query
    (all of them when there are fewer), best first. Models: see ``MODELS``.
    """
    scorers: dict[str, Scorer] = {
        "bm25": lambda d, q: _bm25(d, q, k1, b),
        "bm25-title": lambda d, q: _bm25(d, q, k1, b),
        "tfidf": _tfidf,
        "lm-dirichlet": lambda d, q: _lm_dirichlet(d, q, mu),
        "tf": _term_overlap,
    }
    if model not in scorers:
        raise UsageError(f"unknown retrieval model {model!r}; choose from {', '.join(MODELS)}")
    if depth < 1:
        raise UsageError(f"depth must be at least 1, got {depth}")
    field = "title" if model == "bm25-title" else "text"
    _require(documents, ["doc_id", field], "documents")
    _require(queries, ["query_id", "text"], "queries")
    doc_tokens = [tokenize(text) for text in documents[field].astype(str)]
    vocabulary = {term: i for i, term in enumerate(sorted(set(chain.from_iterable(doc_tokens))))}
    query_tokens = [tokenize(text) for text in queries["text"].astype(str)]
    scores = scorers[model](_counts(doc_tokens, vocabulary), _counts(query_tokens, vocabulary))
    doc_ids = documents["doc_id"].astype(str).to_numpy(dtype=object)
    query_ids = queries["query_id"].astype(str).to_numpy(dtype=object)
    return _top(scores, doc_ids, query_ids, depth)


def cranfield_runs(directory: str | PathLike[str], depth: int = 100) -> list[Run]:
    """One :class:`Run` per model in ``MODELS`` over the Cranfield collection, named
    ``cran-<model>`` (as ``sampleval.io.read_runs`` gives runs)."""
    documents, queries = read_documents(directory), read_queries(directory)
    return [Run.from_frame(rank(documents, queries, model, depth), f"cran-{model}",
                           source=str(directory)) for model in MODELS]
