"""NIST's ``sample_eval.pl`` (Yilmaz, Kanoulas & Aslam, SIGIR 2008; NIST's 2011 version),
reproduced byte for byte on top of the library's NIST estimators (``estimation.families.inferred``).

The script reads sampled qrels (``topic iter docno stratum rel``, rel < 0: in the pool, not
sampled) and one run, and prints, per topic with ``-q`` then over all topics: ``infAP`` (the
paper's xinfAP), ``infNDCG``, ``iprec@recX`` (11-point interpolated precision, ``all`` only),
``iP10``, ``iP50``, ``iP1000``, ``inum_rel_ret``, ``inum_rel`` and ``num_ret``. What it does
besides the estimators' formulas, reproduced here:

- Relevant means ``rel > 0`` (so fractional grades count); grades are the gains of infNDCG.
- The run: leading zeros are stripped from its topic ids (``007`` becomes ``7``), not from the
  qrels' (so ``007`` in both never matches); a document repeated within a topic keeps its last
  line's score (a Perl hash), yet every line counts in that topic's ``num_ret``; documents are
  ranked by score descending (double precision), then docno descending, to 1000 ranks.
- Topics: a run topic absent from the qrels is skipped; means divide by the number of topics
  both have; ``inum_rel`` over ``all`` sums every qrels topic, the run's or not; ``num_ret``
  over ``all`` counts ranked documents (at most 1000 a topic), per topic the run's lines.
- Sums run in the script's order: means, ``inum_rel_ret`` and ``num_ret`` over topics in
  numeric order, ``inum_rel`` and the interpolated precisions over topics in text order.
- Interpolated precision at recall level l: the cut-offs are l x inum_rel; walking up from
  the last rank, the running maximum of inum_rel_ret(k)/k is credited to the current level
  whenever its cut-off exceeds inum_rel_ret(k), one level per rank at most; levels left at
  the top get the final maximum (levels above the run's inum_rel_ret are never credited).

Not reproduced: the ``-G`` gain mapping; input the script would misread (lines with another
number of fields, ``#`` comments, which sampleval reads as trec_eval does); the order of
topic ids that are not numbers (the script's order is its hash order: here, by text after
the numbers); a grade ordering quirk (the script sorts grades as text when it builds the ideal
DCG, so a grade of 10 or more would come before 2; here grades sort by value).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from os import PathLike

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sampleval.core.pool import Pool
from sampleval.core.run import Run, sort_topics
from sampleval.core.sample import Sample
from sampleval.errors import InputError
from sampleval.estimation.engine.views import topic_views
from sampleval.estimation.families.inferred import NIST_MAX_RESULTS, nist_topic, precision_at
from sampleval.io._table import Source, load, read_table
from sampleval.io.runs import RUN_FORMAT, run_of_table
from sampleval.io.samples import read_sample_qrels

CUTOFFS = (10, 50, NIST_MAX_RESULTS)
RECALL_LEVELS = tuple(float(text) for text in
                      ("0", ".1", ".2", ".3", ".4", ".5", ".6", ".7", ".8", ".9", "1"))
# "rel > 0" as the estimators' "label >= level": the smallest positive double
RELEVANT_ABOVE_ZERO = float(np.nextafter(0.0, 1.0))
_PARTS = frozenset({"xinfAP", "infNDCG", "rel_ret"})


@dataclass(frozen=True)
class TopicScores:
    """One topic's values as the script computes them."""

    topic: str
    xinfap: float
    infndcg: float
    precisions: tuple[float, ...]  # at CUTOFFS
    rel_ret: float
    num_rel: float
    num_ret: int  # the run's lines for the topic (repeats included)
    ranked: int  # documents ranked (at most 1000)
    interpolated: tuple[float, ...]  # at RECALL_LEVELS


def read_run_as_script(path: str | PathLike[str] | Source) -> tuple[Run, Counter[str]]:
    """The run as the script reads it (topic ids without leading zeros, the last line of a
    repeated document kept) and each topic's number of lines."""
    source = load(path)
    table = read_table(source, RUN_FORMAT, unique=False)
    query = table["query_id"].combine_chunks()
    if pa.types.is_dictionary(query.type):
        query = query.dictionary_decode()
    query = pc.replace_substring_regex(query, "^0+", "").dictionary_encode()
    table = table.set_column(table.schema.get_field_index("query_id"), "query_id", query)
    counts = pc.value_counts(query.dictionary_decode())
    lines = Counter(dict(zip(counts.field("values").to_pylist(),
                             counts.field("counts").to_pylist(), strict=True)))
    return run_of_table(table, source, None, "last"), lines


def evaluate_topics(sample: Sample, run: Run, lines: Counter[str]
                    ) -> tuple[list[TopicScores], dict[str, float]]:
    """The scores of each topic both the run and the sample have (in numeric order) and the
    estimated number of relevant documents of every sample topic."""
    pool = Pool.from_runs([run], topics=sample.topics, score_type=np.float64)
    num_rel: dict[str, float] = {}
    scores = []
    run_topics = set(lines)
    for view in topic_views(pool, sample):
        topic = view.pool.topic
        if topic not in run_topics:
            num_rel[topic] = float(nist_topic(view, RELEVANT_ABOVE_ZERO, frozenset())
                                   ["inum_rel"][0])
            continue
        parts = nist_topic(view, RELEVANT_ABOVE_ZERO, _PARTS)
        rel_ret = parts["rel_ret"]
        by_rank = rel_ret[0]
        num_rel[topic] = float(parts["inum_rel"][0])
        rel_ret_end = float(by_rank[-1]) if len(by_rank) else 0.0
        scores.append(TopicScores(
            topic=topic, xinfap=float(parts["xinfAP"][0]), infndcg=float(parts["infNDCG"][0]),
            precisions=tuple(float(precision_at(rel_ret, k)[0]) for k in CUTOFFS),
            rel_ret=rel_ret_end, num_rel=num_rel[topic], num_ret=lines[topic],
            ranked=len(by_rank),
            interpolated=interpolated_precision(by_rank, num_rel[topic], rel_ret_end)))
    order = {t: i for i, t in enumerate(sort_topics([s.topic for s in scores]))}
    return sorted(scores, key=lambda s: order[s.topic]), num_rel


def interpolated_precision(rel_ret: np.ndarray, num_rel: float, rel_ret_end: float
                           ) -> tuple[float, ...]:
    """The script's interpolated precision at each of RECALL_LEVELS for one topic, from the
    estimated relevant retrieved at each rank (module docstring)."""
    cuts = [level * num_rel for level in RECALL_LEVELS]
    out = [0.0] * len(cuts)
    current = len(cuts) - 1
    while current >= 0 and cuts[current] > rel_ret_end:
        current -= 1
    best = 0.0
    for rank in range(len(rel_ret), 0, -1):
        found = float(rel_ret[rank - 1])
        best = max(best, found / rank)
        if current >= 0 and cuts[current] > found:
            out[current] += best
            current -= 1
    while current >= 0:
        out[current] += best
        current -= 1
    return tuple(out)


def report(scores: list[TopicScores], num_rel: dict[str, float], per_topic: bool) -> str:
    """The script's output for the topics' scores (its lines, formats and sums)."""
    if not scores:
        raise InputError(None, None, "the run and the sampled qrels have no topic in common "
                                     "(the script divides by zero here)")
    lines = []
    if per_topic:
        for s in scores:
            lines += [f"infAP\t\t{s.topic}\t\t{s.xinfap:6.4f}",
                      f"infNDCG\t\t{s.topic}\t\t{s.infndcg:6.4f}"]
            lines += [f"iP{k}\t\t{s.topic}\t\t{p:6.4f}"
                      for k, p in zip(CUTOFFS, s.precisions, strict=True)]
            lines += [f"inum_rel_ret\t{s.topic}\t{s.rel_ret:14.4f}",
                      f"inum_rel\t{s.topic}\t{s.num_rel:14.4f}",
                      f"num_ret\t\t{s.topic}\t{s.num_ret:9d}"]
    n = len(scores)
    lines += [f"infAP\t\tall\t\t{_sum(s.xinfap for s in scores) / n:6.4f}",
              f"infNDCG\t\tall\t\t{_sum(s.infndcg for s in scores) / n:6.4f}"]
    by_text = sorted(scores, key=lambda s: s.topic.encode())
    for i in range(len(RECALL_LEVELS)):
        lines.append(f"iprec@rec{i / 10:4.2f}\tall\t\t"
                     f"{_sum(s.interpolated[i] for s in by_text) / n:6.4f}")
    for i, k in enumerate(CUTOFFS):
        lines.append(f"iP{k}\t\tall\t\t{_sum(s.precisions[i] for s in scores) / n:6.4f}")
    lines += [f"inum_rel_ret\tall\t{_sum(s.rel_ret for s in scores):14.4f}",
              f"inum_rel\tall\t{_sum(num_rel[t] for t in sorted(num_rel, key=str.encode)):14.4f}",
              f"num_ret\t\tall\t{sum(s.ranked for s in scores):9d}"]
    return "\n".join(lines) + "\n"


def _sum(values: Iterable[float]) -> float:
    """A left-to-right sum from 0, as the script's ``+=`` loops add."""
    total = 0.0
    for value in values:
        total += value
    return total


def sample_eval(qrels: str | PathLike[str] | Source, run: str | PathLike[str] | Source,
                per_topic: bool = False) -> str:
    """What ``sample_eval.pl [-q] QRELS RUN`` prints, for sampled qrels and one run file."""
    judged = load(qrels)
    sample = Sample.from_sample_qrels(read_sample_qrels(judged), source=judged.name,
                                     keep_empty_strata=True)
    loaded, lines = read_run_as_script(run)
    scores, num_rel = evaluate_topics(sample, loaded, lines)
    return report(scores, num_rel, per_topic)
