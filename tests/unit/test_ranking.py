"""trec_order's packed-key sort equals the plain three-key lexsort, in both precisions, also
on rows already in order; the Pool's docno vocabulary is the same whichever way it is built."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampleval.core.pool import Pool
from sampleval.core.run import Run, trec_order

BASES = [0.1, 0.2, 1 / 3, 5.0, -0.0, 0.0]
NUDGES = [0.0, 1e-12, 2e-12, -1e-12]  # below float32 precision: ties there, not in float64


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_packed_sort_equals_lexsort(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 200))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, 5, n)
    doc = rng.permutation(10 * n)[:n]
    score = rng.choice(BASES, n) + rng.choice(NUDGES, n)
    for score_type in (np.float32, np.float64):
        expected = np.lexsort((-doc, -score.astype(score_type), topic))
        assert np.array_equal(trec_order(topic, score, doc, score_type), expected)
        ranked = (topic[expected], score[expected], doc[expected])  # only checked, not sorted
        assert np.array_equal(trec_order(*ranked, score_type), np.arange(n))
    single = np.lexsort((-doc, -score.astype(np.float32), topic))  # float64 re-sorts ties
    ranked = (topic[single], score[single], doc[single])
    assert np.array_equal(trec_order(*ranked, np.float64),
                          np.lexsort((-ranked[2], -ranked[1], ranked[0])))


@pytest.mark.parametrize("score_type", [np.float32, np.float64])
def test_negative_zero_ties_with_zero(score_type: type[np.floating]) -> None:
    order = trec_order(np.zeros(2, int), np.array([-0.0, 0.0]), np.array([0, 1]), score_type)
    assert order.tolist() == [1, 0]  # a tie, so docno descending


@pytest.mark.parametrize("docnos", [
    ["d3", "d10", "d2", "é", "zz", "abcdefgh", "a"],  # at most 8 bytes: unified as integers
    ["d3", "d10", "d2", "a\x00b", "zz", "a", "b\x00c"],  # a NUL byte: as strings
])
def test_pool_vocabulary_does_not_depend_on_docno_length(docnos: list[str]) -> None:
    rng = np.random.default_rng(5)
    frames = [pd.DataFrame({"query_id": rng.choice(["1", "2"], len(docnos)),
                            "doc_id": rng.permutation(docnos),
                            "score": rng.choice([1.0, 0.5, 0.5 + 1e-12], len(docnos))})
              for _ in range(3)]
    frames = [f.drop_duplicates(["query_id", "doc_id"]) for f in frames]
    prefix = "a-prefix-longer-than-8-bytes:"  # keeps strcmp order
    short = Pool.from_runs([Run.from_frame(f, f"r{i}") for i, f in enumerate(frames)],
                           score_type=np.float64)
    long = Pool.from_runs([Run.from_frame(f.assign(doc_id=prefix + f["doc_id"]), f"r{i}")
                           for i, f in enumerate(frames)], score_type=np.float64)
    assert short.docnos.tolist() == sorted(set(docnos), key=str.encode)
    assert [prefix + d for d in short.docnos] == long.docnos.tolist()
    for a, b in zip(short, long, strict=True):
        assert np.array_equal(a.doc_ids, b.doc_ids)
        assert np.array_equal(a.ranking, b.ranking)
        assert np.array_equal(a.lengths, b.lengths)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_grouped_rows_sort_only_their_ties(data: st.DataObject) -> None:
    """Rows already grouped by topic with scores not increasing (how run files come): the
    ties are sorted by docno, whether the keys come as an array or from a function, and
    whatever order the docnos of a tie come in (random; ascending, as most run files
    list them, reversed without a sort; descending, left as they are)."""
    n = data.draw(st.integers(1, 200))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    topic = np.sort(rng.integers(0, 5, n))
    score = rng.choice(BASES, n) + rng.choice(NUDGES, n)
    doc = rng.permutation(10 * n)[:n].astype(np.uint64)
    within = data.draw(st.sampled_from(["random", "ascending", "descending"]))
    tie_key = {"random": np.zeros(n), "ascending": doc.astype(np.float64),
               "descending": -doc.astype(np.float64)}[within]  # docnos' order within ties
    for score_type in (np.float32, np.float64):
        grouped = np.lexsort((tie_key, -score.astype(score_type), topic))
        t, s, d = topic[grouped], score[grouped], doc[grouped]
        expected = np.lexsort((-d.astype(np.int64), -s.astype(score_type), t))
        asked: list[int] = []

        def key(rows: np.ndarray, d: np.ndarray = d, asked: list[int] = asked) -> np.ndarray:
            asked.extend(rows.tolist())
            return d[rows]

        assert np.array_equal(trec_order(t, s, d, score_type), expected)
        assert np.array_equal(trec_order(t, s, key, score_type), expected)
        tied = (t[1:] == t[:-1]) & (s.astype(score_type)[1:] == s.astype(score_type)[:-1])
        assert len(asked) == np.count_nonzero(np.r_[tied, False] | np.r_[False, tied])


@pytest.mark.parametrize("strings", [
    ["d3", "d10", "d2", "é", "zz", "abcdefgh", "a", ""],
    ["b", "a", "ab", "ba", "\x7f", "ÿ"],
    ["zzzzzzzz", "abcdefgh", "abcdefgi", "0a1b2c3d", "éééé", "ABCDEFGH"],  # fixed width
])
def test_packed_keys_order_as_strcmp(strings: list[str]) -> None:
    import pyarrow as pa

    from sampleval.core._arrow import packed_keys

    keys = packed_keys(pa.array(strings).slice(1))  # an offset into the buffers too
    assert keys is not None
    assert np.argsort(keys, kind="stable").tolist() == sorted(
        range(len(strings) - 1), key=lambda i: strings[1:][i].encode())
    assert packed_keys(pa.array(["123456789"])) is None  # 9 bytes
    assert packed_keys(pa.array(["a\x00"])) is None  # a NUL byte
