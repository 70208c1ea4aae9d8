"""First- and second-order inclusion probabilities of a Sample's judged documents, per design.

These are what design-based (Horvitz-Thompson) estimators need: pi_i = P(i judged) and
pi_ij = P(i and j judged). Formulas:

- census, pooled: pi_i = pi_ij = 1 (pooled designs are deterministic: "inclusion" there only
  records that a document was judged);
- stratified (SRS without replacement within strata; Cochran, Sampling Techniques, ch. 5):
  pi_i = n_h / N_h; pi_ij = n_h (n_h - 1) / (N_h (N_h - 1)) within a stratum, pi_i pi_j across;
- poisson and inclusion-only (prels): pi_i as recorded, pi_ij = pi_i pi_j;
- with-replacement in rounds (Li & Kanoulas, CIKM 2017, sec. 3.2):
  pi_i = 1 - prod_t (1 - p_t(i))^N_t,
  pi_ij = pi_i + pi_j - [1 - prod_t (1 - p_t(i) - p_t(j))^N_t].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sampleval.core._kernels import with_replacement_inclusion
from sampleval.core.sample import Sample, TopicSample
from sampleval.errors import UsageError


@dataclass(frozen=True)
class JudgedDesign:
    """One topic's judged documents with their inclusion probabilities.

    ``index``: positions of the judged documents in the topic's frame (docno order);
    ``pi``: pi_i; ``pi_joint``: the ``[n, n]`` matrix of pi_ij (pi_ii = pi_i).
    """

    index: np.ndarray
    pi: np.ndarray
    pi_joint: np.ndarray


def judged_design(sample: Sample, topic: TopicSample,
                  index: np.ndarray | None = None) -> JudgedDesign:
    """pi_i and pi_ij of a topic's judged documents under the sample's design (``index``:
    the frame positions of the judged documents wanted, in increasing order; default all;
    an estimator to which a document contributes nothing can leave it out). Computed once
    per topic and index for a sample, then taken from the sample's cache."""
    if index is None:
        index = np.flatnonzero(topic.judged)
    key = (topic.topic, np.asarray(index, dtype=np.int64).tobytes())
    cached = sample._designs.get(key)
    if cached is None:
        cached = sample._designs[key] = _design(sample, topic, index)
        for shared in (cached.index, cached.pi, cached.pi_joint):
            shared.setflags(write=False)  # shared by every later caller
    return cached


def _design(sample: Sample, topic: TopicSample, index: np.ndarray) -> JudgedDesign:
    if sample.design in ("census", "pooled"):
        n = len(index)
        return JudgedDesign(index, np.ones(n), np.ones((n, n)))
    if sample.design == "stratified":
        return _stratified(topic, index)
    if sample.design in ("poisson", "inclusion"):
        pi = topic.inclusion[index]
        joint = np.outer(pi, pi)
        np.fill_diagonal(joint, pi)
        return JudgedDesign(index, pi, joint)
    if sample.design == "with-replacement":
        return _with_replacement(sample, topic, index)
    raise UsageError(f"design {sample.design!r} has no inclusion probabilities "
                     "(use the importance-sampling estimators)")


def _stratified(topic: TopicSample, index: np.ndarray) -> JudgedDesign:
    sizes, sampled = topic.strata()
    return JudgedDesign(index, *stratified_inclusion(topic.stratum[index], sizes, sampled))


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


def _with_replacement(sample: Sample, topic: TopicSample, index: np.ndarray) -> JudgedDesign:
    if sample.rounds is None or sample.round_probs is None:
        raise UsageError("a with-replacement sample needs its rounds and round_probs tables")
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
