"""``uniform``: a simple random sample without replacement of each topic's pool.

infAP's design (Yilmaz & Aslam, "Estimating average precision with incomplete and imperfect
judgments", CIKM 2006, sec. 3): the frame is the whole pool, one stratum; exactly n = B of its
N documents are judged (B: the topic's budget), so pi_i = n / N and pi_ij = n (n - 1) /
(N (N - 1)). Unjudged pool documents keep relevance NaN. Estimators: trec_eval's infAP
(``trec_eval``; the sample saved as qrels with -1 for unjudged is its input), xinfAP, infNDCG,
iP@k, inum_rel (``nist``), Horvitz-Thompson (``ht``) and statAP (``stat``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from sampleval.core.pool import TopicPool
from sampleval.selection.base import register
from sampleval.selection.strata import Layout, StratifiedSelector


@register
class UniformSelector(StratifiedSelector):
    """Uniform sampling of the pool (see the module docstring)."""

    name: ClassVar[str] = "uniform"
    summary: ClassVar[str] = "a simple random sample of the pool (infAP's design)"

    @classmethod
    def simple_random_sample(cls, params: dict[str, Any]) -> bool:
        return True

    def _layout(self, tp: TopicPool, budget: int) -> Layout:
        return Layout(np.zeros(tp.size, dtype=np.int64), np.array(["1"], dtype=object),
                      np.array([budget]))
