"""The unseen relevant documents of a stratified sample: a variance term for AP that is not
computed from the judged values alone (issue 29, item 1; docs/research/calibration.md,
section 11).

For each partly-sampled stratum with no judged relevant document (and each one, for a run
that retrieved none of the topic's judged relevant documents), the posterior expected
squared error of assuming its unjudged documents hold no relevant one, under a beta-binomial
model of the stratum's relevance rate (Gelman et al., Bayesian Data Analysis, 3rd ed. 2013,
sec. 2.4 and 5.3), each document weighted by its one-document change of AP-hat (Cochran
1977, sec. 6.2), at most max(AP-hat, 1 - AP-hat)^2; 0 without strata. Priors (the ``few``
option's values, :data:`FORMS`): ``jeffreys``, ``pooled`` (empirical Bayes over the topics,
:func:`pooled_prior`), ``completed`` (also :func:`completion_gap`'s upper allowance) and
``posterior`` (also :func:`posterior_ap`'s estimate). The derivation:
docs/guide/estimators.md#the-unseen-relevant-documents."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from sampleval.core.relevance import relevance

if TYPE_CHECKING:
    from sampleval.estimation.engine.views import TopicView

FORMS = ("jeffreys", "pooled", "completed", "posterior")
"""The ``few`` values this module implements (``completed``: ``pooled``'s term, with the
allowance of :func:`completion_gap`; ``posterior``: ``pooled``'s term, the estimate of the
topics with at most :data:`POSTERIOR_UP_TO` relevant judged by :func:`posterior_ap`)."""

POSTERIOR_UP_TO = 2
"""``few=posterior`` replaces AP-hat by :func:`posterior_ap` on the topics whose sample holds
at most this many judged relevant documents (k; docs/research/calibration.md, section 15:
the posterior is close to unbiased where k <= 2 on every collection measured and runs low
where k is larger, where the design-based estimate is the better)."""

STRENGTH = (1.0, 1000.0)
"""The range of the pooled prior's strength a + b (``pooled``)."""


class TopicStrata:
    """One topic's partly-sampled strata: per frame document its stratum (-1 outside them)
    and judged relevance y (NaN: unjudged), and per stratum N_h, n_h and x_h (relevant
    found)."""

    def __init__(self, view: TopicView, level: float) -> None:
        sample = view.sample
        sizes, drawn = sample.strata()
        partly = (drawn > 0) & (drawn < sizes)
        code = sample.stratum
        inside = code >= 0
        self.stratum = np.where(inside, code, -1)
        self.stratum[inside] = np.where(partly[code[inside]], code[inside], -1)
        judged = sample.judged
        self.y = np.where(judged, relevance(np.nan_to_num(sample.labels), level), np.nan)
        self.pi = sample.inclusion
        self.sizes, self.drawn = sizes, drawn
        found = judged & inside & (np.nan_to_num(self.y) > 0)
        self.found = np.bincount(code[found], minlength=len(sizes)) if len(sizes) else (
            np.zeros(0, dtype=np.int64))
        self.partly = partly


class PooledPrior(NamedTuple):
    """The ``pooled`` prior's parameters (:func:`pooled_prior`): the rate per unit of pi
    ``kappa``, the topic multipliers' Gamma(alpha, alpha) shape ``alpha``, each topic's
    posterior mean multiplier ``theta`` and the strata's Beta strength ``strength``."""

    kappa: float
    alpha: float
    theta: np.ndarray
    strength: float


def pooled_prior(strata: list[TopicStrata]) -> PooledPrior:
    """The ``pooled`` prior from every topic's partly-sampled strata (x_h found in n_h of
    N_h, pi_h = n_h / N_h): the rate p_th = min(1, kappa theta_t pi_h), kappa = sum x / sum n
    pi; the topic's multiplier theta_t ~ Gamma(alpha, alpha), its posterior mean (alpha +
    X_t) / (alpha + E_t) from the found X_t = sum_h x_h and expected E_t = kappa sum_h n_h
    pi_h, 1/alpha = [sum (X - E)^2 - sum E] / sum E^2 (the negative binomial's moments:
    Cameron & Trivedi, Regression Analysis of Count Data, 1998, sec. 3.2); the strata's
    Beta strength c = 1/rho - 1, rho = [sum (x - n p)^2 - sum n p (1 - p)] / sum n (n - 1)
    p (1 - p) (Kleinman, JASA 68, 1973, sec. 2). alpha and c are clipped to
    :data:`STRENGTH`."""
    low, high = STRENGTH
    parts = [(s.found[s.partly].astype(float), s.drawn[s.partly].astype(float),
              s.sizes[s.partly].astype(float)) for s in strata]
    n_all = np.concatenate([n for _, n, _ in parts]) if parts else np.zeros(0)
    if not n_all.size:
        return PooledPrior(0.0, high, np.ones(len(strata)), high)
    x_all = np.concatenate([x for x, _, _ in parts])
    pi_all = n_all / np.concatenate([big for _, _, big in parts])
    kappa = float(x_all.sum() / max((n_all * pi_all).sum(), 1e-12))
    found = np.array([x.sum() for x, _, _ in parts])
    expected = np.array([kappa * (n * n / big).sum() for _, n, big in parts])
    spread = ((found - expected) ** 2 - expected).sum()
    inverse = spread / (expected**2).sum() if (expected > 0).any() else 0.0
    alpha = 1.0 / min(max(inverse, 1.0 / high), 1.0 / low)
    theta = (alpha + found) / (alpha + expected)
    p = np.minimum(1.0, kappa * np.concatenate(
        [np.full(n.size, th) for (_, n, _), th in zip(parts, theta, strict=True)]) * pi_all)
    pairs = (n_all * (n_all - 1.0) * p * (1.0 - p)).sum()
    rho = ((x_all - n_all * p) ** 2).sum() - (n_all * p * (1.0 - p)).sum()
    rho = rho / pairs if pairs > 0 else 1.0
    c = 1.0 / min(max(rho, 1.0 / (high + 1.0)), 1.0 / (low + 1.0)) - 1.0
    return PooledPrior(kappa, float(alpha), theta, float(c))


class _Relevant(NamedTuple):
    """The judged relevant documents of every topic that a run retrieved, as
    :meth:`SampleStrata.change` reads them: per (document, run) its topic, run, rank and
    weight y/pi; R-hat per topic; whether each run retrieved any of its topic's
    (``seen`` ``[topics, runs]``); the ranks' bound W (every rank < W)."""

    topic: np.ndarray
    run: np.ndarray
    rank: np.ndarray
    weight: np.ndarray
    r_hat: np.ndarray
    seen: np.ndarray
    width: int


class _Frame(NamedTuple):
    """Every topic's frame, concatenated in topic order: each document's topic, its stratum
    among every topic's strata (-1 outside the partly-sampled ones), judged relevance y
    (NaN: unjudged) and inclusion probability pi; per stratum its topic, N_h, n_h, x_h and
    whether it is partly sampled."""

    topic: np.ndarray
    stratum: np.ndarray
    y: np.ndarray
    pi: np.ndarray
    stratum_topic: np.ndarray
    sizes: np.ndarray
    drawn: np.ndarray
    found: np.ndarray
    partly: np.ndarray


def _joined(parts: list[np.ndarray], kind: type) -> np.ndarray:
    """``parts`` concatenated (an empty array of ``kind`` for none)."""
    return np.concatenate(parts) if parts else np.zeros(0, kind)


BLOCK = 1 << 21
"""The most (run, document) entries :meth:`SampleStrata.change` computes in one block (16 MB
per array of floats)."""


class SampleStrata:
    """One sample's partly-sampled strata over every topic (``views``, relevance at
    ``level``), and what the unseen documents' terms compute from them: each part is built
    when first asked, once for every AP measure of an ``estimate`` (``few=pooled``'s term,
    :func:`unseen_variance`, and ``few=completed``'s gap, :func:`completion_gap`, share
    them)."""

    def __init__(self, views: list[TopicView], level: float) -> None:
        self.views, self.level = views, level

    @cached_property
    def topics(self) -> list[TopicStrata]:
        """Each topic's :class:`TopicStrata`."""
        return [TopicStrata(v, self.level) for v in self.views]

    @cached_property
    def prior(self) -> PooledPrior:
        """The ``pooled`` prior (:func:`pooled_prior`)."""
        return pooled_prior(self.topics)

    @cached_property
    def offsets(self) -> np.ndarray:
        """Where each topic's frame starts in the concatenated frame (and its end)."""
        return np.r_[0, np.cumsum([len(s.y) for s in self.topics])].astype(np.int64)

    @cached_property
    def retrieved(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every (run, frame document) a run retrieved, over the concatenated frame: the
        run, the document and its 1-based rank; and ``[runs, topics]`` each run's length in
        each topic's frame (its largest rank there, 0: none)."""
        n_runs = self.views[0].n_runs if self.views else 0
        lengths = np.zeros((n_runs, len(self.views)), dtype=np.int64)
        parts: list[list[np.ndarray]] = [[], [], []]
        for t, (view, start) in enumerate(zip(self.views, self.offsets[:-1], strict=False)):
            inside = view.frame_at_rank >= 0
            r, c = np.nonzero(inside)
            for part, value in zip(parts, (r, start + view.frame_at_rank[r, c], c + 1),
                                   strict=True):
                part.append(value)
            if inside.shape[1]:  # the last rank inside the frame
                lengths[:, t] = np.where(inside.any(axis=1),
                                         inside.shape[1] - inside[:, ::-1].argmax(axis=1), 0)
        run, doc, rank = (_joined(part, np.int64) for part in parts)
        return run, doc, rank, lengths

    @cached_property
    def ranks(self) -> np.ndarray:
        """``[runs, documents of every frame]``: each run's 1-based rank of each frame
        document (0: not retrieved; :meth:`TopicView.rank_of`, every topic at once)."""
        run, doc, rank, lengths = self.retrieved
        out = np.zeros((lengths.shape[0], int(self.offsets[-1])), dtype=np.int32)
        out[run, doc] = rank
        return out

    @cached_property
    def frame(self) -> _Frame:
        """The concatenated frame (:class:`_Frame`)."""
        firsts = np.r_[0, np.cumsum([len(s.sizes) for s in self.topics])].astype(np.int64)
        stratum = [np.where(s.stratum >= 0, s.stratum + first, -1)
                   for s, first in zip(self.topics, firsts, strict=False)]
        whole = _joined
        return _Frame(np.repeat(np.arange(len(self.topics)), np.diff(self.offsets)),
                      whole(stratum, np.int64), whole([s.y for s in self.topics], float),
                      whole([s.pi for s in self.topics], float),
                      np.repeat(np.arange(len(self.topics)), np.diff(firsts)),
                      whole([s.sizes for s in self.topics], np.int64),
                      whole([s.drawn for s in self.topics], np.int64),
                      whole([s.found for s in self.topics], np.int64),
                      whole([s.partly for s in self.topics], bool))

    @cached_property
    def relevant(self) -> _Relevant:
        """The judged relevant documents' ranks (:class:`_Relevant`)."""
        frame = self.frame
        rel = np.flatnonzero(np.nan_to_num(frame.y) > 0)
        w = frame.y[rel] / frame.pi[rel]
        r_hat = np.bincount(frame.topic[rel], weights=w, minlength=len(self.topics))
        ranks = self.ranks[:, rel]
        runs, cols = np.nonzero(ranks > 0)  # every (run, judged relevant) retrieved
        topic = frame.topic[rel[cols]]
        seen = np.zeros((len(self.topics), self.ranks.shape[0]), dtype=bool)
        seen[topic, runs] = True
        return _Relevant(topic, runs, ranks[runs, cols], w[cols], r_hat, seen,
                         int(self.ranks.max(initial=0)) + 1)

    @cached_property
    def ap_prior(self) -> np.ndarray:
        """Per document of the concatenated frame its AP-prior
        (:func:`~sampleval.core.ap_prior.retrieved_prior` over its topic's runs; > 0 where a
        run retrieved it)."""
        from sampleval.core.ap_prior import retrieved_prior

        return retrieved_prior(*self.retrieved, self.frame.topic, "aslam")

    @cached_property
    def assisted_rates(self) -> np.ndarray:
        """``few=assisted``'s predictions (:func:`cross_fitted_rates`), made once a sample."""
        return cross_fitted_rates(self)

    @cached_property
    def model(self) -> tuple[np.ndarray, float, np.ndarray]:
        """The completion model, fitted over the topics (:meth:`fitted`)."""
        return self.fitted()

    def fitted(self, without: np.ndarray | None = None) -> tuple[np.ndarray, float, np.ndarray]:
        """The completion model: per document of the concatenated frame its modelled
        relevance rate r_d = min(1, kappa theta_t prior_d^beta), prior_d its AP-prior
        (:attr:`ap_prior`): kappa and beta by Poisson maximum likelihood (:func:`power_fit`)
        on every topic's judged documents of partly-sampled strata, theta_t the topic's
        Gamma(alpha, alpha) multiplier's posterior mean (alpha + X_t) / (alpha + E_t) from
        what its judged documents found against what kappa prior^beta expects (alpha by the
        negative binomial's moments, as :func:`pooled_prior`); with beta, and each topic's R
        predicted without its own labels (the sum of min(1, kappa prior_d^beta) over its
        frame). ``without`` (``[topics]``, bool): kappa, beta and alpha fitted on the other
        topics only (a replicate of a delete-a-group jackknife), theta_t for every topic."""
        frame, n_topics = self.frame, len(self.topics)
        prior = self.ap_prior
        judged = ~np.isnan(frame.y) & (frame.stratum >= 0)
        hit = np.nan_to_num(frame.y) > 0
        keep = judged & (prior > 0)
        fit = keep if without is None else keep & ~without[frame.topic]
        if not (hit & fit).any():
            return np.zeros(len(prior)), 1.0, np.zeros(n_topics)
        kappa, beta = power_fit(hit[fit].astype(float), prior[fit])
        seen = np.bincount(frame.topic[judged], weights=hit[judged], minlength=n_topics)
        expected = kappa * np.bincount(frame.topic[keep], weights=prior[keep] ** beta,
                                       minlength=n_topics)
        kept = slice(None) if without is None else ~without
        spread = (((seen - expected) ** 2 - expected)[kept].sum()
                  / max((expected[kept] ** 2).sum(), 1e-12))
        alpha = 1.0 / min(max(spread, 1e-3), 1.0)
        theta = (alpha + seen) / (alpha + expected)
        powered = np.where(prior > 0, np.maximum(prior, 1e-300) ** beta, 0.0)
        return (np.minimum(1.0, kappa * theta[frame.topic] * powered), beta,
                np.bincount(frame.topic, weights=np.minimum(1.0, kappa * powered),
                            minlength=n_topics))

    def tables(self, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``([len(chosen) runs, W], same)``: per topic of ``chosen`` (sorted) and run, the
        judged relevant documents' sum of y/pi at ranks <= k, and of y/(pi r) at ranks > k
        (k = 0 .. W - 1)."""
        table = self.relevant
        n_runs, width = self.ranks.shape[0], table.width
        keep = np.isin(table.topic, chosen)
        at = ((np.searchsorted(chosen, table.topic[keep]) * n_runs + table.run[keep]) * width
              + table.rank[keep])
        size = chosen.size * n_runs * width
        weight = table.weight[keep]
        up_to = np.bincount(at, weights=weight, minlength=size).reshape(-1, width).cumsum(axis=1)
        by_rank = np.bincount(at, weights=weight / table.rank[keep], minlength=size).reshape(
            -1, width)
        return up_to, by_rank.sum(axis=1, keepdims=True) - by_rank.cumsum(axis=1)

    def change(self, topic: np.ndarray, docs: np.ndarray, ap: np.ndarray,
               unseen: np.ndarray) -> np.ndarray:
        """``[runs, len(docs)]`` g_d: the change of each run's AP-hat of topic ``topic[i]``
        (``ap`` ``[topics, runs]``) were its frame document ``docs[i]`` relevant (module
        docstring), the ratio linearised at R-hat + ``unseen[topic]`` (the expected relevant
        documents not seen): (dS_d - AP-hat) / (R-hat + unseen + 1), dS_d = (1 + sum_{j
        above d} y_j/pi_j) / r_d + sum_{i below d} y_i/(pi_i r_i) (0 where the run did not
        retrieve d), from :meth:`tables`."""
        n_runs = self.ranks.shape[0]
        chosen, local = np.unique(topic, return_inverse=True)
        up_to, beyond = self.tables(chosen)
        rank_d = self.ranks[:, self.offsets[topic] + docs]
        rows = local[None, :] * n_runs + np.arange(n_runs)[:, None]
        above = up_to[rows, np.maximum(rank_d - 1, 0)]
        ds = np.where(rank_d > 0, (1.0 + above) / np.maximum(rank_d, 1) + beyond[rows, rank_d],
                      0.0)
        return (ds - ap[topic].T) / (self.relevant.r_hat[topic] + unseen[topic] + 1.0)

    def weighted_change(self, chosen: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """``[len(chosen), runs]``: sum_d weight_d dS_d over the frame documents of each
        topic of ``chosen`` (sorted; ``weight`` over the concatenated frame), dS_d as
        :meth:`change` says, summed over each run's ranks (a run holds one document at a
        rank)."""
        n_runs, width = self.ranks.shape[0], self.relevant.width
        up_to, beyond = self.tables(chosen)
        at = np.full((chosen.size, n_runs, width), -1, dtype=np.int64)
        for i, t in enumerate(chosen.tolist()):
            # ranks past width - 1 (the deepest frame document any run retrieved) hold none
            frame_at_rank = self.views[t].frame_at_rank[:, :width - 1]
            at[i, :, 1:frame_at_rank.shape[1] + 1] = np.where(
                frame_at_rank >= 0, frame_at_rank + self.offsets[t], -1)
        where = at.reshape(-1, width)
        rank = np.arange(width)
        ds = (1.0 + up_to[:, np.maximum(rank - 1, 0)]) / np.maximum(rank, 1) + beyond
        gained = np.where(where >= 0, weight[where] * ds, 0.0).sum(axis=1)
        return gained.reshape(chosen.size, n_runs)

    def blocks(self, topic: np.ndarray) -> list[tuple[np.ndarray, slice]]:
        """``topic`` (each selected document's topic, in topic order) cut into blocks of
        whole topics of at most :data:`BLOCK` // runs documents and :data:`BLOCK` // (runs W)
        topics (a larger topic alone): per block its topics and its slice of ``topic``."""
        topics, starts, counts = np.unique(topic, return_index=True, return_counts=True)
        cap = max(BLOCK // max(self.ranks.shape[0], 1), 1)
        most = max(cap // self.relevant.width, 1)  # topics whose rank tables fit a block
        out, first, size = [], 0, 0
        for i, count in enumerate(counts.tolist()):
            if i > first and (size + count > cap or i - first >= most):
                out.append((topics[first:i], slice(starts[first], starts[i])))
                first, size = i, 0
            size += count
        if len(topics):
            out.append((topics[first:], slice(starts[first], len(topic))))
        return out


def _segments(values: np.ndarray, key: np.ndarray) -> np.ndarray:
    """``values`` ``[runs, n]`` summed over consecutive columns of equal ``key`` (sorted)."""
    return np.add.reduceat(values, np.flatnonzero(np.r_[True, key[1:] != key[:-1]]), axis=1)


def unseen_variance(values: np.ndarray, views: list[TopicView], level: float,
                    form: str, shared: SampleStrata | None = None) -> np.ndarray:
    """``[topics, runs]``: the term E[E^2] summed over the strata it applies to (module
    docstring), under the prior ``form`` (:data:`FORMS`); 0 on topics without strata.
    ``shared``: the sample's :class:`SampleStrata` (made here if not given)."""
    shared = SampleStrata(views, level) if shared is None else shared
    out = np.zeros(values.shape)
    if not views:
        return out
    frame = shared.frame
    # a run with none of the topic's judged relevant retrieved, or a topic whose partly
    # sampled strata found nothing
    nothing = np.bincount(frame.stratum_topic, weights=frame.found * frame.partly,
                          minlength=len(views)) == 0
    applies = ~shared.relevant.seen | nothing[:, None]
    cols = np.flatnonzero((frame.stratum >= 0) & np.isnan(frame.y)
                          & applies.any(axis=1)[frame.topic])
    if not cols.size:
        return out
    cols = cols[np.argsort(frame.stratum[cols], kind="stable")]  # by topic, then stratum
    group = frame.stratum[cols]
    h = np.unique(group)
    h_topic, found, drawn = frame.stratum_topic[h], frame.found[h], frame.drawn[h]
    if form != "jeffreys":
        prior = shared.prior
        rate = np.minimum(1.0, prior.kappa * prior.theta[h_topic] * drawn / frame.sizes[h])
        a, b = prior.strength * rate, prior.strength * (1.0 - rate)
    else:
        a = b = np.full(h.size, 0.5)
    a, b = a + found, b + drawn - found
    mean = a / (a + b)
    square = a * (a + 1.0) / ((a + b) * (a + b + 1.0))
    missed = found == 0  # R-hat's 1/pi expands what the others found
    unseen = np.bincount(h_topic[missed], weights=(mean * (frame.sizes[h] - drawn))[missed],
                         minlength=len(views))
    ap = np.clip(np.nan_to_num(values), 0.0, 1.0)
    topic = frame.topic[cols]
    for topics, part in shared.blocks(topic):
        g = shared.change(topic[part], cols[part] - shared.offsets[topic[part]], ap, unseen)
        sum_g, sum_g2 = _segments(g, group[part]), _segments(g**2, group[part])
        at = np.searchsorted(h, np.unique(group[part]))
        term = mean[at] * sum_g2 + square[at] * (sum_g**2 - sum_g2)  # [runs, strata]
        term = _segments(term, h_topic[at]).T  # [topics, runs]
        largest = np.maximum(ap[topics], 1.0 - ap[topics]) ** 2  # AP in [0, 1] bounds its error
        out[topics] = np.where(applies[topics], np.minimum(term, largest), 0.0)
    return out


def power_fit(found: np.ndarray, prior: np.ndarray) -> tuple[float, float]:
    """(kappa, beta) of found ~ Poisson(kappa prior^beta) by maximum likelihood (Newton's
    method on log kappa and beta; ``prior`` > 0)."""
    log_prior = np.log(prior)
    beta, log_kappa = 1.0, np.log(max(found.sum(), 1e-9) / prior.sum())
    for _ in range(100):
        mu = np.exp(log_kappa + beta * log_prior)
        gradient = np.array([(found - mu).sum(), ((found - mu) * log_prior).sum()])
        hessian = np.array([[mu.sum(), (mu * log_prior).sum()],
                            [(mu * log_prior).sum(), (mu * log_prior**2).sum()]])
        step = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        log_kappa, beta = log_kappa + step[0], beta + step[1]
        if np.abs(step).max() < 1e-10:
            break
    return float(np.exp(log_kappa)), float(beta)


def completed_sums(ap: np.ndarray, shared: SampleStrata
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``([topics, runs], [topics], [topics])``: sum_d q_d (dS_d - AP-hat) and sum_d q_d
    over each topic's unjudged documents of the partly-sampled strata where nothing relevant
    was judged (:func:`completion_gap`'s terms; ``ap`` ``[topics, runs]`` the AP-hat), and
    whether the topic has such documents."""
    frame = shared.frame
    out = np.zeros(ap.shape)
    cols = np.flatnonzero((frame.stratum >= 0) & np.isnan(frame.y))
    cols = cols[frame.found[frame.stratum[cols]] == 0]
    if not cols.size:
        return out, np.zeros(len(ap)), np.zeros(len(ap), dtype=bool)
    strength = shared.prior.strength
    q = np.zeros(len(frame.y))
    q[cols] = strength * shared.model[0][cols] / (strength + frame.drawn[frame.stratum[cols]])
    topic = frame.topic[cols]
    total: np.ndarray = np.bincount(topic, weights=q[cols], minlength=len(ap))
    for topics, _ in shared.blocks(topic):
        out[topics] = shared.weighted_change(topics, q) - ap[topics] * total[topics, None]
    return out, total, np.bincount(topic, minlength=len(ap)) > 0


def completion_gap(values: np.ndarray, views: list[TopicView], level: float,
                   shared: SampleStrata | None = None) -> np.ndarray:
    """``[topics, runs]``: how far each run's AP-hat (``values``) would rise were the
    partly-sampled strata where nothing relevant was judged completed by a model of their
    unjudged documents (:attr:`SampleStrata.model`), c_t - AP-hat_t (``few=completed``'s
    allowance; issue 29, docs/research/calibration.md section 13); 0 on topics without
    partly-sampled strata. ``shared``: the sample's :class:`SampleStrata` (made here if not
    given). The model and c_t: docs/guide/estimators.md#the-unseen-relevant-documents."""
    shared = SampleStrata(views, level) if shared is None else shared
    out = np.zeros(values.shape)
    if not any(s.partly.any() for s in shared.topics):
        return out
    ap = np.nan_to_num(values)
    step, total, some = completed_sums(ap, shared)
    denominator = shared.relevant.r_hat + total
    some &= denominator > 0
    completed = ap[some] + step[some] / denominator[some, None]
    out[some] = np.clip(completed, 0.0, 1.0) - ap[some]
    return out


def posterior_rates(shared: SampleStrata, rates: np.ndarray | None = None,
                    strength: float | None = None) -> np.ndarray:
    """Per document of the concatenated frame, :func:`posterior_ap`'s p_d: y_d where judged,
    (c r_d + x_h) / (c + n_h) where unjudged in a partly-sampled stratum h, 0 elsewhere."""
    frame = shared.frame
    p = np.nan_to_num(frame.y)
    unjudged = np.flatnonzero(np.isnan(frame.y) & (frame.stratum >= 0))
    if unjudged.size:
        h = frame.stratum[unjudged]
        c = shared.prior.strength if strength is None else strength
        r = shared.model[0] if rates is None else rates
        p[unjudged] = (c * r[unjudged] + frame.found[h]) / (c + frame.drawn[h])
    return p


def posterior_ap(shared: SampleStrata, rates: np.ndarray | None = None,
                 strength: float | None = None, cutoff: int | None = None) -> np.ndarray:
    """``[topics, runs]``: AP with every partly-sampled stratum completed by the completion
    model's posterior: each judged document as judged, each unjudged one of a partly-sampled
    stratum h relevant with p_d = (c r_d + x_h) / (c + n_h) (r_d
    :attr:`SampleStrata.model`'s rate, c the strength of :func:`pooled_prior`: the Beta
    posterior mean of a rate with prior mean r_d after x_h relevant in n_h draws; Gelman et
    al. 2013, sec. 2.4), every other document 0; AP the ratio of the expected S = sum_k p_k
    (1 + sum_{j<k} p_j) / k over each run's ranks to the expected R = sum_d p_d over the frame
    (documents independent given the rates; the ratio of expectations, Cochran 1977, sec.
    6.2). On a census (or where every stratum is judged in full) it is the exact AP of the
    judged documents; a run that retrieved no document with p_d > 0 gets 0. ``rates`` and
    ``strength``: r_d and c of another fit (:meth:`SampleStrata.fitted`) instead;
    ``cutoff``: AP@cutoff (trec_eval's ``map_cut``: S over the ranks <= cutoff, R over the
    frame)."""
    frame = shared.frame
    n_topics = len(shared.views)
    out = np.zeros((n_topics, shared.ranks.shape[0]))
    if not n_topics:
        return out
    p = posterior_rates(shared, rates, strength)
    total = np.bincount(frame.topic, weights=p, minlength=n_topics)
    for t, view in enumerate(shared.views):
        at = view.frame_at_rank[:, :cutoff]
        if total[t] <= 0 or not at.shape[1]:
            continue
        p_k = np.where(at >= 0, p[np.maximum(at, 0) + shared.offsets[t]], 0.0)
        before = np.cumsum(p_k, axis=1) - p_k
        out[t] = (p_k * (1.0 + before) / np.arange(1, at.shape[1] + 1)).sum(axis=1) / total[t]
    return out


def posterior_topics(shared: SampleStrata) -> np.ndarray:
    """``[topics]``: where ``few=posterior`` replaces AP-hat by :func:`posterior_ap`: the
    topics whose sample judged at most :data:`POSTERIOR_UP_TO` relevant documents (label >=
    level) of the frame and that have unjudged frame documents, all of them in partly-sampled strata (the
    posterior speaks for every document the sample left; not on a census, nor where a
    stratum had no draw or the sample has no strata)."""
    frame = shared.frame
    n_topics = len(shared.views)
    unjudged = np.isnan(frame.y)
    # judged relevant as :func:`~sampleval.estimation.result.judged_relevant` counts them
    relevant = np.bincount(frame.topic, weights=np.nan_to_num(frame.y) >= 1.0,
                           minlength=n_topics)
    left = np.bincount(frame.topic, weights=unjudged, minlength=n_topics)
    covered = np.bincount(frame.topic, weights=unjudged & (frame.stratum >= 0),
                          minlength=n_topics)
    return (relevant <= POSTERIOR_UP_TO) & (left > 0) & (covered == left)


FOLDS = 10
"""``few=assisted``'s folds of topics (:func:`cross_fitted_rates`): topic t in fold t mod
FOLDS, its rates fitted on the other folds."""


def cross_fitted_rates(shared: SampleStrata, folds: int = FOLDS) -> np.ndarray:
    """Per document of the concatenated frame, ``few=assisted``'s prediction: the completion
    model's rate min(1, kappa prior_d^beta) (:meth:`SampleStrata.fitted`), kappa and beta
    fitted (:func:`power_fit`) on the judged documents of the topics outside the document's
    topic's fold (topic t in fold t mod ``folds``; cross-fitting, Chernozhukov et al.,
    Econometrics Journal 21, 2018, sec. 3), the topic's own multiplier theta_t at its prior
    mean 1: no label of the topic's own sample enters its rates, so that the difference
    estimator they feed is design-unbiased for the topic's totals whatever the fit (Sarndal,
    Swensson & Wretman 1992, sec. 6.3). 0 where the document cannot be judged (pi = 0) or no
    run retrieved it, and for a fold whose other topics judged nothing relevant."""
    frame, n_topics = shared.frame, len(shared.topics)
    prior = shared.ap_prior
    judged = ~np.isnan(frame.y) & (frame.stratum >= 0)
    hit = np.nan_to_num(frame.y) > 0
    keep = judged & (prior > 0)
    fold = (np.arange(n_topics) % max(folds, 1))[frame.topic]
    reachable = (prior > 0) & (np.nan_to_num(frame.pi) > 0)
    out = np.zeros(len(prior))
    for g in np.unique(fold):
        fit = keep & (fold != g)
        mine = reachable & (fold == g)
        if (hit & fit).any() and mine.any():
            kappa, beta = power_fit(hit[fit].astype(float), prior[fit])
            out[mine] = np.minimum(1.0, kappa * prior[mine] ** beta)
    return out



def ap_influence(view: TopicView, q: np.ndarray, cutoff: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``([runs], [runs, frame documents])``: each run's AP = S/R of the topic's frame with
    document d relevant with expectation ``q[d]`` (S = sum_k q_k (1 + sum_{j<k} q_j)/k over
    the run's ranks k <= ``cutoff``, R = sum_d q_d > 0), and g_d = (dS_d - AP)/R, AP's
    change per unit of q_d to first order (the ratio linearised, Cochran 1977, sec. 6.2):
    dS_d = (1 + sum_{j<k} q_j)/k + sum_{i>k} q_i/i at the run's rank k of d, 0 where the run
    did not retrieve it within the cutoff."""
    total = q.sum()
    at = view.frame_at_rank[:, :cutoff]
    inside = at >= 0
    q_k = np.where(inside, q[np.maximum(at, 0)], 0.0)
    rank = np.arange(1, at.shape[1] + 1)
    before = np.cumsum(q_k, axis=1) - q_k
    after = np.cumsum((q_k / rank)[:, ::-1], axis=1)[:, ::-1] - q_k / rank
    ap = (q_k * (1.0 + before) / rank).sum(axis=1) / total
    g = np.repeat(-ap[:, None] / total, len(q), axis=1)
    r, k = np.nonzero(inside)
    g[r, at[r, k]] = ((1.0 + before) / rank + after - ap[:, None])[r, k] / total
    return ap, g


def anticipated_ap_variance(shared: SampleStrata, rates: np.ndarray, residual: bool = True,
                            cutoff: int | None = None) -> np.ndarray:
    """``[topics, runs]``: the design variance of AP's estimate anticipated under the
    completion model ``rates`` (:func:`cross_fitted_rates`; Isaki & Fuller, JASA 77, 1982;
    Sarndal, Swensson & Wretman 1992, sec. 12.2), which does not hinge on which rare relevant
    documents the topic's sample holds. AP = S/R linearised (Cochran 1977, sec. 6.2) at the
    completed frame q (judged documents as judged, the others at their rate r_d): document d
    moves AP by g_d = (dS_d - AP)/R per unit of y_d, dS_d = (1 + sum_{j above d} q_j)/k +
    sum_{i below d} q_i/i at the run's rank k of d, 0 where the run did not retrieve it
    (:func:`ap_influence`). Under the model y_d ~ Bernoulli(r_d) independently; the stratified design's variance of
    the sum of z_d over the frame, sum_h N_h^2 (1 - f_h)/n_h S_h^2 (f_h = n_h/N_h), has
    expectation, from E S_h^2 = [(1 - 1/N_h) sum_h v_d + sum_h (m_d - mbar_h)^2]/(N_h - 1),

        sum_h (1 - f_h)/f_h [(1 - 1/N_h) sum_h v_d + sum_h (m_d - mbar_h)^2] N_h/(N_h - 1),

    v_d = g_d^2 r_d (1 - r_d); m_d = 0 for ``residual`` z_d = g_d (y_d - r_d) (the
    difference estimator, ``few=assisted``), m_d = g_d r_d for z_d = g_d y_d (the
    design-based estimate). Over the partly-sampled strata (0 on a census, and where R =
    0). ``cutoff``: AP@cutoff (S over the ranks <= cutoff, as :func:`posterior_ap`)."""
    frame = shared.frame
    n_topics = len(shared.views)
    out = np.zeros((n_topics, shared.ranks.shape[0]))
    if not n_topics:
        return out
    q = np.where(np.isnan(frame.y), rates, frame.y)
    partly = frame.stratum >= 0
    h = np.where(partly, frame.stratum, 0)
    size = frame.sizes[h].astype(float)
    f = frame.drawn[h] / np.maximum(size, 1.0)
    factor = np.where(partly & (f > 0) & (size > 1), (1.0 - f) / np.where(f > 0, f, 1.0)
                      * size / np.maximum(size - 1.0, 1.0), 0.0)
    spread = factor * (1.0 - 1.0 / np.maximum(size, 1.0)) * rates * (1.0 - rates)
    total = np.bincount(frame.topic, weights=q, minlength=n_topics)
    for t, view in enumerate(shared.views):
        first, last = shared.offsets[t], shared.offsets[t + 1]
        if total[t] <= 0 or not factor[first:last].any():
            continue
        g = ap_influence(view, q[first:last], cutoff)[1]
        out[t] = (g**2 * spread[first:last]).sum(axis=1)
        if not residual:  # the strata's spread of the means g_d r_d
            m = g * rates[first:last]
            code = h[first:last]
            count = np.bincount(code, minlength=int(code.max()) + 1)
            mean = np.stack([np.bincount(code, weights=row, minlength=len(count))
                             for row in m]) / np.maximum(count, 1)
            out[t] += ((m - mean[:, code]) ** 2 * factor[first:last]).sum(axis=1)
    return out
