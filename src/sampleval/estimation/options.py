"""The estimators' options: one vocabulary, declared once.

Every option an estimator family takes (``AP~ht(bias=taylor,interval=normal)``) is one of
:data:`VOCABULARY`: its name, what it chooses, and each value it can take with what that value
means, one line each. ``sampleval methods``, ``sampleval estimate --help`` and
``docs/guide/options.md`` (:func:`guide`) print these lines. A family does not describe its
options again: it picks, for each option its measures take, the values it allows and its
default (:func:`pick`), by reference to the vocabulary, and its docstring says how it computes
each (paper, section, equation).

An option name means one thing, and so does a value within it: ``bias`` is the correction of
a ratio estimate's bias for every measure (AP's, and R@k's, Rprec's and nDCG's, which was
``correction=``); ``variance`` the variance estimator (``var=`` before); ``interval`` how the
interval is built around the estimate (``clt`` was ``normal``'s name on ``~is``); ``weights``
whether each judged document or each draw is weighted (``~ppi``'s ``form=`` before, a word the
importance sampler's ``form`` parameter also used), and ``by-design`` the value that leaves a
choice to the sample's design (``design`` before, a word ``variance=design`` also used).

Names and values renamed (:data:`RENAMED_OPTIONS`, :data:`RENAMED_VALUES`) are read for one
release with a ``FutureWarning`` naming the new spelling (:func:`canonical`); the estimate is
the same. Values deprecated without a new spelling (:data:`DEPRECATED_VALUES`) are computed for
one release with a ``FutureWarning`` saying what to use instead (:func:`warn_deprecated`).

The canonical order of options in an estimator's name (:attr:`EstimateSpec.full_name`) is the
vocabulary's.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sampleval.declare import Param, closest
from sampleval.errors import UsageError

if TYPE_CHECKING:
    from sampleval.estimation.family import EstimatorFamily


@dataclass(frozen=True)
class Option:
    """One option of the vocabulary: its ``name``, what it chooses (``about``, one line) and
    its ``values``, each value to the one line saying what it means."""

    name: str
    about: str
    values: Mapping[str, str]

    def line(self, value: str) -> str:
        """``value: its meaning``."""
        return f"{value}: {self.values[value]}"


VOCABULARY: dict[str, Option] = {option.name: option for option in (
    Option("weights", "how the judged sample is weighted up to the topic (prediction-powered "
           "estimators)", {
               "by-design": "the sample's design decides: each judged document by 1/pi where "
                            "the design has inclusion probabilities, each draw for importance "
                            "samples, for ratio measures on active samples and for every "
                            "measure on active samples drawn with a uniform share",
               "ht": "each judged document by 1/pi (Horvitz-Thompson), wherever the sample "
                     "has inclusion probabilities",
               "draws": "each draw by 1/(n p) (Hansen-Hurwitz), wherever the sample records "
                        "its draws: unbiased under adaptive draws",
           }),
    Option("tuning", "the coefficient lam on the predictions (prediction-powered estimators)", {
        "by-measure": "cross-fit for P@k, DCG and NumRel, plug-in for the ratios AP, R@k, "
                      "Rprec and nDCG",
        "cross-fit": "power-tuned on the other topics, shrunk, in [0, 1]",
        "plug-in": "power-tuned on every topic, in [0, 1]",
        "none": "lam = 1, the plain difference estimator",
    }),
    Option("ap", "which estimate of AP's numerator, a sum over pairs of relevant documents", {
        "ours": "pairs weighted by 1/pi_ij, each document itself by 1/pi_i",
        "paper": "Li & Kanoulas's PC(r(i)), the document itself at 1/pi_i, so 1/pi_i^2 on "
                 "the diagonal",
    }),
    Option("cut", "where Rprec cuts the ranking, at the estimated number of relevant "
           "documents R-hat", {
               "floor": "rank floor(R-hat)",
               "round": "rank int(R-hat + 0.5)",
           }),
    Option("bias", "the correction of a ratio estimate's bias (AP's; R@k's, Rprec's and "
           "nDCG's)", {
               "by-design": "the sample's design decides: taylor-jackknife on stratified "
                            "samples, jackknife over draws, taylor on the other designs",
               "taylor": "less the ratio's first-order bias, (Q V(R) - C(N, R))/R^2, "
                         "estimated with the design's (co)variances",
               "taylor-jackknife": "taylor, less the stratified jackknife's estimate of the "
                                   "bias it keeps, each replicate with its own Taylor term",
               "jackknife": "less the delete-one jackknife's estimate of the bias "
                            "(Quenouille/Jones; stratified on stratified samples, over the "
                            "draws on draws), with the jackknife's variance",
               "none": "the ratio as it is",
           }),
    Option("variance", "the variance estimator", {
        "jackknife": "delete-one jackknife (stratified on stratified samples) of the estimate "
                     "as reported, its bias correction included",
        "jackknife-uncorrected": "the same jackknife of the estimate before its bias "
                                 "correction",
        "appendix": "Yilmaz, Kanoulas & Aslam 2008, Appendix",
        "linear": "the linearised ratio's design variance",
        "anticipated": "the design's variance expected under a model of the labels learnt "
                       "from every topic's judged documents (the design's where no model can "
                       "be fitted)",
        "design": "the design's variance estimator, as ~ht's",
    }),
    Option("few", "AP's variance on a topic whose sample holds at most one relevant "
           "document, where the jackknife has nothing to measure the spread with", {
               "moment": "at least (1 - f) m2: f the share of the topic's frame judged, m2 "
                         "the run's mean squared AP over the topics where something "
                         "relevant was judged",
               "bernoulli": "at least (1 - f) m (1 - m), m that mean AP",
               "scaled": "at least (1 - f)/4",
               "bound": "at least 1/4: the topic's interval spans [0, 1]",
               "jeffreys": "moment, after adding (on stratified samples) the expected "
                           "squared error of the unseen relevant documents of each "
                           "partly-sampled stratum where the run's estimate sees none, "
                           "under a Jeffreys Beta(1/2, 1/2) prior on the stratum's "
                           "relevance rate",
               "pooled": "as jeffreys, the prior centred on a rate pooled over the topics "
                         "by stratum depth, its strength estimated from them",
               "completed": "pooled, and the upper side of the interval widened by how far "
                            "the estimate would rise were the strata where nothing relevant "
                            "was judged completed by a model of their unjudged documents "
                            "fitted over the topics (an allowance for the bias of the "
                            "topics whose sample found nothing)",
               "posterior": "pooled's variance; and on a topic whose sample holds at most two "
                            "relevant documents (on stratified samples, every unjudged "
                            "document in a partly-sampled stratum), AP itself completed by "
                            "that model's posterior: each unjudged document relevant with its "
                            "stratum's posterior rate, AP the expected S over the expected R "
                            "(the mean less biased where relevant documents are rare, but "
                            "the bias differs more between runs and the interval is not "
                            "calibrated: docs/research/calibration.md, section 15)",
               "assisted": "AP itself by the difference (model-assisted) estimator: every "
                           "frame document predicted relevant with the completion model's "
                           "rate fitted on the other topics (cross-fitted in folds), the "
                           "sample's residuals weighted by 1/pi; its variance the design's "
                           "anticipated under that model (on stratified samples; elsewhere "
                           "the design-based estimate with pooled's variance; "
                           "docs/research/calibration.md, section 18)",
               "none": "as computed",
           }),
    Option("unseen", "whether AP~ppi's variance takes in the disagreements between labels "
           "and predictions that a stratum's sample did not find", {
               "prior": "adds R-hat's variance in each stratum whose sample holds none, at the "
                        "topic's disagreement rate per predicted class plus half an event "
                        "(sampleval.estimation.families.ppi_unseen)",
               "none": "the design's variance as computed",
           }),
    Option("interval", "how the confidence interval is built around the estimate", {
        "bias-aware": "z standard errors either side, widened by the estimated bias the "
                      "correction leaves (with a bias correction that estimates it; normal "
                      "otherwise)",
        "normal": "z standard errors either side (the central limit theorem)",
        "hoeffding": "Hoeffding's inequality: exact, whatever the sample",
        "bernstein": "the empirical Bernstein bound (Maurer & Pontil 2009)",
    }),
)}

RENAMED_OPTIONS: dict[str, str] = {"correction": "bias", "var": "variance", "form": "weights"}
"""Old option name -> its name in the vocabulary (read for one release, with a warning)."""
RENAMED_VALUES: dict[tuple[str, str], str] = {
    ("bias", "design"): "by-design", ("weights", "design"): "by-design",
    ("interval", "clt"): "normal"}
"""(option, old value) -> the value's name in the vocabulary (read for one release)."""
DEPRECATED_VALUES: dict[tuple[str, str, str], str] = {
    ("ht", "variance", "jackknife-uncorrected"):
        "the jackknife of AP-hat before its bias correction misses the variance the "
        "correction adds (docs/guide/methods.md, 'Variance of the corrected estimate'); use "
        "variance=jackknife (the default) or variance=linear",
    ("ht", "ap", "paper"):
        "the paper's literal AP-hat weighs each judged document by 1/pi^2 and is biased "
        "upward, above 1 on some samples (docs/research/ht.md, 'ap=paper'); use ap=ours "
        "(the default)"}
"""(family, option, value) -> why it goes and what to use instead: still computed for one
release, with a ``FutureWarning`` (:func:`warn_deprecated`)."""
ORDER = {name: i for i, name in enumerate(VOCABULARY)}


def pick(name: str, values: Iterable[str], default: str) -> Param:
    """A family's declaration of option ``name``: the ``values`` of the vocabulary it allows
    (in the vocabulary's order) and its ``default``; a name or value outside the vocabulary
    is a ValueError, so that no family can coin one."""
    if name not in VOCABULARY:
        raise ValueError(f"option {name!r} is not in the vocabulary (one of "
                         f"{', '.join(VOCABULARY)}): add it to sampleval.estimation.options")
    option = VOCABULARY[name]
    allowed = set(values)
    unknown = allowed - set(option.values)
    if unknown or default not in allowed:
        raise ValueError(f"option {name}: {sorted(unknown) or [default]} not among its "
                         f"values {', '.join(option.values)}")
    return Param(name, str, default, option.about,
                 choices=tuple(v for v in option.values if v in allowed))


RATIO_BIAS = pick("bias", ("taylor", "none"), "taylor")
"""The ``bias`` of R@k, Rprec and nDCG wherever they take one (``~ht``, ``~hh``, ``~ppi``):
the Taylor correction, or none (``correction=`` before)."""


def describe(param: Param) -> str:
    """One line for help texts: what the option chooses, each value the declaration allows
    with its meaning, and its default."""
    option = VOCABULARY[param.name]
    values = "; ".join(option.line(str(v)) for v in param.choices)
    return f"{option.about}: {values} (default {param.default})"


def canonical(name: str, value: Any, where: str) -> tuple[str, Any]:
    """(``name``, ``value``) in the vocabulary's spelling: an old name or value is read as
    its new one, with a ``FutureWarning`` naming the new spelling (``where``: the estimator,
    for the message)."""
    new_name = RENAMED_OPTIONS.get(name.lower(), name)
    new_value = value
    if isinstance(value, str):
        new_value = RENAMED_VALUES.get((new_name, value.strip().lower()), value)
    if (new_name, new_value) != (name, value):
        old, new = f"{name}={value}", f"{new_name}={new_value}"
        warnings.warn(f"{where}: option {old} is now spelled {new}; the old spelling is read "
                      "until the next release (docs/guide/options.md)", FutureWarning,
                      stacklevel=5)
    return new_name, new_value


def warn_deprecated(family: str, name: str, value: Any, where: str) -> None:
    """A ``FutureWarning`` if ``family``'s option ``name`` at ``value`` is deprecated
    (:data:`DEPRECATED_VALUES`; ``where``: the estimator, for the message)."""
    reason = DEPRECATED_VALUES.get((family, name, str(value)))
    if reason is not None:
        warnings.warn(f"{where}: {name}={value} is deprecated and will be removed in the next "
                      f"release: {reason}", FutureWarning, stacklevel=5)


def given_names(text: str, allowed: Iterable[str]) -> set[str]:
    """The options ``text`` (``bias=taylor,var=linear``: an estimator's parenthesised
    options) names, in the vocabulary's spelling, without warning (for ``--explain``)."""
    from sampleval.declare import parse_assignments

    known = list(allowed)
    names = set()
    for key in parse_assignments(text, separator=","):
        key = RENAMED_OPTIONS.get(key.lower(), key)
        names.add(next((k for k in known if k.lower() == key.lower()), key))
    return names


def ordered(names: Iterable[str]) -> list[str]:
    """``names`` in the vocabulary's (canonical) order."""
    return sorted(names, key=lambda n: ORDER.get(n, len(ORDER)))


def unknown_option(given: str, allowed: list[str], where: str) -> UsageError:
    """The error for an option ``where`` does not take, naming those it does (and the one
    meant, also when ``given`` is close to an old name: ``vr``, did you mean variance)."""
    takes = f"takes {', '.join(allowed)}" if allowed else "takes no options"
    meant = {name: name for name in allowed}
    meant |= {old: new for old, new in RENAMED_OPTIONS.items() if new in allowed}
    found = closest(given, list(meant))
    hint = f" (did you mean {meant[found]}?)" if found else ""
    return UsageError(f"{where} has no option {given!r}{hint} ({where} {takes})")


def guide(families: Iterable[EstimatorFamily]) -> str:
    """``docs/guide/options.md``: the vocabulary, the renamed spellings, and per family each
    measure's options with their allowed values and defaults (``families``: the registered
    declarations)."""
    lines = ["# Estimator options", "",
             "<!-- generated from sampleval/estimation/options.py by "
             "`python scripts/options_doc.py`; do not edit by hand -->", "",
             "Options follow an estimator's name in parentheses, ir_measures-style: "
             "`AP~ht(bias=taylor-jackknife,interval=normal)`, `xinfAP(variance=appendix)`. "
             "Every estimate carries its fully resolved name, every option at its value "
             "(the `estimator` column of `sampleval estimate -f tsv`/`json` and of "
             "`sampleval.estimate`); `sampleval estimate --explain` says where each value "
             "came from.", "", "## The vocabulary", ""]
    for option in VOCABULARY.values():
        lines += [f"### `{option.name}`", "", f"{option.about[0].upper()}{option.about[1:]}.",
                  ""]
        lines += [f"- `{value}`: {meaning}" for value, meaning in option.values.items()]
        lines.append("")
    lines += ["## Renamed (the old spelling is read until the next release, with a "
              "FutureWarning)", "", "| old | new |", "|---|---|"]
    lines += [f"| `{old}=` | `{new}=` |" for old, new in RENAMED_OPTIONS.items()]
    lines += [f"| `{name}={old}` | `{name}={new}` |"
              for (name, old), new in RENAMED_VALUES.items()]
    lines += ["", "## Deprecated (computed until the next release, with a FutureWarning)", "",
              "| estimator | option | instead |", "|---|---|---|"]
    lines += [f"| `~{family}` | `{name}={value}` | {reason} |"
              for (family, name, value), reason in DEPRECATED_VALUES.items()]
    lines += ["", "## What each family takes", "",
              "| estimator | option | values | default |", "|---|---|---|---|"]
    for family in families:
        for base, shown in zip(family.bases, family.measure_names(), strict=True):
            for param in family.params(base.name):
                lines.append(f"| `{shown}` | `{param.name}` | "
                             f"{', '.join(map(str, param.choices))} | `{param.default}` |")
    return "\n".join(lines) + "\n"
