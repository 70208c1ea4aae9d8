"""Measures over several judgment groups (trec_eval's ``-R qrels_jg``: ``m_map_avgjg.c``,
``m_P_avgjg.c``, ``m_Rprec_mult_avgjg.c``): a qrels measure computed with each group's
judgments and averaged over the topic's groups."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sampleval.measures.base import RankedGrades
from sampleval.measures.exact import compute
from sampleval.measures.names import Measure

BASES = {"map_avgjg": "AP", "P_avgjg": "P", "Rprec_mult_avgjg": "Rprec_mult"}


def compute_groups(measure: Measure, by_group: Sequence[RankedGrades], level: float
                   ) -> np.ndarray:
    """``measure`` for every run on one topic, from the rankings labelled by each of its
    judgment groups (in trec_eval's group order): the base measure's values added group by
    group, divided by the number of groups when there are several."""
    base = Measure(BASES[measure.name], measure.cutoff, measure.rel)
    values = np.stack([compute(base, g, level) for g in by_group])
    total = np.cumsum(values, axis=0)[-1]
    return total / len(by_group) if len(by_group) > 1 else total
