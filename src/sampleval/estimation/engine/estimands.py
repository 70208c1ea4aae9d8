"""The engine's array-level Horvitz-Thompson AP estimator, a ratio of pair totals over a
topic's judged documents with its linearised (Taylor) variance and first-order ratio-bias
correction (Li & Kanoulas, CIKM 2017, sec. 3; Horvitz & Thompson, JASA 1952; Sarndal,
Swensson & Wretman, *Model Assisted Survey Sampling*, 1992, sec. 5.5 and 7.3; Cochran,
*Sampling Techniques*, 1977, ch. 6), and the helpers the engine's ratios share. ``~ht`` uses
it for ``ap=paper``; the jackknives over the same sums are :mod:`.replicates`'.

Arguments: the judged documents' values ``y`` (``[..., m]``; leading dimensions, e.g. Monte
Carlo trials, are allowed; a document with y = 0 contributes nothing), their ``pi``
(``[m]``) and ``pi_joint`` (``[m, m]``), and the ``[n_runs, m]`` rank matrix (1-based, 0
where a run did not retrieve the document); results ``HTEstimate(value, variance)``, both
``[..., n_runs]``; with ``pairs`` (``[P, 2]`` run indices), each pair's difference and the
variance of that difference. The variance is the HT variance estimator sum_{i,j in S}
(pi_ij - pi_i pi_j)/pi_ij (z_i/pi_i)(z_j/pi_j), pi_ii = pi_i (it can be negative; the rows
clip it at 0); for a ratio the HT variance of the residuals u_i = (a_i - Q-hat b_i)/B-hat.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from sampleval.estimation.engine.kernels import ap_contributions, quadratic

TAKE_CORRECTION = ("R", "Rprec", "nDCG")
"""The ratios besides AP that take the ``bias`` option's taylor or none (their core's ``taylor``)."""


class HTEstimate(NamedTuple):
    """An estimate per run and its estimated variance, both ``[..., n_runs]``."""

    value: np.ndarray
    variance: np.ndarray


class _RunDocs(NamedTuple):
    """Each run's retrieved judged documents (within the cutoff), compacted: ``doc``
    ``[n_runs, K]`` indexes the judged documents, ``rank`` ``[n_runs, K, 1]`` holds their
    1-based ranks (0: padding).

    Inside the core, per-run values are ``[n_runs, K, B]``: the leading (batch) dimensions of
    ``y`` flattened into B columns, so that per-run matrices multiply all trials at once.
    """

    doc: np.ndarray
    rank: np.ndarray


# -- the array-level core ------------------------------------------------------------------

class APTerms(NamedTuple):
    """AP-hat's parts per run (batch ``B`` of y flattened, as in the core): ``num`` ``[n_runs,
    B]`` the pair total, ``contribution`` ``[n_runs, K, B]`` each retrieved judged document's
    share of it (its row and column of pairs, x_k (prec-hat_k + below_k)), ``docs`` the
    run's documents."""

    num: np.ndarray
    contribution: np.ndarray
    docs: _RunDocs


def ap_terms(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
             cutoff: int | None = None, paper: bool = False) -> APTerms:
    """AP-hat's numerator sum_{i, j in S, rank_j <= rank_i} y_i y_j / (rank_i pi_ij) and each
    document's share of it (:func:`average_precision`); ``paper``: the pair weights of the
    paper's PC(r(i)), 1/(pi_i pi_j), the document itself at 1/pi_i^2."""
    docs = _run_docs(ranks, cutoff)
    contribution, num = ap_contributions(_columns(y, docs), docs.rank[..., 0], docs.doc, pi,
                                         pi_joint, paper)
    return APTerms(num, contribution, docs)


def average_precision(y: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray, ranks: np.ndarray,
                      cutoff: int | None = None, paper: bool = False,
                      taylor: bool = False, pairs: np.ndarray | None = None) -> HTEstimate:
    """AP-hat = (1/R-hat) sum_{i in S} (y_i/pi_i) prec-hat_i (Li & Kanoulas 2017, sec. 3; the
    shape of statAP, Pavlu & Aslam), for the documents i the run retrieved (within ``cutoff``),
    with prec-hat_i = (1/rank_i) (y_i + sum_{j in S, rank_j < rank_i} y_j pi_i/pi_ij).

    AP = (1/R) sum_i sum_j x_ij with x_ij = y_i y_j 1{rank_j <= rank_i}/rank_i is a sum over
    pairs, estimated by weighting pair (i, j) by 1/pi_ij (1/pi_i when j = i); factoring out
    1/pi_i gives the form above. On a census every pi is 1 and prec-hat_i is the precision at
    rank_i. ``paper``: the paper's literal AP-hat, whose PC(r(i)) = (1/r(i)) sum_{j in S,
    r(j) <= r(i)} y_j/pi_j weights pair (i, j) by 1/(pi_i pi_j) and document i itself by
    1/pi_i^2 (biased upward: E[1{i in S}/pi_i^2] = 1/pi_i). Linearised variance: the pair sum
    moves with each document k's weight through its row and its column, e_k = y_k (prec-hat_k
    + sum_{i in S below k} (y_i/rank_i) pi_k/pi_ik); u_k = (e_k - AP-hat y_k)/R-hat.
    ``taylor``: less the ratio's estimated first-order bias (:func:`_ratio`).
    """
    terms = ap_terms(y, pi, pi_joint, ranks, cutoff, paper)
    return _ratio(terms.num, terms.contribution * pi[terms.docs.doc][:, :, None], terms.docs,
                  y, (y / pi).sum(axis=-1), pi, pi_joint, taylor, pairs)


# -- helpers of the core --------------------------------------------------------------------

def rank_cut(r_hat: np.ndarray) -> np.ndarray:
    """floor(R-hat) for Rprec's cut, an R-hat within 1e-9 below a whole number taken as it:
    the rounding of the estimate's sums must not move the cut a rank (with predictions equal
    to the labels, ``~ppi``'s R-hat is 8 - 1e-15 where R is 8)."""
    return np.floor(r_hat + 1e-9)


def _flat(values: np.ndarray) -> np.ndarray:
    """``[..., m]`` as ``[B, m]``."""
    shape = np.shape(values)
    return np.reshape(values, (math.prod(shape[:-1]), shape[-1]))


def _shaped(value: np.ndarray, variance: np.ndarray, like: np.ndarray) -> HTEstimate:
    """``[n_runs, B]`` results as ``[..., n_runs]``, the batch shape of ``like`` (``[..., m]``)."""
    batch = np.shape(like)[:-1]
    return HTEstimate(value.T.reshape(*batch, -1), variance.T.reshape(*batch, -1))


def _delta(pi: np.ndarray, pi_joint: np.ndarray) -> np.ndarray:
    """The HT variance weights (pi_ij - pi_i pi_j) / pi_ij (1 - pi_i on the diagonal)."""
    return 1.0 - np.outer(pi, pi) / pi_joint


def _run_docs(ranks: np.ndarray, cutoff: int | None) -> _RunDocs:
    """Compact each run's row to the judged documents it retrieved within the cutoff."""
    kept = ranks > 0 if cutoff is None else (ranks > 0) & (ranks <= cutoff)
    width = int(kept.sum(axis=1).max(initial=0))
    order = np.argsort(~kept, axis=1, kind="stable")[:, :width]
    rank = np.where(np.take_along_axis(kept, order, axis=1),
                    np.take_along_axis(ranks, order, axis=1), 0)
    return _RunDocs(order, rank[:, :, None])


def _columns(values: np.ndarray, docs: _RunDocs) -> np.ndarray:
    """``[..., m]`` per-document values at each run's documents, ``[n_runs, K, B]`` (0 at
    padding)."""
    return np.where(docs.rank > 0, _flat(values).T[docs.doc], 0.0)


def _quadratic(x: np.ndarray, docs: _RunDocs, delta: np.ndarray) -> np.ndarray:
    """sum_{k,l} x_k delta_kl x_l over each run's documents: ``[n_runs, B]``."""
    return quadratic(np.ascontiguousarray(x, dtype=np.float64), docs.doc, delta)


def _contrast(values: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Per pair (a, b) of run indices (``pairs`` ``[P, 2]``), ``values[a] - values[b]``
    along the first (run) axis."""
    return values[pairs[:, 0]] - values[pairs[:, 1]]


def _on_frame(x: np.ndarray, docs: _RunDocs, m: int) -> np.ndarray:
    """Per-run values on each run's documents (``[n_runs, K, B]``) spread over the judged
    documents, ``[n_runs, m, B]`` (0 where the run did not retrieve the document), so that
    two runs' values line up document by document."""
    out = np.zeros((x.shape[0], m, x.shape[2]))
    runs = np.repeat(np.arange(x.shape[0]), x.shape[1])
    np.add.at(out, (runs, docs.doc.reshape(-1)), np.where(docs.rank > 0, x, 0.0).reshape(
        runs.size, x.shape[2]))
    return out


def _frame_quadratic(x: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """sum_{k,l} x_k delta_kl x_l for ``x`` ``[P, m, B]`` on the judged documents:
    ``[P, B]``."""
    return np.einsum("pkb,kl,plb->pb", x, delta, x, optimize=True)


def _ratio(numerator: np.ndarray, a: np.ndarray, docs: _RunDocs, b: np.ndarray,
           denominator: np.ndarray, pi: np.ndarray, pi_joint: np.ndarray,
           taylor: bool = False, pairs: np.ndarray | None = None) -> HTEstimate:
    """Q-hat = numerator / denominator per run, with the linearised variance.

    ``a`` (``[n_runs, K, B]``, on each run's documents) and ``b`` (``[..., m]``) are each
    judged document's linearised contributions to the numerator and the denominator:
    u_i = (a_i - Q-hat b_i) / B-hat, so V-hat(Q-hat) = (a'Da - 2 Q-hat a'Db + Q-hat^2 b'Db) /
    B-hat^2 on x_i = z_i/pi_i, D the HT weights. ``taylor``: Q-hat less its estimated
    first-order bias (Q-hat b'Db - a'Db)/B-hat^2 = (Q-hat V-hat(B-hat) - C-hat(A-hat,
    B-hat))/B-hat^2, the second-order Taylor bias of a ratio of two unbiased estimates
    (Cochran, Sampling Techniques, 1977, ch. 6; Sarndal, Swensson & Wretman 1992, sec. 7.3),
    with the design's HT (co)variance estimators.

    ``pairs``: per pair (a, b) of runs, Q-hat_a - Q-hat_b over the shared denominator and
    its variance, the HT variance of the difference of their residuals u^a_i - u^b_i (the
    documents both runs weight alike cancel; the difference's linearisation, since the
    denominator is common).
    """
    delta = _delta(pi, pi_joint)
    x_a = a / pi[docs.doc][:, :, None]
    x_b = _flat(b) / pi
    delta_b = x_b @ delta
    denom = np.reshape(denominator, -1)
    q = np.divide(numerator, denom, out=np.zeros(numerator.shape), where=denom > 0)
    cross = (x_a * delta_b.T[docs.doc]).sum(axis=1)
    own = (x_b * delta_b).sum(axis=-1)
    if pairs is None:
        spread = _quadratic(x_a, docs, delta) - 2.0 * q * cross + q * q * own
    else:  # the residuals' differences, document by document
        residual = _on_frame(x_a, docs, len(pi)) - q[:, None, :] * x_b.T[None]
        spread = _frame_quadratic(_contrast(residual, pairs), delta)
    variance = np.divide(spread, denom * denom, out=np.zeros(spread.shape), where=denom > 0)
    if taylor:
        q = q - np.divide(q * own - cross, denom * denom, out=np.zeros(q.shape),
                          where=denom > 0)
    return _shaped(q if pairs is None else _contrast(q, pairs), variance, b)


def ideal_dcg(grades: np.ndarray, counts: np.ndarray, cutoff: int | None
              ) -> tuple[np.ndarray, np.ndarray]:
    """The ideal DCG@k of ``counts[g]`` documents of grade ``grades[g]`` (decreasing, positive),
    counts possibly fractional, and its gradient in the counts.

    With W(s) the discount mass of the first s ranks (linear within a rank) and C_j the number
    of documents of the j highest grades, ideal = sum_j (g_j - g_{j+1}) W(C_j), g_{G+1} = 0,
    and d ideal / d N_i = sum_{j >= i} (g_j - g_{j+1}) W'(C_j)."""
    cum_counts = np.cumsum(counts, axis=0)
    top = cutoff if cutoff is not None else int(np.ceil(cum_counts.max(initial=0.0))) + 1
    discount = np.append(1.0 / np.log2(np.arange(2, top + 2)), 0.0)
    mass = np.concatenate([[0.0], np.cumsum(discount[:top])])
    whole = np.minimum(np.floor(cum_counts).astype(np.int64), top)
    slope = discount[whole]
    mass_at = mass[whole] + (cum_counts - whole) * slope
    steps = (grades - np.append(grades[1:], 0.0)).reshape((-1,) + (1,) * (counts.ndim - 1))
    ideal = (steps * mass_at).sum(axis=0)
    gradient = np.cumsum((steps * slope)[::-1], axis=0)[::-1]
    return ideal, gradient
