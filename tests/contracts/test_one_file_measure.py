"""A measure added in one file (issue 28): its spec with its estimand, its exact kernel and
its rank weights. The file below declares RWP@k, rank-weighted precision, sum_{r <= k}
(k - r + 1) rel(d_r) / (k (k + 1) / 2), whose estimand is a total over the frame's documents
with rank weights. Importing it registers everything: the spec (``register_measure``), the
kernel (``@kernel``) and the weights (``@rank_weight``); the design-based families read the
estimand from the declaration (``EstimatorFamily.estimands``), so no family is edited. The
fixture only imports the file, and undoes the registrations afterwards.

Then the measure is evaluated exactly (``evaluate``, against a hand computation), and
estimated by the design-based family through ``estimate`` (design, inclusion probabilities,
HT variance, intervals): exact on a census, and on repeated stratified and Poisson samples
its mean is the exact value and its variance estimate the estimates' spread."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest
import test_contracts as contracts

from sampleval.core.design import POISSON
from sampleval.core.sample import Sample
from sampleval.estimation.estimates import estimate
from sampleval.estimation.family import FAMILIES
from sampleval.estimation.spec import parse_estimate
from sampleval.measures import names, weights
from sampleval.measures.base import KERNELS
from sampleval.measures.evaluation import evaluate
from sampleval.selection import METHODS, Budget, simulate

MEASURE = '''"""RWP@k, rank-weighted precision: sum_{r <= k} (k - r + 1) rel(d_r) / (k (k + 1) / 2)."""

import numpy as np

from sampleval.measures.base import RankedGrades, kernel, relevant, seqsum
from sampleval.measures.names import Measure, MeasureSpec, register_measure
from sampleval.measures.weights import rank_weight

SPEC = register_measure(MeasureSpec(
    "rwp", "rank-weighted precision at k (a toy measure)", name="RWP", cutoff="required",
    trec_eval=False, estimand="total"))


@rank_weight("RWP")
def weight(rank: np.ndarray, k: int) -> np.ndarray:
    """The rank weights of the total (0 outside the top k, and at rank 0: not retrieved)."""
    return np.where((rank > 0) & (rank <= k), (k - rank + 1) / (k * (k + 1) / 2), 0.0)


@kernel("RWP")
def rwp(g: RankedGrades, m: Measure, level: float) -> np.ndarray:
    k = int(m.cutoff)
    width = min(k, g.width)
    return seqsum(relevant(g, level)[:, :width] * weight(np.arange(1, width + 1), k))
'''


@pytest.fixture()
def rwp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The measure's one file imported (which registers it); every registration undone
    afterwards."""
    (tmp_path / "toy_rwp.py").write_text(MEASURE)
    monkeypatch.syspath_prepend(str(tmp_path))
    for table in ("_BY_TREC", "_NAMES", "_LOWER"):
        monkeypatch.setattr(names, table, dict(getattr(names, table)))
    monkeypatch.setattr(names, "_BY_KEY", {k: list(v) for k, v in names._BY_KEY.items()})
    monkeypatch.setattr(names, "SPECS", names.SPECS)
    try:
        yield importlib.import_module("toy_rwp")
    finally:
        KERNELS.pop("RWP", None)
        weights.WEIGHTS.pop("RWP", None)
        sys.modules.pop("toy_rwp", None)


def test_the_families_read_the_estimand_from_the_declaration(rwp: ModuleType) -> None:
    """Every family with ``total`` among its estimands offers RWP@k; the others do not; a
    second declaration of the name is refused."""
    offering = {name for name in FAMILIES.names() if FAMILIES[name].base("RWP") is not None}
    assert offering == {"ht", "hh", "ppi"}
    assert parse_estimate("RWP@10~hh").base == "RWP"
    with pytest.raises(Exception, match="already declared"):
        names.register_measure(rwp.SPEC)


def test_the_measure_is_unknown_without_its_file() -> None:
    assert FAMILIES["ht"].base("RWP") is None


def by_hand(k: int) -> pd.Series:
    """RWP@k of every run and topic of the contract collection, from its definition."""
    grades = contracts.QRELS.frame.set_index(["query_id", "doc_id"])["relevance"]
    out = {}
    for run in contracts.RUNS:
        for topic, rows in run.to_frame().groupby("query_id"):
            top = rows.sort_values("rank").head(k)
            rel = (grades.loc[[(topic, d) for d in top["doc_id"]]].to_numpy() >= 1)
            out[(run.name, topic)] = float(((k - top["rank"].to_numpy() + 1) * rel).sum()
                                           / (k * (k + 1) / 2))
    return pd.Series(out)


def per_topic(results: pd.DataFrame) -> pd.Series:
    rows = results[results["query_id"] != "all"]
    return rows.set_index(["run", "query_id"])["value"].sort_index()


def test_the_measure_is_evaluated_exactly(rwp: ModuleType) -> None:
    got = per_topic(evaluate(contracts.QRELS, contracts.RUNS, ["RWP@10"]))
    want = by_hand(10)
    np.testing.assert_allclose(got.to_numpy(), want.loc[got.index].to_numpy(), rtol=0,
                               atol=1e-12)
    assert got.std() > 0


def test_a_census_estimates_it_exactly(rwp: ModuleType) -> None:
    got = estimate(contracts.census(), contracts.RUNS, ["RWP@10~ht"])
    assert set(got["measure"]) == {"RWP@10~ht"}
    values = per_topic(got)
    np.testing.assert_allclose(values.to_numpy(), by_hand(10).loc[values.index].to_numpy(),
                               rtol=0, atol=1e-12)
    rows = got[got["query_id"] != "all"]
    np.testing.assert_allclose(rows["hi"] - rows["lo"], 0.0, atol=1e-12)


def poisson_sample(seed: int) -> Sample:
    """Independent inclusions, pi_i uniform on [0.15, 0.6]."""
    rng = np.random.default_rng(seed)
    frame = contracts.QRELS.frame.assign(
        relevance=contracts.QRELS.frame["relevance"].astype(float))
    pi = np.random.default_rng(99).uniform(0.15, 0.6, len(frame))  # one design, many draws
    kept = rng.random(len(frame)) < pi
    return Sample(POISSON, frame.assign(relevance=np.where(kept, frame["relevance"], np.nan),
                                        stratum="", inclusion=pi))


def uniform_sample(seed: int) -> Sample:
    selector = METHODS["uniform"](contracts.POOL, Budget(count=60),
                                  np.random.default_rng(seed))
    return simulate(selector, contracts.ORACLE).sample()


@pytest.mark.slow  # Monte Carlo (the census test above is the fast check)
@pytest.mark.filterwarnings("ignore:RWP@10~ht.*outside \\[0, 1\\]")  # HT totals may exceed 1
@pytest.mark.parametrize("draw", [uniform_sample, poisson_sample])
def test_a_design_based_family_estimates_it_without_bias(rwp: ModuleType, draw) -> None:
    """120 samples of one design (a uniform sample of each topic's pool, 60 of its 240
    documents; Poisson sampling at pi in [0.15, 0.6]): the estimates of each run's mean
    over the topics centre on the exact mean (within 4 standard errors), and their mean
    estimated variance is the variance of the estimates (ratio in [0.7, 1.4]; its sampling
    error with 120 samples is about 0.13)."""
    trials = 120
    values, variances = [], []
    for seed in range(trials):
        got = estimate(draw(seed), contracts.RUNS, ["RWP@10~ht"])
        means = got[got["query_id"] == "all"].set_index("run").sort_index()
        values.append(means["value"].to_numpy())
        half = (means["hi"] - means["value"]).to_numpy()
        variances.append((half / 1.959963984540054) ** 2)
    values_a, variances_a = np.array(values), np.array(variances)
    exact = by_hand(10).groupby(level=0).mean().sort_index().to_numpy()
    spread = values_a.std(axis=0, ddof=1)
    z = (values_a.mean(axis=0) - exact) / (spread / np.sqrt(trials))
    assert (np.abs(z) < 4).all(), z
    ratio = variances_a.mean(axis=0) / spread**2
    assert ((ratio > 0.7) & (ratio < 1.4)).all(), ratio
