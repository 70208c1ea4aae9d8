"""The depth, the frame and the estimators a command uses for a sample: one home.

``sampleval estimate``, ``compare``, ``simulate``, a campaign's live leaderboard and the
library's :func:`sampleval.estimate` and :func:`sampleval.estimation.compare.compare` all take them
from :func:`setup_for` (and, where only a design is known, as in ``simulate``'s plans, from
:func:`estimator_of`), so that a run's mean is the same number whichever command prints it:

- the depth: each run is cut to the depth its sample was pooled at (``meta.pool_depth``; all
  documents when the sample records none), unless another is asked for;
- the frame: what the frame share (``frame_share``) of a run is measured against: the run's
  top documents to that depth, and for stratified designs only the strata with a judged
  document (as every estimator counts them);
- the estimators: a plain measure (``AP``, ``P@10``, ``nDCG@10``) by the estimator the
  sample's design prefers (:func:`sampleval.estimation.spec.estimator_for`), an estimator's
  name (``AP~ht``, ``xinfAP``) as given; by default the measures of
  :data:`DEFAULT_MEASURES`, and for ``compare`` :func:`compare_default`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sampleval.errors import SampleValError, UsageError
from sampleval.estimation.family import FAMILIES, EstimatorFamily
from sampleval.estimation.spec import (
    EstimateSpec,
    draws_reach_every_document,
    established_names,
    estimator_for,
    parse_estimate,
)

if TYPE_CHECKING:
    from sampleval.core.design import Design
    from sampleval.core.sample import Sample

DEFAULT_MEASURES: tuple[tuple[str, int | None], ...] = (
    ("AP", None), ("nDCG", 10), ("P", 10), ("NumRel", None))
"""The plain measures estimated when none is named, each by its design's preferred
estimator."""
SAMPLE_DEPTH = "sample"
"""``depth=SAMPLE_DEPTH``: the depth the sample was pooled at (the default everywhere)."""
SHARE_DEPTH = 100
"""The depth the frame share is measured at when neither the sample nor the caller gives
one."""
DEPTH_DOC = "docs/guide/estimating.md#the-estimation-depth"
_TABLE_NAME = re.compile(r"^(?P<base>[A-Za-z]+)(?:@(?P<cut>\d+))?$")
"""A plain measure as the defaults table writes it (``DCG``, ``P@10``)."""


@dataclass(frozen=True)
class Setup:
    """What a command uses for a sample: ``depth`` (each run's top ``depth`` documents per
    topic; None: all), ``share_depth`` (the depth the frame share is measured at),
    ``strata_bound`` (a document of a stratum without a judged document is outside the
    frame), ``specs`` (the estimators, in the order asked) and ``asked`` (the name each was
    asked by)."""

    depth: int | None
    share_depth: int | None
    strata_bound: bool
    specs: tuple[EstimateSpec, ...]
    asked: tuple[str, ...] = ()

    @property
    def chosen(self) -> list[str]:
        """``AP by xinfAP`` for each plain measure asked for, naming its estimator."""
        return [f"{a} by {s.name}" for a, s in zip(self.asked, self.specs, strict=True)
                if a != s.name and "~" not in a]

    @property
    def names(self) -> list[str]:
        """The estimators' names, as the results' ``measure`` column prints them."""
        return [s.name for s in self.specs]


def setup_for(sample: Sample, measures: Sequence[str] | str | None = None, *,
              depth: int | str | None = SAMPLE_DEPTH, with_predictions: bool = False,
              warn: bool = True) -> Setup:
    """The depth, frame and estimators for ``sample``: ``measures`` plain measures or
    estimators' names (None: :func:`default_estimates`), each checked to apply to the
    sample's design and to have the predictions it needs (UsageError, before any run is
    read); ``depth`` as :func:`estimation_depth` reads it (``warn``: say what a depth other
    than the sample's means)."""
    if measures is None:
        names: Sequence[str] = default_estimates(sample)
    else:
        names = [measures] if isinstance(measures, str) else measures
    reach, simple = draws_reach_every_document(sample), simple_random(sample)
    by_spec: dict[EstimateSpec, str] = {}
    for name in names:
        by_spec.setdefault(estimator_of(name, sample.design, reach, simple, levels=True),
                           name.strip())
    specs = list(by_spec)
    for spec in specs:
        family = FAMILIES[spec.family]
        if not accepts(family, sample.design):
            raise UsageError(f"{spec.name} needs a {' or '.join(family.designs)} sample, "
                             f"not a {sample.design} one")
        if family.needs_predictions and not with_predictions:
            raise UsageError(f"{spec.name} needs predictions of relevance (--predictions "
                             "FILE; in the library, predictions=)")
    if warn:
        cut = estimation_depth(sample, depth)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cut = estimation_depth(sample, depth)
    share_depth = cut if cut is not None else (
        None if "pool_depth" in sample.meta else SHARE_DEPTH)
    strata_bound = sample.design.has_strata and not sample.keep_empty_strata
    return Setup(cut, share_depth, strata_bound, tuple(specs), tuple(by_spec.values()))


def accepts(family: EstimatorFamily, design: Design) -> bool:
    """Whether ``family`` estimates from samples of ``design``: whether the design has the
    capabilities the family requires (:meth:`EstimatorFamily.accepts`)."""
    return family.accepts(design)


def estimator_of(name: str, design: Design, reach_every_document: bool = False,
                 simple_random: bool = False, levels: bool = False) -> EstimateSpec:
    """The estimator ``name`` means on samples of ``design``: an estimator's name
    (``AP~ht``, ``xinfAP``) as given; a plain measure (``AP``, ``P@10``, ``nDCG@10``) by the
    estimator the design prefers (:func:`~sampleval.estimation.spec.estimator_for`;
    ``reach_every_document`` and ``simple_random`` pick its variants); UsageError when it is
    neither or no estimator of the design estimates it. A measure with its own relevance
    level (``P(rel=2)@5``, ``AP(rel=2)~ht``) gives an estimator at that level
    (:attr:`~sampleval.estimation.spec.EstimateSpec.level`) where the caller computes each
    estimator at its own (``levels``), and UsageError elsewhere."""
    spec = _estimator_of(name, design, reach_every_document, simple_random)
    if spec.level is not None and not levels:
        raise UsageError(f"{name}: give the relevance level with -l (level= in the "
                         "library), not in the measure's name")
    return spec


def _estimator_of(name: str, design: Design, reach_every_document: bool,
                  simple_random: bool) -> EstimateSpec:
    try:
        return parse_estimate(name)
    except UsageError:
        if "~" in name or name.split("(")[0].strip() in established_names():
            raise  # an estimator named, with an option it does not take
        from sampleval.measures.names import parse_measure

        written = _TABLE_NAME.match(name.strip())  # as the table writes it: DCG, DCG@10
        if written is not None:
            spec = estimator_for(written["base"], None if written["cut"] is None else
                                 int(written["cut"]), design, reach_every_document,
                                 simple_random)
            if spec is not None:
                return spec
        try:
            plain = parse_measure(name.strip())
        except SampleValError as error:
            raise (error if _a_measure(name) else _unknown(name)) from None
        if plain.params:
            raise UsageError(f"{name}: an estimator takes a relevance level (rel=), not "
                             f"{', '.join(k for k, _ in plain.params)}") from None
        cut = plain.cutoff
        whole = cut is None or float(cut).is_integer()  # estimators take whole-rank cutoffs
        spec = estimator_for(plain.name, None if cut is None else int(cut), design,
                             reach_every_document, simple_random) if whole else None
        if spec is None:
            raise UsageError(f"no estimator of {name} applies to a {design} sample "
                             "('sampleval methods' lists the families and their "
                             "measures)") from None
        return spec if plain.rel is None else replace(spec, level=plain.rel)


def _a_measure(name: str) -> bool:
    """Whether ``name`` without its parameters is a measure (``nDCG(rel=2)@10``: nDCG takes
    no ``rel``; its own error says so)."""
    from sampleval.measures.names import parse_measure

    try:
        parse_measure(re.sub(r"\([^()]*\)", "", name.strip()))
    except SampleValError:
        return False
    return "(" in name


def _unknown(name: str) -> UsageError:
    """``name`` is neither an estimator nor a plain measure: one line naming both kinds."""
    from sampleval.declare import did_you_mean
    from sampleval.estimation.defaults import CUTOFF, DEFAULTS

    plain = {key.removesuffix(CUTOFF) for table in DEFAULTS.values() for key in table}
    established = sorted(established_names())
    written = _TABLE_NAME.match(name.strip())
    hint = did_you_mean(name if written is None else written["base"],
                        [*sorted(plain), *established])
    return UsageError(f"unknown measure {name!r}{hint}: name a plain measure (AP, P@10, "
                      "nDCG@10 ...: 'sampleval methods --defaults' lists them), an estimator "
                      f"BASE~FAMILY (AP~ht, P@10~ht) or one of {', '.join(established)}")


def estimated_topics(sample: Sample, warn: bool = True) -> Sample:
    """``sample`` without its topics none of whose frame documents can be seen (every
    inclusion probability 0: no stratum of the topic was sampled, as in NIST sampled qrels
    whose topic has only rel -1 lines), with one warning naming them (``warn``). Such a
    topic has no estimate: counted, every run would score 0 +- 0 there, pulling its mean
    down and narrowing its interval; so it is left out, as a run's mean leaves out the
    topics the run lacks (and the campaign's live leaderboard the topics nobody judged)."""
    counts = sample.unreachable(sample.topics)
    blind = [t for t, (unseen, size) in zip(sample.topics, counts.tolist(), strict=True)
             if size and unseen == size]
    if not blind:
        return sample
    if len(blind) == len(sample.topics):
        raise UsageError("no topic of the sample has a judged document that any estimate can "
                         "use (every inclusion probability is 0)")
    if warn:
        shown = ", ".join(blind[:5]) + (", ..." if len(blind) > 5 else "")
        warnings.warn(f"{len(blind)} of {len(sample.topics)} topics (topic {shown}) have no "
                      "sampled document (every inclusion probability 0): left out of every "
                      f"mean, which is over the other {len(sample.topics) - len(blind)}",
                      stacklevel=3)
    return sample.restricted([t for t in sample.topics if t not in set(blind)])


def default_estimates(sample: Sample) -> tuple[str, ...]:
    """The estimators used when none is named: each of :data:`DEFAULT_MEASURES` by the
    estimator the sample's design prefers (the table of
    :mod:`sampleval.estimation.defaults`, which says why each)."""
    if not sample.design.is_probability_design:
        raise UsageError(f"a {sample.design} (deterministic) sample supports no design-based "
                         "estimator: its judged documents are evaluated exactly, with "
                         "'sampleval evaluate SAMPLE RUN...'")
    reach, simple = draws_reach_every_document(sample), simple_random(sample)
    specs = [estimator_for(base, cut, sample.design, reach, simple)
             for base, cut in DEFAULT_MEASURES]
    names = [s.name for s in specs if s is not None]
    if not names:
        raise UsageError(f"no estimator is available for a {sample.design} sample; "
                         "name one (--measure; in the library, measures=)")
    return tuple(dict.fromkeys(names))


def simple_random(sample: Sample) -> bool:
    """Whether ``sample`` is one simple random sample of each topic's frame, as its method
    recorded (:meth:`sampleval.core.design.Design.simple_random_sample`: ``uniform``, infAP's
    design), whose AP has a default of its own
    (:data:`sampleval.estimation.defaults.SIMPLE_RANDOM`). The method decides, not the
    number of strata: a sample read from qrels keeps its design's defaults, and so does a
    judge-until-confident one (its phases, :mod:`sampleval.judging.confident`)."""
    return sample.design.simple_random_sample(sample)


def compare_default(sample: Sample) -> str:
    """The estimator ``compare`` uses when none is named
    (:data:`sampleval.estimation.defaults.COMPARE`), else the first of
    :func:`default_estimates`."""
    from sampleval.estimation.defaults import COMPARE

    return COMPARE.get(sample.design.name) or default_estimates(sample)[0]


def estimation_depth(sample: Sample, depth: int | str | None = SAMPLE_DEPTH) -> int | None:
    """The estimation depth: the sample's pool depth for :data:`SAMPLE_DEPTH` (None, all
    documents, when it records none), else ``depth`` (None: all documents), with a one-line
    warning when it differs from the sample's."""
    recorded = "pool_depth" in sample.meta
    pool_depth = sample.meta.get("pool_depth")
    if depth == SAMPLE_DEPTH:
        return pool_depth if recorded else None
    if isinstance(depth, str):
        raise UsageError(f"depth must be a number of documents, None or {SAMPLE_DEPTH!r}, "
                         f"not {depth!r}")
    if recorded and depth != pool_depth:
        pooled = "all" if pool_depth is None else str(pool_depth)
        shallower = depth is not None and (pool_depth is None or depth < pool_depth)
        meaning = ("the runs are cut shallower than the frame" if shallower else
                   "documents below the pool depth count as not relevant, so deep measures "
                   "are biased low")
        warnings.warn(f"depth {'all' if depth is None else depth} differs from the "
                      f"sample's pool depth {pooled}: {meaning} ({DEPTH_DOC})", stacklevel=3)
    return depth
