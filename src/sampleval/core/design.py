"""What a sampling design is: one class per design, the one home of every design decision.

A :class:`~sampleval.core.sample.Sample` carries its design (``sample.design``); a selection
method reports the design its samples have (``Selector.design``). Each design gives:

- its first- and second-order inclusion probabilities of a topic's judged documents
  (:meth:`Design.inclusion`: pi_i = P(i judged), pi_ij = P(i and j judged)), where the design
  defines them;
- the topic's units (:meth:`Design.units`): the judged documents, or the draws;
- its variance form (:attr:`Design.variance_form`) and replicate scheme
  (:attr:`Design.replicate_scheme`), which the estimators follow;
- its capabilities (:data:`CAPABILITIES`), which code tests instead of the design's name:
  ``design.has_strata``, never a list of the names of the designs that have strata.

Designs and their formulas:

``census``            every frame document judged; pi_i = pi_ij = 1.
``stratified``        simple random sampling without replacement within strata (NIST's
                      sampled qrels; infAP's uniform sample of the pool is one stratum;
                      Cochran, Sampling Techniques, 1977, ch. 5): pi_i = n_h / N_h,
                      pi_ij = n_h (n_h - 1) / (N_h (N_h - 1)) within a stratum, pi_i pi_j
                      across.
``poisson``           independent inclusions with known pi_i: pi_ij = pi_i pi_j.
``inclusion``         only pi_i known (Million Query prels); pi_ij taken as pi_i pi_j.
``with-replacement``  draws in rounds t = 1..T, N_t draws from a distribution p_t (active
                      sampling; Li & Kanoulas, CIKM 2017, sec. 3.2):
                      pi_i = 1 - prod_t (1 - p_t(i))^N_t,
                      pi_ij = pi_i + pi_j - [1 - prod_t (1 - p_t(i) - p_t(j))^N_t].
``importance``        i.i.d. draws from one distribution Q over the frame (Schnabel et al.,
                      ICTIR 2016, eq. 4): no inclusion probabilities, per-draw estimates.
``pooled``            a deterministic choice (depth-k, MTF, bandits): its judgments are
                      exact and nothing is estimated of the rest; "inclusion" only records
                      that a document was judged (pi = 1).

A design is also its name, as a string (a ``str`` subclass): the name is what a sample
directory records (``sample.json``'s ``design``), what the defaults table is keyed by, and
what code written when the design was a name compares with. A new design is a subclass with
a ``name`` of its own: it registers itself (:func:`design_named` finds it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np
import pandas as pd

from sampleval.errors import UsageError

if TYPE_CHECKING:
    from sampleval.core.sample import Sample, TopicSample

CAPABILITIES = ("is_probability_design", "is_deterministic", "has_inclusion_probabilities",
                "has_joint_probabilities", "independent_inclusions", "has_strata",
                "has_draws", "has_iid_draws", "reaches_every_document")
"""The capabilities every design declares (class attributes of :class:`Design`)."""

VARIANCE_FORMS = ("exact", "stratified", "independent", "joint", "per-draw", "none")
"""``exact``: no sampling variance (a census); ``stratified``: HT variance with the
within-stratum pi_ij of SRS without replacement; ``independent``: HT variance with pi_ij =
pi_i pi_j; ``joint``: HT variance with the pi_ij of the draws; ``per-draw``: the
Hansen-Hurwitz variance over the draws; ``none``: nothing is estimated (pooled)."""

REPLICATE_SCHEMES = ("strata", "weighted", "draws", "none")
"""Delete-one jackknife replicates of a ratio estimate (AP-hat): ``strata``, within strata
with weights (1 - n_h/N_h)(n_h - 1)/n_h (Wolter 2007, sec. 4.5; zero on a census);
``weighted``, over the judged documents with (1 - pi_k) weights (independent inclusions);
``draws``, Quenouille's over the draws; ``none``: no replicates (pooled)."""

_REGISTRY: dict[str, type[Design]] = {}


@dataclass(frozen=True)
class JudgedDesign:
    """One topic's judged documents with their inclusion probabilities.

    ``index``: positions of the judged documents in the topic's frame (docno order);
    ``pi``: pi_i; ``pi_joint``: the ``[n, n]`` matrix of pi_ij (pi_ii = pi_i).
    """

    index: np.ndarray
    pi: np.ndarray
    pi_joint: np.ndarray


@dataclass(frozen=True)
class TopicUnits:
    """A topic's units: ``kind`` (``documents`` or ``draws``), ``index`` their frame
    positions (a document drawn twice appears twice among draws) and ``probability`` each
    one's pi_i (documents) or draw probability p_k (draws)."""

    kind: str
    index: np.ndarray
    probability: np.ndarray


class Design(str):
    """A sampling design (see the module docstring); instances are the design's name."""

    __slots__ = ()
    name: ClassVar[str]
    summary: ClassVar[str] = ""
    """One line: what the design is, with its reference."""
    is_probability_design: ClassVar[bool] = True
    """Every frame document had a known chance of being judged (False: pooled), so that
    design-based estimators apply."""
    is_deterministic: ClassVar[bool] = False
    """The judged documents are fixed, not drawn (census, pooled): exact measures on them
    are not biased by chance."""
    has_inclusion_probabilities: ClassVar[bool] = True
    """pi_i is defined for every judged document (:meth:`inclusion`)."""
    has_joint_probabilities: ClassVar[bool] = True
    """pi_ij is defined for every pair of judged documents (:meth:`inclusion`), with
    pi_ij <= min(pi_i, pi_j): the Horvitz-Thompson variances apply."""
    independent_inclusions: ClassVar[bool] = False
    """pi_ij = pi_i pi_j: writing pi_i alone (prels) loses nothing of the design."""
    has_strata: ClassVar[bool] = False
    """The frame is cut into strata (the frame's ``stratum`` column), each sampled on its
    own; estimates and replicates are stratified."""
    has_draws: ClassVar[bool] = False
    """The sample records its draws with their probabilities (the ``draws`` table): the
    per-draw (Hansen-Hurwitz) estimators apply."""
    has_iid_draws: ClassVar[bool] = False
    """The draws are i.i.d. from one distribution Q over the frame, known for every frame
    document (``round_probs`` round 0): importance-sampling estimators apply."""
    reaches_every_document: ClassVar[bool] = False
    """Every frame document has pi_i > 0 once the budget covers every stratum, whatever the
    method's parameters. (Designs whose draw distributions a method sets say per sample:
    :meth:`draws_reach_every_document`.)"""
    units_kind: ClassVar[str] = "documents"
    """What :meth:`units` returns: the judged ``documents`` or the ``draws``."""
    variance_form: ClassVar[str] = "none"
    """How its estimates' variance is computed (one of :data:`VARIANCE_FORMS`)."""
    replicate_scheme: ClassVar[str] = "none"
    """How a ratio's jackknife replicates are formed (one of :data:`REPLICATE_SCHEMES`)."""

    def __new__(cls) -> Self:
        return super().__new__(cls, cls.name)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name is None:
            return
        if cls.variance_form not in VARIANCE_FORMS or (
                cls.replicate_scheme not in REPLICATE_SCHEMES):
            raise ValueError(f"design {name!r}: variance_form one of {VARIANCE_FORMS}, "
                             f"replicate_scheme one of {REPLICATE_SCHEMES}")
        existing = _REGISTRY.get(name)
        if existing is not None and existing.__qualname__ != cls.__qualname__:
            raise ValueError(f"two designs are named {name!r}: {existing.__qualname__} and "
                             f"{cls.__qualname__}")
        _REGISTRY[name] = cls

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return design_named, (self.name,)

    @classmethod
    def capabilities(cls) -> dict[str, bool]:
        """Each of :data:`CAPABILITIES` and whether the design has it."""
        return {c: bool(getattr(cls, c)) for c in CAPABILITIES}

    def inclusion(self, sample: Sample, topic: TopicSample, index: np.ndarray
                  ) -> JudgedDesign:
        """pi_i and pi_ij of the judged documents at frame positions ``index`` (increasing)
        of ``topic`` in ``sample``; UsageError where the design defines none."""
        raise UsageError(f"design {self.name!r} has no inclusion probabilities "
                         "(use the importance-sampling estimators)")

    def inclusion_known(self, sample: Sample) -> bool:
        """Whether :meth:`inclusion` can compute pi_i and pi_ij for ``sample``: the design
        defines them and the sample holds the tables they are computed from."""
        return self.has_inclusion_probabilities

    def draws_reach_every_document(self, sample: Sample) -> bool:
        """Whether every draw of ``sample`` could have drawn every frame document, however
        the draws adapted (the method that made it guarantees it: :func:`guaranteed`): what
        makes the per-draw (Hansen-Hurwitz) estimators unbiased for every measure."""
        return self.has_draws and guaranteed(sample, "draws_reach_every_document")

    def simple_random_sample(self, sample: Sample) -> bool:
        """Whether each topic of ``sample`` is one simple random sample of its frame (the
        method that made it guarantees it: :func:`guaranteed`)."""
        return self.has_strata and guaranteed(sample, "simple_random_sample")

    def units(self, sample: Sample, topic: TopicSample) -> TopicUnits:
        """The topic's units (:attr:`units_kind`): its judged documents with pi_i, or its
        draws in order with their draw probabilities."""
        if self.units_kind == "draws":
            return TopicUnits("draws", *draws_of(sample, topic))
        index = np.flatnonzero(topic.judged)
        return TopicUnits("documents", index, self.inclusion(sample, topic, index).pi)


GUARANTEES = ("draws_reach_every_document", "simple_random_sample")
"""What a selection method may guarantee of its samples beyond its design's capabilities,
depending on its parameters (``Selector.draws_reach_every_document``,
``Selector.simple_random_sample``). The method records them in the sample
(``sample.meta["guarantees"]``, name -> bool), so that estimation reads them from the sample,
with no knowledge of the method."""

_LEGACY_GUARANTEES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "draws_reach_every_document": lambda meta: meta.get("method") == "active" and float(
        (meta.get("params") or {}).get("uniform") or 0.0) > 0.0,
    "simple_random_sample": lambda meta: meta.get("method") == "uniform"
    and "confident" not in meta,
}
"""The guarantees of a sample written before samples recorded them (sampleval 2026-11): the
built-in methods' rules then, which only ``active`` with a uniform share and ``uniform``
(not judge-until-confident's phases) met."""


def guaranteed(sample: Sample, name: str) -> bool:
    """Whether the method that made ``sample`` guarantees ``name`` (one of
    :data:`GUARANTEES`) of it: as the sample records (``meta["guarantees"]``), or for a
    sample that records none, as the built-in methods' rules gave when it was written."""
    if name not in GUARANTEES:
        raise ValueError(f"unknown guarantee {name!r} (one of {', '.join(GUARANTEES)})")
    recorded = sample.meta.get("guarantees")
    if isinstance(recorded, dict):
        return bool(recorded.get(name, False))
    return _LEGACY_GUARANTEES[name](sample.meta)


def design_named(name: str) -> Design:
    """The design called ``name`` (UsageError naming the known ones otherwise)."""
    cls = _REGISTRY.get(name)
    if cls is None:
        raise UsageError(f"unknown design {name!r} (one of {', '.join(_REGISTRY)})")
    return cls()


def designs() -> list[Design]:
    """Every registered design, in the order declared."""
    return [cls() for cls in _REGISTRY.values()]


def as_design(design: str) -> Design:
    """``design`` as a :class:`Design` (a name is looked up with :func:`design_named`)."""
    return design if isinstance(design, Design) else design_named(design)


def _certain(index: np.ndarray) -> JudgedDesign:
    n = len(index)
    return JudgedDesign(index, np.ones(n), np.ones((n, n)))


def _independent(topic: TopicSample, index: np.ndarray) -> JudgedDesign:
    pi = topic.inclusion[index]
    joint = np.outer(pi, pi)
    np.fill_diagonal(joint, pi)
    return JudgedDesign(index, pi, joint)


class Census(Design):
    name = "census"
    summary = "every frame document judged (pi_i = pi_ij = 1)"
    is_deterministic = True
    independent_inclusions = True
    has_strata = True  # the frame's strata, each judged whole (a stratified design at n_h = N_h)
    reaches_every_document = True
    variance_form = "exact"
    replicate_scheme = "strata"  # zero-weight replicates: a census has no sampling variance

    def inclusion(self, sample: Sample, topic: TopicSample, index: np.ndarray
                  ) -> JudgedDesign:
        return _certain(index)


class Stratified(Design):
    name = "stratified"
    summary = ("simple random sampling without replacement within strata (Cochran 1977, "
               "ch. 5; NIST's sampled qrels, infAP)")
    has_strata = True
    reaches_every_document = True
    variance_form = "stratified"
    replicate_scheme = "strata"

    def inclusion(self, sample: Sample, topic: TopicSample, index: np.ndarray
                  ) -> JudgedDesign:
        sizes, sampled = topic.strata()
        return JudgedDesign(index, *stratified_inclusion(topic.stratum[index], sizes, sampled))


class Poisson(Design):
    name = "poisson"
    summary = "independent inclusions with known pi_i (pi_ij = pi_i pi_j)"
    independent_inclusions = True
    variance_form = "independent"
    replicate_scheme = "weighted"

    def inclusion(self, sample: Sample, topic: TopicSample, index: np.ndarray
                  ) -> JudgedDesign:
        return _independent(topic, index)


class InclusionOnly(Poisson):
    """Read as Poisson sampling: pi_ij is not known, and taken as pi_i pi_j."""

    name = "inclusion"
    summary = ("only pi_i known (Million Query prels; Carterette et al. 2008), pi_ij taken "
               "as pi_i pi_j")


class WithReplacement(Design):
    name = "with-replacement"
    summary = ("draws with replacement in rounds from changing distributions (active "
               "sampling; Li & Kanoulas, CIKM 2017, sec. 3.2)")
    has_draws = True
    variance_form = "joint"
    replicate_scheme = "weighted"

    def inclusion_known(self, sample: Sample) -> bool:
        """Only with the ``rounds`` and ``round_probs`` tables (not every with-replacement
        sample keeps them)."""
        return sample.rounds is not None and sample.round_probs is not None

    def inclusion(self, sample: Sample, topic: TopicSample, index: np.ndarray
                  ) -> JudgedDesign:
        from sampleval.core._kernels import with_replacement_inclusion

        if sample.rounds is None or sample.round_probs is None:  # not inclusion_known
            raise UsageError("a with-replacement sample needs its rounds and round_probs "
                             "tables")
        rounds = sample.rows("rounds", topic.topic)
        probs = sample.rows("round_probs", topic.topic)
        round_ids = np.sort(rounds["round"].to_numpy())
        probs = probs[np.isin(probs["round"].to_numpy(), round_ids)]  # not round 0's p-bar
        sizes = rounds.set_index("round").loc[round_ids, "size"].to_numpy(dtype=np.float64)
        # p[i, t]: draw probability of judged document i at round t
        p = np.zeros((len(index), len(round_ids)))
        row_of_frame_doc = np.full(len(topic.docnos) + 1, -1, dtype=np.int64)  # last: outside
        row_of_frame_doc[index] = np.arange(len(index))
        # the table repeats a few docnos many times: locate each distinct one once
        codes, distinct = pd.factorize(probs["doc_id"])
        frame_pos = topic.locate(np.asarray(distinct, dtype=object).astype(str))
        row = row_of_frame_doc[frame_pos][codes]
        ok = row >= 0
        col = np.searchsorted(round_ids, probs["round"].to_numpy())
        p[row[ok], col[ok]] = probs["probability"].to_numpy(dtype=np.float64)[ok]
        pi, joint = with_replacement_inclusion(p, sizes)
        return JudgedDesign(index, pi, joint)


class Importance(Design):
    name = "importance"
    summary = ("i.i.d. draws from one distribution Q over the frame (Schnabel et al., "
               "ICTIR 2016, eq. 4)")
    has_inclusion_probabilities = False
    has_joint_probabilities = False
    has_draws = True
    has_iid_draws = True
    units_kind = "draws"
    variance_form = "per-draw"
    replicate_scheme = "draws"


class Pooled(Design):
    name = "pooled"
    summary = ("a deterministic choice (depth-k, MTF, bandits): its judgments are exact, "
               "nothing is estimated of the rest")
    is_probability_design = False
    is_deterministic = True
    has_inclusion_probabilities = False
    has_joint_probabilities = False

    def inclusion(self, sample: Sample, topic: TopicSample, index: np.ndarray
                  ) -> JudgedDesign:
        return _certain(index)  # records that they were judged; no probability


CENSUS, STRATIFIED, POISSON = Census(), Stratified(), Poisson()
INCLUSION, WITH_REPLACEMENT, IMPORTANCE, POOLED = (
    InclusionOnly(), WithReplacement(), Importance(), Pooled())


def stratified_inclusion(h: np.ndarray, sizes: np.ndarray, sampled: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """pi_i = n_h/N_h and pi_ij (n_h (n_h - 1)/(N_h (N_h - 1)) within a stratum, pi_i pi_j
    across, pi_i on the diagonal) of documents in strata ``h`` of stratified SRS with
    ``sizes`` N_h and ``sampled`` n_h. Where n_h < 2 no two documents of h are both sampled;
    pi_ij is then taken as pi_i pi_j (an HT weight of 0) so that a document kept with y = 0
    beside another of h, as in a jackknife replicate, adds nothing rather than 0/0."""
    big_n, n = sizes[h].astype(np.float64), sampled[h].astype(np.float64)
    pi = n / big_n
    same = h[:, None] == h[None, :]
    within = np.divide(n * (n - 1), big_n * (big_n - 1), out=np.ones_like(n),
                       where=big_n > 1)
    joint = np.where(same & (n[:, None] > 1), within[:, None], np.outer(pi, pi))
    np.fill_diagonal(joint, pi)
    return pi, joint


def draws_of(sample: Sample, topic: TopicSample) -> tuple[np.ndarray, np.ndarray]:
    """A topic's draws, in order: each one's frame index and draw probability p_k(d_k);
    UsageError when the sample has no draws, or a draw is outside the frame, unjudged, or has
    no positive probability."""
    if sample.draws is None:
        raise UsageError(f"a {sample.design} sample records no draws")
    rows = sample.rows("draws", topic.topic)
    if rows.empty:
        raise UsageError(f"topic {topic.topic} has no draws")
    x = topic.locate(rows["doc_id"].to_numpy(dtype=object).astype(str))
    if (x < 0).any():
        raise UsageError(f"topic {topic.topic}: a drawn document is not in the frame")
    if np.isnan(topic.labels[x]).any():
        raise UsageError(f"topic {topic.topic}: a drawn document has no judgment")
    probs = rows["probability"].to_numpy(dtype=np.float64)
    if not (probs > 0).all():
        raise UsageError(f"topic {topic.topic}: a draw has no positive probability")
    return x, probs


def draw_distribution(sample: Sample, topic: TopicSample) -> np.ndarray:
    """Q of every frame document of ``topic``, the distribution of a design of i.i.d. draws
    (``has_iid_draws``), from the sample's ``round_probs`` (round 0; over several rounds the
    smallest, 0 for a document missing from a round)."""
    rows = sample.rows("round_probs", topic.topic)
    where = topic.locate(rows["doc_id"].to_numpy(dtype=object).astype(str))
    rounds = pd.factorize(rows["round"])[0]
    table = np.zeros((rounds.max(initial=-1) + 1, len(topic.docnos)))
    keep = where >= 0
    table[rounds[keep], where[keep]] = rows["probability"].to_numpy(dtype=np.float64)[keep]
    return table.min(axis=0, initial=np.inf) if len(table) else np.zeros(table.shape[1])
