"""The defaults table (:mod:`sampleval.estimators.defaults`), issue 28 step 4."""

from __future__ import annotations

import pytest

from sampleval.core.sample import DESIGNS
from sampleval.estimators.defaults import default_name
from sampleval.estimators.family import FAMILIES
from sampleval.estimators.names import estimator_for

MEASURES = sorted({(b.name, cut) for f in FAMILIES.values() for b in f.bases
                   for cut in (None, 10)}, key=str)


@pytest.mark.parametrize("reach", [False, True])
@pytest.mark.parametrize("design", DESIGNS)
def test_table_gives_the_preference_sums_answers(design: str, reach: bool) -> None:
    """The table is exactly what the families' integer preferences chose before it."""
    for base, cutoff in MEASURES:
        old = estimator_for(base, cutoff, design, reach)
        assert default_name(design, base, cutoff, reach) == (old and old.name), (
            design, base, cutoff, reach)
