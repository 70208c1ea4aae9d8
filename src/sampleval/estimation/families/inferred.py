"""The inferred measures: trec_eval's infAP and NIST ``sample_eval``'s xinfAP, infNDCG, iP@k,
inum_rel and inum_rel_ret, vectorised over runs.

infAP (Yilmaz & Aslam, CIKM 2006) as trec_eval's ``m_infap.c`` computes it; xinfAP and infNDCG
(Yilmaz, Kanoulas & Aslam, SIGIR 2008, sec. 3-4) as ``sample_eval.pl`` computes them from a
stratified sample (where the paper and the script differ, the script wins). Relevance is
``label >= level``; documents outside the frame are ignored. Options: ``variance``
(``jackknife``, the default: the stratified delete-one jackknife, Wolter 2007, sec. 4.5;
``appendix``: the paper's Appendix, extended to xinfAP; ``linear``: Cochran 1977, sec. 6.11),
``bias`` (``none``, the default: trec_eval's and sample_eval's numbers; ``jackknife``) and
``few`` (:func:`~sampleval.estimation.result.few_relevant_variance`). The formulas, the
script's quirks and the variances: docs/guide/estimators.md#inferred-measures; their coverage:
docs/research/methods.md. Defaults: :mod:`sampleval.estimation.defaults`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sampleval.core.sample import Sample
from sampleval.estimation.engine.replicates import strata_jackknife
from sampleval.estimation.engine.views import TopicView
from sampleval.estimation.families._inferred_kernels import (
    INFAP_EPSILON,
    NIST_MAX_RESULTS,
    VAR_APPENDIX,
    VAR_LINEAR,
    VAR_NONE,
    infap_replicates,
    nist_pass,
    nist_replicates,
    ratio_variance_sums,
    srs_variance,
)
from sampleval.estimation.family import Base, EstimatorFamily, register_family
from sampleval.estimation.imputation import infap_share, nist_share
from sampleval.estimation.options import pick
from sampleval.estimation.result import FEW_OPTION, few_floor, summarise
from sampleval.estimation.spec import EstimateSpec

VARIANCES = ("jackknife", "appendix", "linear")
VAR_OPTION = pick("variance", VARIANCES, "jackknife")
BIAS_OPTION = pick("bias", ("jackknife", "none"), "none")


# -- infAP (trec_eval) -------------------------------------------------------------------------

def infap_topic(view: TopicView, level: float, var: str = VAR_OPTION.default,
                bias: str = BIAS_OPTION.default) -> tuple[np.ndarray, np.ndarray]:
    """infAP (trec_eval's ``m_infap.c``) and its variance (``var``: module docstring) for
    every run on one topic; ``bias=jackknife``: less the jackknife's bias estimate."""
    frame_idx = view.frame_at_rank
    in_frame = frame_idx >= 0
    labels = view.labels_at_rank()
    judged = ~np.isnan(labels)
    with np.errstate(invalid="ignore"):
        rel = judged & (labels >= level)
    nonrel = judged & ~rel
    unjudged = in_frame & ~judged
    r_above = np.cumsum(rel, axis=1) - rel
    n_above = np.cumsum(nonrel, axis=1) - nonrel
    u_above = np.cumsum(unjudged, axis=1) - unjudged
    rank = np.arange(1, labels.shape[1] + 1)
    density = (r_above + INFAP_EPSILON) / (r_above + n_above + 2 * INFAP_EPSILON)
    prec = (1.0 + (r_above + n_above + u_above) * density) / rank
    ts = view.sample
    relevant = ts.judged & (ts.labels >= level)
    big_r = float(np.count_nonzero(relevant))
    value = np.where(rel, prec, 0.0).sum(axis=1) / big_r if big_r else np.zeros(view.n_runs)
    size, n_judged = len(ts.docnos), int(np.count_nonzero(ts.judged))
    shift = np.zeros(view.n_runs)  # the bias estimate taken off the value
    if var == "jackknife" or bias == "jackknife":
        judged_index = np.where(ts.judged, np.cumsum(ts.judged) - 1, -1)
        _, rep = infap_replicates(np.ascontiguousarray(frame_idx), ts.judged, relevant,
                                  judged_index, INFAP_EPSILON)
        left = big_r - relevant[ts.judged]
        replicates = np.divide(rep, left, out=np.zeros_like(rep), where=left > 0)
        design = (np.zeros(n_judged, dtype=np.int64), np.array([size]), np.array([n_judged]))
        variance, jack_bias = _jackknife(replicates, *design, value)
        if bias == "jackknife":
            shift = jack_bias
        if var == "jackknife":
            return value - shift, variance
    if var == "appendix":
        above = r_above + n_above + u_above
        var_prec = (above / rank) ** 2 * _appendix_proportion(r_above, r_above + n_above,
                                                              above)
        own = np.where(rel, var_prec, 0.0)
        later = np.where(rel, rank * var_prec, 0.0)
        cov = (np.where(rel, (np.cumsum(later, axis=1) - later) / rank, 0.0)).sum(axis=1)
        pc = _at_frame(view, np.where(rel, prec, 0.0))[:, relevant]
        spread = _appendix_spread(pc, value)
        within = (own.sum(axis=1) + 2.0 * cov) / big_r**2 if big_r else 0.0
        return value - shift, (1.0 - n_judged / max(size, 1)) * spread + within
    # linear: one stratum, infAP's uniform sample of the pool (module docstring)
    var_prec = (r_above + n_above + u_above) ** 2 * srs_variance(
        density, r_above + n_above, r_above + n_above + u_above) / rank**2
    x = relevant.astype(np.float64)
    strata = np.where(ts.judged, 0, -1)
    variance = _ratio_variance(_at_frame(view, np.where(rel, prec, 0.0)),
                               _at_frame(view, np.where(rel, var_prec, 0.0)),
                               x, strata, np.array([size]), np.array([n_judged]), value)
    return value - shift, variance


def _appendix_proportion(s: np.ndarray, m: np.ndarray, big_d: np.ndarray) -> np.ndarray:
    """The Appendix's variance of a proportion s/m of m drawn from big_d, elementwise
    (``_kernels.appendix_variance``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = s / m
        value = p * (1.0 - p) / m * (1.0 - (m - 1.0) / (big_d - 1.0))
    value = np.where(m == 0, 0.25, value)
    return np.where((big_d <= 0) | (m >= big_d), 0.0, value)


def _appendix_spread(pc: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    """sigma^2 / r, the Appendix's first component without its (1 - p): the spread of the
    precisions ``pc`` (``[n_runs, r]``, at the sampled relevant documents) around the
    estimate, sum (PC_k - AP)^2 / (r - 1) / r; 0 for r < 2."""
    r = pc.shape[1]
    if r < 2:
        return np.zeros(pc.shape[0])
    return ((pc - estimate[:, None]) ** 2).sum(axis=1) / (r - 1) / r


def _jackknife(replicates: np.ndarray, strata: np.ndarray, sizes: np.ndarray,
               n_sampled: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stratified delete-one jackknife's variance and bias estimate per run
    (:func:`~sampleval.estimation.engine.replicates.strata_jackknife`), from
    ``replicates`` ``[n_runs, n_units]`` (the estimate without each judged document of a
    stratum, ``strata`` its stratum), N_h ``sizes`` and n_h ``n_sampled``."""
    kept = strata >= 0
    return strata_jackknife(replicates[:, kept], np.zeros((len(replicates), len(sizes))),
                                value, strata[kept], sizes, n_sampled.astype(np.float64))


def _at_frame(view: TopicView, at_rank: np.ndarray) -> np.ndarray:
    """``[n_runs, n_frame]``: a ``[n_runs, width]`` per-rank quantity moved to the frame
    documents it belongs to (0 for documents a run did not retrieve)."""
    n_frame = len(view.sample.docnos)
    out = np.zeros((view.n_runs, n_frame + 1))  # last column: padding and outside the frame
    frame_idx = np.where(view.frame_at_rank >= 0, view.frame_at_rank, n_frame)
    out[np.arange(view.n_runs)[:, None], frame_idx] = at_rank
    return out[:, :n_frame]


def _ratio_variance(y: np.ndarray, own: np.ndarray, x: np.ndarray, strata: np.ndarray,
                    sizes: np.ndarray, n_sampled: np.ndarray, estimate: np.ndarray
                    ) -> np.ndarray:
    """Linearised variance of the stratified ratio T/R (module docstring), per run.

    ``y``/``own``: ``[n_runs, n_docs]`` y_d and Var(prec_d) per frame document (all of them,
    or only the sampled ones); ``x``: x_d per document; ``strata``: stratum code per document
    (-1: not sampled);
    ``sizes``/``n_sampled``: N_h, n_h; ``estimate``: the ratio, per run.
    """
    weight = np.divide(sizes, n_sampled, out=np.zeros(len(sizes)), where=n_sampled > 0)
    big_r = float(sum(weight[h] * x[strata == h].sum() for h in range(len(sizes))))
    if big_r == 0:
        return np.zeros(len(y))
    spread_coef = np.array([float(big_n) ** 2 * (1 - int(n) / float(big_n)) if n > 1 else np.nan
                            for big_n, n in zip(sizes, n_sampled, strict=True)])
    own_coef = np.array([w**2 for w in weight])
    return ratio_variance_sums(y, own, x, strata, estimate, spread_coef, own_coef) / big_r**2


# -- xinfAP, infNDCG, iP@k, inum_rel (NIST sample_eval) -------------------------------------

def nist_topic(view: TopicView, level: float, parts: frozenset[str],
               var: str = VAR_OPTION.default, bias: str = "none") -> dict[str, np.ndarray]:
    """sample_eval's per-topic quantities for every run (module docstring). ``parts`` says
    which to compute: ``xinfAP``, ``variance`` (xinfAP's, by ``var``), ``infNDCG``,
    ``rel_ret`` (inum_rel_ret at every rank, for iP@k); ``inum_rel`` always comes;
    ``bias=jackknife`` adds ``xinfAP_bias``, the jackknife's bias estimate."""
    frame_at_rank = np.ascontiguousarray(view.frame_at_rank[:, :NIST_MAX_RESULTS])
    n_runs, width = frame_at_rank.shape
    ts = view.sample
    n_strata = int(ts.stratum.max(initial=-1)) + 1
    sizes, n_sampled = ts.strata()
    relevant = ts.judged & (ts.labels >= level)
    scale = np.divide(sizes, n_sampled, out=np.zeros(n_strata), where=n_sampled > 0)
    r_sampled = np.bincount(ts.stratum[relevant], minlength=n_strata)
    big_r = float((r_sampled * scale).sum())
    out = {"inum_rel": np.full(n_runs, big_r)}
    judged = ts.judged
    sampled_index = np.where(judged, np.cumsum(judged) - 1, -1)
    with_var = "variance" in parts
    kind = {"linear": VAR_LINEAR, "appendix": VAR_APPENDIX}.get(var, VAR_NONE) if with_var \
        else VAR_NONE
    coef = scale / big_r if big_r else np.zeros(n_strata)
    sap, gain, docs, smp, y, own, cov, rel_ret = nist_pass(
        frame_at_rank, ts.stratum, ts.labels, sampled_index, float(level), n_strata,
        np.log2(np.arange(1, width + 1) + 1), kind, coef, "rel_ret" in parts)
    if parts & {"xinfAP", "variance"}:
        out["xinfAP"] = (sap * scale).sum(axis=1) / big_r if big_r else np.zeros(n_runs)
    if (with_var and var == "jackknife") or bias == "jackknife":
        replicates = _nist_replicates(view, frame_at_rank, level, sizes, n_sampled,
                                      r_sampled, sampled_index)
        design = (ts.stratum[judged], sizes, n_sampled)
        variance, jack_bias = _jackknife(replicates, *design, out["xinfAP"])
        if bias == "jackknife":
            out["xinfAP_bias"] = jack_bias
    if with_var:  # over the sampled documents only: the others add nothing
        strata = ts.stratum[judged]
        if var == "jackknife":
            out["xinfAP_var"] = variance
        elif var == "appendix":
            is_rel = relevant[judged]
            share = r_sampled * scale / big_r if big_r else np.zeros(n_strata)
            spread = np.zeros(n_runs)
            for h in range(n_strata):
                in_h = is_rel & (strata == h)
                spread += share[h] ** 2 * (1.0 - n_sampled[h] / sizes[h]) * _appendix_spread(
                    y[:, in_h], out["xinfAP"])
            c = coef[strata]
            out["xinfAP_var"] = spread + (own * c**2).sum(axis=1) + 2.0 * cov
        else:
            out["xinfAP_var"] = _ratio_variance(
                y, own, relevant[judged].astype(np.float64), strata, sizes, n_sampled,
                out["xinfAP"])
    if "infNDCG" in parts:
        dcg = np.divide(docs * gain, smp, out=np.zeros_like(gain), where=smp > 0).sum(axis=1)
        ideal = _nist_ideal_dcg(view, scale)
        out["infNDCG"] = dcg / ideal if ideal else np.zeros(n_runs)
    if "rel_ret" in parts:
        out["rel_ret"] = rel_ret
    return out


def _nist_replicates(view: TopicView, frame_at_rank: np.ndarray, level: float,
                     sizes: np.ndarray, n_sampled: np.ndarray, r_sampled: np.ndarray,
                     sampled_index: np.ndarray) -> np.ndarray:
    """xinfAP's stratified delete-one jackknife replicates (module docstring), ``[n_runs,
    sampled documents]``."""
    ts = view.sample
    scale = np.divide(sizes, n_sampled, out=np.zeros(len(sizes)), where=n_sampled > 0)
    total, own = nist_replicates(frame_at_rank, ts.stratum, ts.labels, sampled_index,
                                 float(level), scale)
    strata = ts.stratum[ts.judged]
    is_rel = ts.labels[ts.judged] >= level
    # each replicate's design: one fewer sampled (and sampled relevant) in the unit's stratum
    left = n_sampled[strata] - 1.0
    new_scale = np.divide(sizes[strata], left, out=np.zeros(len(strata)), where=left > 0)
    change = new_scale - scale[strata]
    r_hat = (r_sampled * scale).sum() + change * r_sampled[strata] - new_scale * is_rel
    numerator = total + change * own
    return np.divide(numerator, r_hat, out=np.zeros_like(numerator), where=r_hat > 0)


def _nist_ideal_dcg(view: TopicView, scale: np.ndarray) -> float:
    """The ideal DCG from estimated per-grade counts, as sample_eval builds it."""
    ts = view.sample
    positive = ts.judged & (ts.labels > 0)
    grades = np.unique(ts.labels[positive])
    ideal, start = 0.0, 0
    for grade in grades[::-1]:
        of_grade = positive & (ts.labels == grade)
        estimate = float((np.bincount(ts.stratum[of_grade], minlength=len(scale)) * scale).sum())
        count = int(estimate + 0.5)
        last = min(start + count, max(start + 1, NIST_MAX_RESULTS))
        ranks = np.arange(start + 1, last + 1)
        ideal += float((grade / np.log2(ranks + 1)).sum())
        start += count
    return ideal


def _rel_ret_at_end(rel_ret: np.ndarray) -> np.ndarray:
    """inum_rel_ret: the estimate at the run's last rank."""
    return rel_ret[:, -1] if rel_ret.shape[1] else np.zeros(rel_ret.shape[0])


def precision_at(rel_ret: np.ndarray, cutoff: int) -> np.ndarray:
    """iP@k from the inum_rel_ret-by-rank matrix (the last rank's value for shorter runs)."""
    if rel_ret.shape[1] == 0:
        return np.zeros(rel_ret.shape[0])
    return rel_ret[:, min(cutoff, rel_ret.shape[1]) - 1] / cutoff


# -- families --------------------------------------------------------------------------------

def estimate_trec_eval(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                       specs: list[EstimateSpec], level: float, ci: float) -> pd.DataFrame:
    """infAP for every run and topic, with normal intervals from the variance ``var`` (see
    ``infap_topic``)."""
    frames = []
    for spec in specs:
        results = [infap_topic(v, level, spec.option("variance"), spec.option("bias"))
                   for v in views]
        values = np.array([r[0] for r in results]).reshape(len(views), len(run_names))
        variances = few_floor(values, np.array([r[1] for r in results]).reshape(
            len(views), len(run_names)), views, level, spec.option("few"))
        frames.append(summarise(run_names, views, spec.name, values, variances, ci))
    return pd.concat(frames, ignore_index=True)


def estimate_nist(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                  specs: list[EstimateSpec], level: float, ci: float) -> pd.DataFrame:
    """xinfAP, infNDCG, iP@k, inum_rel, inum_rel_ret as sample_eval computes them (each
    topic's quantities computed once for all the requested measures; xinfAP's variance once
    per requested ``var``)."""
    wanted = {"AP": ("xinfAP", "variance"), "nDCG": ("infNDCG",), "P": ("rel_ret",),
              "NumRelRet": ("rel_ret",), "NumRel": ()}
    parts = frozenset(p for spec in specs for p in wanted[spec.base])
    variants = list(dict.fromkeys(spec.option("variance") for spec in specs if spec.base == "AP"))
    first = variants[0] if variants else VAR_OPTION.default
    biased = any(spec.option("bias") == "jackknife" for spec in specs if spec.base == "AP")
    per_topic = [nist_topic(v, level, parts, first, "jackknife" if biased else "none")
                 for v in views]
    shape = (len(views), len(run_names))
    var_of = {first: [t["xinfAP_var"] for t in per_topic]} if variants else {}
    for var in variants[1:]:
        var_of[var] = [nist_topic(v, level, frozenset({"variance"}), var)["xinfAP_var"]
                       for v in views]

    def stack(rows: list[np.ndarray]) -> np.ndarray:
        return np.array(rows).reshape(shape)

    frames = []
    for spec in specs:
        variances = None
        if spec.base == "AP":
            values = stack([t["xinfAP"] for t in per_topic])
            if spec.option("bias") == "jackknife":
                values = values - stack([t["xinfAP_bias"] for t in per_topic])
            variances = few_floor(values, stack(var_of[spec.option("variance")]), views, level,
                                 spec.option("few"))
        elif spec.base == "nDCG":
            values = stack([t["infNDCG"] for t in per_topic])
        elif spec.base == "P":
            values = stack([precision_at(t["rel_ret"], spec.cutoff or 1) for t in per_topic])
        elif spec.base == "NumRel":
            values = stack([t["inum_rel"] for t in per_topic])
        else:
            values = stack([_rel_ret_at_end(t["rel_ret"]) for t in per_topic])
        frames.append(summarise(run_names, views, spec.name, values, variances, ci))
    return pd.concat(frames, ignore_index=True)


register_family(EstimatorFamily(
    name="trec_eval", title="trec_eval's infAP (uniform sample of the pool)",
    reference="Yilmaz & Aslam, CIKM 2006; trec_eval m_infap.c; variances: "
              "docs/guide/estimators.md#inferred-measures",
    bases=(Base("AP", alias="infAP", options=("variance", "bias", "few")),),
    requires=("has_strata",),
    compute=estimate_trec_eval, options=(VAR_OPTION, BIAS_OPTION, FEW_OPTION),
    imputed=infap_share))

register_family(EstimatorFamily(
    name="nist", title="NIST sample_eval's xinfAP, infNDCG, iP@k, inum_rel, inum_rel_ret",
    reference="Yilmaz, Kanoulas & Aslam, SIGIR 2008, sec. 3-4 and Appendix; NIST "
              "sample_eval.pl",
    bases=(Base("AP", alias="xinfAP", options=("variance", "bias", "few")),
           Base("nDCG", alias="infNDCG"),
           Base("P", "required", alias="iP"),
           Base("NumRel", alias="inum_rel"),
           Base("NumRelRet", alias="inum_rel_ret")),
    requires=("has_strata",),
    compute=estimate_nist, score_type=np.float64,
    options=(VAR_OPTION, BIAS_OPTION, FEW_OPTION), imputed=nist_share))
