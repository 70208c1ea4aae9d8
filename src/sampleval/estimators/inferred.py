"""The inferred measures: trec_eval's infAP and NIST ``sample_eval``'s xinfAP, infNDCG, iP@k,
inum_rel and inum_rel_ret, vectorised over runs.

infAP (Yilmaz & Aslam, CIKM 2006), as trec_eval's ``m_infap.c`` computes it: for a judged
relevant document at rank k (k > 1), with r, n, u the relevant, non-relevant and pooled but
unjudged documents above it,

    E[prec@k] = 1/k + ((k-1)/k) * ((r + n + u)/(k-1)) * ((r + eps) / (r + n + 2 eps)),

eps = 1e-5; documents outside the pool count as non-relevant; infAP = sum / R with R the
judged relevant documents.

xinfAP and infNDCG (Yilmaz, Kanoulas & Aslam, SIGIR 2008, sec. 3-4) as ``sample_eval.pl``
computes them from a stratified sample (one stratum per "category"):

- R-hat = sum_h r_h N_h / n_h (sec. 3: relevant sampled in stratum h, scaled by its rate);
- the precision above a relevant document at rank k, per stratum h with d_h documents of h
  above it, m_h of them sampled and s_h of those relevant:
  ``prec = (1 + sum_h d_h (s_h + 1e-5) / (m_h + 3e-5)) / k`` (the script's smoothing);
- xinfAP = sum_h (N_h / n_h) * (sum of prec over the run's relevant sampled docs in h) / R-hat;
- infNDCG (sec. 4) = sum_h d_h * G_h / m_h / ideal-hat, with G_h the run's discounted gain
  (gain = grade, discount 1/log2(rank+1)) of the sampled documents of h it retrieved and
  d_h, m_h the run's retrieved and retrieved-sampled counts of h over its whole list; the
  ideal DCG uses the estimated number of documents per grade, N_g = sum_h n_{h,g} N_h / n_h,
  each rounded as ``int(N_g + 0.5)``, at most 1000 ranks (the script's maxResultSize, with
  its quirk: one more term per grade past rank 1000 — reproduced);
- inum_rel_ret at rank k = sum_h d_h (s_h + 1e-5)/(m_h + 3e-5) over the top k (inclusive);
  iP@k = that at rank k, over k (the run's last rank's value when it retrieved fewer);
  inum_rel = R-hat.

Where the paper and the script differ, the script wins: the smoothing constants above, the
run-level (not frame-level) stratum sizes in infNDCG, and the rounding of N_g. Runs are read
to depth 1000 as the script does; documents outside the frame are ignored by every sum.
Relevance is ``label >= level`` (the script's ``rel > 0`` for level 1).

Variances (for intervals): the script reports none. Both infAP and xinfAP are ratios of two
stratified estimates, T/R with T = sum_h (N_h/n_h) sum_{sampled d in h} y_d (y_d: the
estimated precision at d when d is relevant and retrieved, else 0) and R = sum_h (N_h/n_h)
sum x_d (x_d: d relevant); infAP is the one-stratum case (its N/n cancels). Following
Yilmaz, Kanoulas & Aslam (2008, sec. 2: sampling variance plus the variance of each
precision estimate), the variance is the stratified ratio estimator's linearisation
(Cochran, Sampling Techniques, 1977, sec. 6.11),

    Var ~ (1/R^2) [ sum_h N_h^2 (1 - n_h/N_h) s_h^2(y - AP x) / n_h
                    + sum_{d relevant, retrieved} (N_h/n_h)^2 Var(prec_d) ],

with Var(prec_d) from the hypergeometric variance of each in-stratum precision above d.
This is our derivation (the paper's appendix was not at hand), checked for coverage by
simulation (see the tests).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sampleval.core.sample import Sample
from sampleval.estimators._kernels import nist_pass, ratio_variance_sums, srs_variance
from sampleval.estimators.base import TopicView, summarise
from sampleval.estimators.family import Base, EstimatorFamily, register_family
from sampleval.estimators.imputation import infap_share, nist_share
from sampleval.estimators.names import EstimateSpec

INFAP_EPSILON = 1e-5
NIST_RELEVANT_EPSILON = 1e-5
NIST_SAMPLED_EPSILON = 3e-5
NIST_MAX_RESULTS = 1000


# -- infAP (trec_eval) -------------------------------------------------------------------------

def infap_topic(view: TopicView, level: float) -> tuple[np.ndarray, np.ndarray]:
    """infAP and its variance for every run on one topic (trec_eval's ``m_infap.c``)."""
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
    big_r = float(np.count_nonzero(view.sample.judged & (view.sample.labels >= level)))
    value = np.where(rel, prec, 0.0).sum(axis=1) / big_r if big_r else np.zeros(view.n_runs)
    # variance: one stratum, infAP's uniform sample of the pool (module docstring)
    var_prec = (r_above + n_above + u_above) ** 2 * srs_variance(
        density, r_above + n_above, r_above + n_above + u_above) / rank**2
    ts = view.sample
    x = (ts.judged & (ts.labels >= level)).astype(np.float64)
    strata = np.where(ts.judged, 0, -1)
    variance = _ratio_variance(_at_frame(view, np.where(rel, prec, 0.0)),
                               _at_frame(view, np.where(rel, var_prec, 0.0)),
                               x, strata, np.array([len(ts.docnos)]),
                               np.array([np.count_nonzero(ts.judged)]), value)
    return value, variance


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

def nist_topic(view: TopicView, level: float, parts: frozenset[str]) -> dict[str, np.ndarray]:
    """sample_eval's per-topic quantities for every run (module docstring). ``parts`` says
    which to compute: ``xinfAP``, ``variance`` (xinfAP's), ``infNDCG``, ``rel_ret`` (inum_rel_ret
    at every rank, for iP@k); ``inum_rel`` always comes."""
    frame_at_rank = np.ascontiguousarray(view.frame_at_rank[:, :NIST_MAX_RESULTS])
    n_runs, width = frame_at_rank.shape
    ts = view.sample
    n_strata = int(ts.stratum.max(initial=-1)) + 1
    sizes, n_sampled = ts.strata()
    relevant = ts.judged & (ts.labels >= level)
    scale = np.divide(sizes, n_sampled, out=np.zeros(n_strata), where=n_sampled > 0)
    big_r = float((np.bincount(ts.stratum[relevant], minlength=n_strata) * scale).sum())
    out = {"inum_rel": np.full(n_runs, big_r)}
    judged = ts.judged
    sap, gain, docs, smp, y, own, rel_ret = nist_pass(
        frame_at_rank, ts.stratum, ts.labels, np.where(judged, np.cumsum(judged) - 1, -1),
        float(level), n_strata, np.log2(np.arange(1, width + 1) + 1), "variance" in parts,
        "rel_ret" in parts)
    if parts & {"xinfAP", "variance"}:
        out["xinfAP"] = (sap * scale).sum(axis=1) / big_r if big_r else np.zeros(n_runs)
        if "variance" in parts:  # over the sampled documents only: the others add nothing
            out["xinfAP_var"] = _ratio_variance(
                y, own, relevant[judged].astype(np.float64), ts.stratum[judged], sizes,
                n_sampled, out["xinfAP"])
    if "infNDCG" in parts:
        dcg = np.divide(docs * gain, smp, out=np.zeros_like(gain), where=smp > 0).sum(axis=1)
        ideal = _nist_ideal_dcg(view, scale)
        out["infNDCG"] = dcg / ideal if ideal else np.zeros(n_runs)
    if "rel_ret" in parts:
        out["rel_ret"] = rel_ret
    return out


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
    """infAP for every run and topic, with normal intervals (see ``infap_topic``)."""
    results = [infap_topic(v, level) for v in views]
    values = np.array([r[0] for r in results]).reshape(len(views), len(run_names))
    variances = np.array([r[1] for r in results]).reshape(len(views), len(run_names))
    return pd.concat([summarise(run_names, views, spec.name, values, variances, ci)
                      for spec in specs], ignore_index=True)


def estimate_nist(run_names: tuple[str, ...], views: list[TopicView], sample: Sample,
                  specs: list[EstimateSpec], level: float, ci: float) -> pd.DataFrame:
    """xinfAP, infNDCG, iP@k, inum_rel, inum_rel_ret as sample_eval computes them (each
    topic's quantities computed once for all the requested measures)."""
    wanted = {"AP": ("xinfAP", "variance"), "nDCG": ("infNDCG",), "P": ("rel_ret",),
              "NumRelRet": ("rel_ret",), "NumRel": ()}
    parts = frozenset(p for spec in specs for p in wanted[spec.base])
    per_topic = [nist_topic(v, level, parts) for v in views]
    shape = (len(views), len(run_names))

    def stack(rows: list[np.ndarray]) -> np.ndarray:
        return np.array(rows).reshape(shape)

    frames = []
    for spec in specs:
        variances = None
        if spec.base == "AP":
            values = stack([t["xinfAP"] for t in per_topic])
            variances = stack([t["xinfAP_var"] for t in per_topic])
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
    reference="Yilmaz & Aslam, CIKM 2006; trec_eval m_infap.c",
    bases=(Base("AP", alias="infAP"),),
    designs={"stratified": 3, "census": 3},
    compute=estimate_trec_eval, imputed=infap_share))

register_family(EstimatorFamily(
    name="nist", title="NIST sample_eval's xinfAP, infNDCG, iP@k, inum_rel, inum_rel_ret",
    reference="Yilmaz, Kanoulas & Aslam, SIGIR 2008, sec. 3-4; NIST sample_eval.pl",
    bases=(Base("AP", alias="xinfAP"), Base("nDCG", alias="infNDCG"),
           Base("P", "required", alias="iP", penalty=5),
           Base("NumRel", alias="inum_rel", penalty=5),
           Base("NumRelRet", alias="inum_rel_ret", penalty=5)),
    designs={"stratified": 1, "census": 1},
    compute=estimate_nist, score_type=np.float64, imputed=nist_share))
