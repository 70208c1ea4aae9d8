"""The numbers frozen (issue 28, step 1): every estimator family x base measure x option value
x accepted design gives, per run, the ``all`` value, lo and hi stored in ``tests/golden/``
(synthetic collection; TREC-COVID round-5 subset), to a relative 1e-12 (``make.RTOL``: why
that tolerance). A family, option value or design added since the files were written is a
missing cell here: regenerate with ``PYTHONPATH=src python tests/golden/make.py``, which
prints which cells moved, and state every number that changed on purpose in the commit.
"""

from __future__ import annotations

import functools

import pandas as pd
import pytest

from conftest import golden_collection as collection
from conftest import golden_samples as samples
from conftest import shared_path
from golden import make

COLLECTIONS = ("synthetic", "covid")
GROUPS = list(make.groups())


@functools.cache
def golden(name: str) -> pd.DataFrame:
    path = make.path_of(name)
    if not path.exists():
        pytest.fail(f"{path} is missing: PYTHONPATH=src python tests/golden/make.py")
    return make.read(path)


@pytest.mark.parametrize("name", COLLECTIONS)
@pytest.mark.parametrize(("design", "family"), GROUPS)
def test_golden(name: str, design: str, family: str) -> None:
    new = make.cell_table(collection(name), design, family, samples(name))
    stored = golden(name)
    old = stored[(stored["design"] == design) & (stored["family"] == family)]
    cells = make.differences(old, new)
    assert cells.empty, (f"{name}, {family} on {design} samples: "
                         f"{make.summary(cells)}\n(if on purpose: PYTHONPATH=src python "
                         "tests/golden/make.py, and say so in the commit)")


@pytest.mark.parametrize("name", COLLECTIONS)
def test_no_stale_cells(name: str) -> None:
    """Every stored cell is one the registries still enumerate (a removed family, design or
    option value must be removed from the golden files too, by regenerating them)."""
    stored = golden(name)
    if name == "covid":
        shared_path("trec-covid")
    stale = set(zip(stored["design"], stored["family"], strict=True)) - set(GROUPS)
    assert not stale, f"golden cells of groups no longer registered: {sorted(stale)}"
