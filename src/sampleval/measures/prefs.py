"""Preference measures (trec_eval's ``prefs_*``: ``form_prefs_counts.c`` and
``m_prefs_*.c``), vectorised over runs.

A topic's preferences (:class:`TopicPrefs`) do not depend on the runs: for each judgment
group, the pairs "a preferred to b" (within a subgroup, every document of a higher level
over every document of a lower one; across the subgroups of a group, closed transitively).
A run enters through each judged document's position: the judged documents it retrieved,
in its order, then the others in docno order. A preference a > b is

- fulfilled among retrieved (``_ret``) when both are retrieved and a is above b;
- fulfilled by implication (``_imp``) when a is retrieved and b is not;
- not fulfilled when b is above a, when b is retrieved and a is not, or when neither is.

Groups with a single subgroup count each line, so a document listed twice counts twice, as
trec_eval counts its "equivalence classes"; the ``Rnonrel`` variants keep trec_eval's
recount when a group has more non-relevant documents than relevant ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sampleval.errors import InputError

NAMES = ("prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret",
         "prefs_simp", "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret",
         "prefs_pair_ret", "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp",
         "prefs_pair_imp", "prefs_avgjg_imp")


@dataclass(frozen=True)
class GroupPrefs:
    """One judgment group: preference pairs (indices into the topic's documents; for a
    single-subgroup group one pair per pair of lines), and its relevant and non-relevant
    documents (lines, for a single subgroup; documents otherwise)."""

    a: np.ndarray
    b: np.ndarray
    relevant: np.ndarray
    nonrelevant: np.ndarray
    classes: tuple[np.ndarray, ...] | None  # single subgroup: documents of each level, high first
    b_class: np.ndarray | None  # ... and the class of each pair's b


@dataclass(frozen=True)
class TopicPrefs:
    """One topic's preferences: its judged documents (docno byte order) and groups, and for
    each unordered document pair the groups preferring its first / second document."""

    docs: np.ndarray
    groups: tuple[GroupPrefs, ...]
    pair_lo: np.ndarray
    pair_hi: np.ndarray
    lo_over_hi: np.ndarray
    hi_over_lo: np.ndarray


def topic_prefs(rows: pd.DataFrame, source: str | None = None) -> TopicPrefs:
    """Build a topic's preferences from its rows (``group, subgroup, doc_id, level``)."""
    docs = np.array(sorted(pd.unique(rows["doc_id"]), key=lambda d: str(d).encode()),
                    dtype=object)
    index = pd.Index(docs).get_indexer(rows["doc_id"].to_numpy())
    frame = pd.DataFrame({"group": rows["group"].to_numpy(),
                          "subgroup": rows["subgroup"].to_numpy(), "doc": index,
                          "level": rows["level"].to_numpy(dtype=float)})
    groups = []
    for name in sorted(pd.unique(frame["group"]), key=lambda g: str(g).encode()):
        members = frame[frame["group"] == name]
        build = _single_subgroup if members["subgroup"].nunique() == 1 else _subgroups
        groups.append(build(members, len(docs), docs, source))
    a = np.concatenate([g.a for g in groups]).astype(np.int64)
    b = np.concatenate([g.b for g in groups]).astype(np.int64)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keys, inverse = np.unique(lo * len(docs) + hi, return_inverse=True)
    first = np.bincount(inverse, weights=(a == lo), minlength=len(keys))
    second = np.bincount(inverse, weights=(a != lo), minlength=len(keys))
    return TopicPrefs(docs, tuple(groups), keys // max(len(docs), 1),
                      keys % max(len(docs), 1), first, second)


def _single_subgroup(rows: pd.DataFrame, n_docs: int, docs: np.ndarray,
                     source: str | None) -> GroupPrefs:
    levels = sorted(pd.unique(rows["level"]), reverse=True)
    classes = tuple(rows["doc"].to_numpy()[rows["level"].to_numpy() == lv] for lv in levels)
    seen: dict[int, float] = {}
    for level, members in zip(levels, classes, strict=True):
        for doc in members.tolist():
            if seen.setdefault(doc, level) != level:
                raise InputError(source, None, f"document {docs[doc]} has two levels in one "
                                               "subgroup of a judgment group")
    a, b, b_class = [], [], []
    for i, upper in enumerate(classes):
        for j in range(i + 1, len(classes)):
            lower = classes[j]
            a.append(np.repeat(upper, len(lower)))
            b.append(np.tile(lower, len(upper)))
            b_class.append(np.full(len(upper) * len(lower), j))
    positive = np.array([lv > 0 for lv in levels])
    sizes = np.array([len(c) for c in classes])
    return GroupPrefs(_cat(a), _cat(b),
                      np.concatenate([c for c, p in zip(classes, positive, strict=True) if p]
                                     or [np.zeros(0, np.int64)]),
                      np.concatenate([c for c, p in zip(classes, positive, strict=True)
                                      if not p] or [np.zeros(0, np.int64)]),
                      classes, _cat(b_class) if sizes.size else np.zeros(0, np.int64))


def _subgroups(rows: pd.DataFrame, n_docs: int, docs: np.ndarray,
               source: str | None) -> GroupPrefs:
    level_of = np.full(n_docs, -1.0)
    order = rows.sort_values(["subgroup", "level"], ascending=[True, False], kind="stable",
                             key=lambda c: c.map(lambda v: str(v).encode())
                             if c.name == "subgroup" else c)
    for doc, level in zip(order["doc"].tolist(), order["level"].tolist(), strict=True):
        current = level_of[doc]
        if (current > 0 and level == 0) or (current == 0 and level > 0):
            raise InputError(source, None, f"document {docs[doc]} is both relevant and not "
                                           "relevant within one judgment group")
        level_of[doc] = level
    prefer = np.zeros((n_docs, n_docs), dtype=bool)
    for _, sub in order.groupby("subgroup", sort=False):
        d, lv = sub["doc"].to_numpy(), sub["level"].to_numpy()
        upper, lower = np.nonzero(lv[:, None] > lv[None, :])
        prefer[d[upper], d[lower]] = True
    closed = _transitive(prefer | np.eye(n_docs, dtype=bool))
    np.fill_diagonal(closed, False)
    if (closed & closed.T).any():
        x, y = np.argwhere(closed & closed.T)[0]
        raise InputError(source, None, f"preferences of one judgment group contradict each "
                                       f"other: {docs[x]} and {docs[y]}")
    a, b = np.nonzero(closed)
    return GroupPrefs(a, b, np.flatnonzero(level_of > 0), np.flatnonzero(level_of == 0),
                      None, None)


def _transitive(relation: np.ndarray) -> np.ndarray:
    """The transitive closure of a reflexive boolean relation, by repeated squaring."""
    current = relation.astype(np.float32)
    while True:
        squared = (current @ current) > 0
        if np.array_equal(squared, current > 0):
            return squared
        current = squared.astype(np.float32)


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)


def positions(retrieved_rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each judged document's position per run (``retrieved_rank``: ``[n_runs, n_docs]``,
    its rank in the run, 0 when not retrieved): retrieved ones in rank order from 0, then
    the others in docno order; and the number retrieved per run."""
    n_runs, n_docs = retrieved_rank.shape
    key = np.where(retrieved_rank > 0, retrieved_rank, np.iinfo(np.int64).max // 2)
    order = np.lexsort((np.broadcast_to(np.arange(n_docs), key.shape), key), axis=1)
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.arange(n_docs)[None, :].repeat(n_runs, axis=0), axis=1)
    return pos, (retrieved_rank > 0).sum(axis=1)


def prefs_values(topic: TopicPrefs, pos: np.ndarray, njr: np.ndarray) -> dict[str, np.ndarray]:
    """Every preference measure for every run on one topic."""
    n_runs = pos.shape[0]
    njr = njr[:, None]
    counts = []  # per group: ful_ret, poss_ret, ful_imp, poss_imp, notoccur
    for group in topic.groups:
        pa, pb = pos[:, group.a], pos[:, group.b]
        ra, rb = pa < njr, pb < njr
        both = ra & rb
        counts.append(np.stack([(both & (pa < pb)).sum(1), both.sum(1), (ra & ~rb).sum(1),
                                (ra ^ rb).sum(1), (~ra & ~rb).sum(1)]).astype(np.float64))
    c = np.stack(counts) if counts else np.zeros((0, 5, n_runs))
    ful_ret, poss_ret, ful_imp, poss_imp, notoccur = c.transpose(1, 0, 2)
    ful, poss_all = ful_ret + ful_imp, poss_ret + poss_imp + notoccur
    out = {
        "prefs_num_prefs_poss": poss_all.sum(0) if len(c) else np.zeros(n_runs),
        "prefs_num_prefs_ful": ful.sum(0) if len(c) else np.zeros(n_runs),
        "prefs_num_prefs_ful_ret": ful_ret.sum(0) if len(c) else np.zeros(n_runs),
    }
    for suffix, f, p in (("", ful, poss_all), ("_ret", ful_ret, poss_ret),
                         ("_imp", ful, poss_ret + poss_imp)):
        out[f"prefs_simp{suffix}"] = _ratio(f.sum(0), p.sum(0)) if len(c) else np.zeros(n_runs)
        per_group = np.where(p > 0, f / np.where(p > 0, p, 1.0), 0.0)
        out[f"prefs_avgjg{suffix}"] = _mean_if_positive(per_group, len(topic.groups))
    out.update(_pair_measures(topic, pos, njr[:, 0]))
    for retrieved_only in (False, True):
        per_group = np.stack([_rnonrel(group, pos, njr[:, 0], c[i], retrieved_only)
                              for i, group in enumerate(topic.groups)]) if len(c) else c
        name = "prefs_avgjg_Rnonrel" + ("_ret" if retrieved_only else "")
        out[name] = _mean_if_positive(per_group, len(topic.groups))
    return out


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


def _mean_if_positive(per_group: np.ndarray, n_groups: int) -> np.ndarray:
    """Sum over groups (in order), divided by the number of groups when the sum is > 0."""
    if n_groups == 0:
        return np.zeros(per_group.shape[-1])
    total = np.cumsum(per_group, axis=0)[-1]
    return np.where(total > 0, total / n_groups, 0.0)


def _pair_measures(topic: TopicPrefs, pos: np.ndarray, njr: np.ndarray) -> dict[str, np.ndarray]:
    """prefs_pair and its _ret and _imp variants: for each document pair some group has a
    preference on, the share of the groups preferring the document ranked higher."""
    n_runs = pos.shape[0]
    out = {name: np.zeros(n_runs) for name in ("prefs_pair", "prefs_pair_ret",
                                               "prefs_pair_imp")}
    for run in range(n_runs):
        p_lo, p_hi = pos[run, topic.pair_lo], pos[run, topic.pair_hi]
        lo_first = p_lo < p_hi
        upper = np.where(lo_first, p_lo, p_hi)
        lower = np.where(lo_first, p_hi, p_lo)
        wins = np.where(lo_first, topic.lo_over_hi, topic.hi_over_lo)
        share = wins / (topic.lo_over_hi + topic.hi_over_lo)
        block = (upper >= njr[run]).astype(np.int64) + (lower >= njr[run])
        order = np.lexsort((lower, upper, block))
        share, block = share[order], block[order]
        cumulative = np.cumsum(np.where(block < 2, share, 0.0))
        both = np.count_nonzero(block == 0)
        some = np.count_nonzero(block < 2)
        if some:
            total = cumulative[some - 1]
            out["prefs_pair"][run] = total / len(block)
            out["prefs_pair_imp"][run] = total / some
        if both:
            out["prefs_pair_ret"][run] = cumulative[both - 1] / both
    return out


def _rnonrel(group: GroupPrefs, pos: np.ndarray, njr: np.ndarray, counts: np.ndarray,
             retrieved_only: bool) -> np.ndarray:
    """A group's fulfilled / possible ratio with its non-relevant documents set to R in
    number (``retrieved_only``: among retrieved documents, R the relevant retrieved)."""
    ful_ret, poss_ret, ful_imp, poss_imp, notoccur = counts
    rel_ret = (pos[:, group.relevant] < njr[:, None]).sum(1).astype(np.float64)
    nonrel_ret = (pos[:, group.nonrelevant] < njr[:, None]).sum(1).astype(np.float64)
    n_rel = float(len(group.relevant))
    if retrieved_only:
        r, n = rel_ret, nonrel_ret
        ful, poss = ful_ret + rel_ret * (r - n), poss_ret + n_rel * (r - n)
    else:
        r, n = np.full(len(njr), n_rel), np.full(len(njr), float(len(group.nonrelevant)))
        ful = ful_ret + ful_imp + rel_ret * (r - n)
        poss = poss_ret + poss_imp + notoccur + n_rel * (r - n)
    out = np.empty(len(njr))
    with np.errstate(divide="ignore", invalid="ignore"):
        out[:] = ful / poss
        for run in np.flatnonzero(r < n):
            f, p = _recount(group, pos[run], int(njr[run]), retrieved_only)
            out[run] = f / p if p else np.nan if f == 0 else np.inf
    return out


def _recount(group: GroupPrefs, pos: np.ndarray, njr: int, retrieved_only: bool
             ) -> tuple[float, float]:
    """trec_eval's recount for a group with more non-relevant documents than relevant: only
    the first R non-relevant documents (in position order) take part."""
    n_rel = len(group.relevant)
    if group.classes is not None:
        assert group.b_class is not None
        last = len(group.classes) - 1
        nonrel = np.sort(pos[group.classes[last]])
        x_all = np.sort(np.concatenate([pos[c] for c in group.classes]))
        pa, pb = pos[group.a], pos[group.b]
        keep = group.b_class < last
        if retrieved_only:
            r = int((pos[group.relevant] < njr).sum())
            kept = nonrel[:r]
            kept = kept[kept < njr]
            keep &= (pa < njr) & (pb < njr)
            x_all = x_all[x_all < njr]
            ful = np.count_nonzero(keep & (pa < pb))
            ful += int(np.searchsorted(x_all, kept).sum())
        else:
            kept = nonrel[:n_rel]
            ful = np.count_nonzero(keep & (pa < pb) & (pa < njr))
            ful += int(np.searchsorted(x_all, np.minimum(kept, njr)).sum())
        return float(ful), float(np.count_nonzero(keep) + len(x_all) * len(kept))
    scan = np.argsort(pos)
    limit = njr if retrieved_only else len(pos)
    is_nonrel = np.zeros(len(pos), dtype=bool)
    is_nonrel[group.nonrelevant] = True
    seen = np.cumsum(is_nonrel[scan[:limit]])
    hit = np.flatnonzero(seen == n_rel + 1)
    first_discarded = int(hit[0]) if len(hit) else limit
    dropped = is_nonrel & (pos >= first_discarded)
    keep = ~dropped[group.a] & ~dropped[group.b]
    pa, pb = pos[group.a], pos[group.b]
    if retrieved_only:
        keep &= (pa < njr) & (pb < njr)
    ful = np.count_nonzero(keep & (pa < njr) & (pa < pb))
    return float(ful), float(np.count_nonzero(keep))
