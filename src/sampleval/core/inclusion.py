"""First- and second-order inclusion probabilities of a Sample's judged documents.

What design-based (Horvitz-Thompson) estimators need: pi_i = P(i judged) and pi_ij = P(i
and j judged), as the sample's design defines them (:meth:`sampleval.core.design.Design.
inclusion`, where the formulas live), computed once per topic and set of documents.
"""

from __future__ import annotations

import numpy as np

from sampleval.core.design import JudgedDesign, stratified_inclusion
from sampleval.core.sample import Sample, TopicSample

__all__ = ["JudgedDesign", "judged_design", "stratified_inclusion"]


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
        cached = sample._designs[key] = sample.design.inclusion(sample, topic, index)
        for shared in (cached.index, cached.pi, cached.pi_joint):
            shared.setflags(write=False)  # shared by every later caller
    return cached
