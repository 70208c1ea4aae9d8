"""A selection method added in one file (issue 28): a tiny Selector, written to a module of
its own and registered on import, that reports a Design class (``WITH_REPLACEMENT``) is
listed by ``sampleval methods`` with its design and capabilities, makes samples with
``sampleval sample``, is simulated by ``sampleval simulate``, passes the contract tests and is
estimated by the families that accept its design, and changes no default, with no other
edit. (``test_plugins.py`` shows the same of a stratified method loaded as a plugin, in
fresh processes.)"""

from __future__ import annotations

import importlib
import io
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest
import test_contracts as contracts

from conftest import CliResult, toy_collection_files
from sampleval.cli.sample import estimator_families
from sampleval.core.design import WITH_REPLACEMENT
from sampleval.core.sample import Sample
from sampleval.estimation.defaults import rows
from sampleval.selection import METHODS

METHOD = '''"""toy-draws: n uniform draws with replacement from each topic's pool, in one round."""

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from sampleval.core.design import WITH_REPLACEMENT, Design
from sampleval.core.pool import Pool
from sampleval.core.sample import Sample
from sampleval.selection.base import Budget, Selector, register, rng_state


@register
class ToyDraws(Selector):
    name: ClassVar[str] = "toy-draws"
    design: ClassVar[Design] = WITH_REPLACEMENT
    summary: ClassVar[str] = "toy: uniform draws with replacement from the pool"
    budget_unit: ClassVar[str] = "draws"

    def __init__(self, pool: Pool, budget: Budget, rng: np.random.Generator,
                 **params: Any) -> None:
        super().__init__(pool, budget, rng, **params)
        self._initial = rng_state(rng)
        self.drawn = {t: rng.integers(0, pool[t].size, self.budget_for(t))
                      for t in pool.topics}
        self.labels = {t: np.full(pool[t].size, np.nan) for t in pool.topics}

    @classmethod
    def draws_reach_every_document(cls, params: dict[str, Any]) -> bool:
        return True

    def _pending(self, topic: str) -> np.ndarray:
        drawn = self._of_topic(self.drawn, topic)
        first = drawn[np.sort(np.unique(drawn, return_index=True)[1])]
        return first[np.isnan(self.labels[topic][first])]

    def propose(self, topic: str, n: int) -> list[str]:
        self._check_batch(n)
        return [str(d) for d in self.pool.docnos_of(topic)[self._pending(topic)[:n]]]

    def observe(self, topic: str, judgments: Mapping[str, float]) -> None:
        where, labels = self._received(topic, judgments, self._pending(topic))
        self.labels[topic][where] = labels

    def sample(self) -> Sample:
        frame, draws, rounds, probs = [], [], [], []
        for t in self.pool.topics:
            docnos, labels, drawn = self.pool.docnos_of(t), self.labels[t], self.drawn[t]
            open_ = np.flatnonzero(np.isnan(labels[drawn]))
            kept = drawn[:open_[0]] if len(open_) else drawn  # up to the first unjudged
            p = 1.0 / len(docnos)
            judged = np.unique(kept)
            inclusion = np.full(len(docnos), np.nan)
            inclusion[judged] = -np.expm1(len(kept) * np.log1p(-p))
            frame.append(pd.DataFrame({"query_id": t, "doc_id": docnos,
                                       "relevance": np.where(np.isin(np.arange(len(docnos)),
                                                                     judged), labels, np.nan),
                                       "stratum": "", "inclusion": inclusion}))
            draws.append(pd.DataFrame({"query_id": t, "round": 1, "doc_id": docnos[kept],
                                       "probability": p}))
            rounds.append(pd.DataFrame({"query_id": [t], "round": [1], "size": [len(kept)]}))
            probs.append(pd.DataFrame({"query_id": t, "round": np.r_[np.zeros(len(docnos)),
                                                                      np.ones(len(judged))],
                                       "doc_id": np.r_[docnos, docnos[judged]],
                                       "probability": p}))
        return Sample(self.design, *(pd.concat(x, ignore_index=True)
                                     for x in (frame, draws, rounds, probs)),
                      meta=self._sample_meta())

    def state(self) -> dict[str, Any]:
        return {**self._state_header(self._initial),
                "topics": {t: {"judged": np.flatnonzero(~np.isnan(v)).tolist(),
                               "labels": v[~np.isnan(v)].tolist()}
                           for t, v in self.labels.items()}}

    @classmethod
    def restore(cls, pool: Pool, state: dict[str, Any]) -> "ToyDraws":
        selector = cls._from_header(pool, state)
        for t, saved in state["topics"].items():
            selector.labels[t][saved["judged"]] = saved["labels"]
        return selector
'''


@pytest.fixture()
def toy_method(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The method's one file, imported (which registers it); unregistered afterwards."""
    (tmp_path / "toy_draws.py").write_text(METHOD)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        importlib.import_module("toy_draws")
        yield "toy-draws"
    finally:
        METHODS._items.pop("toy-draws", None)
        sys.modules.pop("toy_draws", None)


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    """A run file and a qrels file: 3 topics, 30 documents each."""
    return toy_collection_files(tmp_path, 30)


def defaults_everywhere() -> dict[str, object]:
    """Every default a method could change: the defaults table, and for each registered
    method other than the toy, its design, families and default estimators."""
    return {"table": rows(), **{name: (cls.design.name, estimator_families(cls.design))
                                for name, cls in METHODS.items() if name != "toy-draws"}}


def test_a_method_in_one_file_is_offered_everywhere(
        toy_method: str, files: tuple[Path, Path], tmp_path: Path,
        cli: Callable[..., CliResult]) -> None:
    before = defaults_everywhere()
    listed = cli("methods")
    assert listed.code == 0, listed.stderr
    text = " ".join(listed.stdout.split())
    assert "toy-draws: toy: uniform draws with replacement from the pool" in text
    assert "design: with-replacement; the budget counts draws" in text
    assert "capabilities: is_probability_design, has_inclusion_probabilities, " \
           "has_joint_probabilities, has_draws" in text
    tsv = [line.split("\t") for line in cli("methods", "-f", "tsv").stdout.splitlines()]
    row = dict(zip(tsv[0], next(r for r in tsv if r[0] == toy_method), strict=True))
    assert row["design"] == "with-replacement" and row["has_draws"] == "true"
    assert row["has_strata"] == "false" and row["families"] == "hh,ht,ppi,stat"
    out = tmp_path / "sample"
    sampled = cli("sample", toy_method, files[0], "--qrels", files[1], "-n", "8", "-o", out,
                  "--seed", "1")
    assert sampled.code == 0, sampled.stderr
    assert json.loads((out / "sample.json").read_text())["design"] == "with-replacement"
    sample = Sample.load(out)
    assert sample.design is not None and sample.design.has_draws
    estimated = cli("estimate", out, files[0], "-f", "tsv")
    assert estimated.code == 0, estimated.stderr
    # every draw reaches every document: the per-draw estimators are the defaults
    assert {"AP~hh", "P@10~hh", "nDCG@10~hh", "NumRel~hh"} <= set(
        pd.read_csv(io.StringIO(estimated.stdout), sep="\t")["measure"])
    simulated = cli("simulate", files[0], "--qrels", files[1], "--methods",
                    f"{toy_method},uniform", "--budgets", "6", "--trials", "2", "--measures",
                    "P@5", "--depth", "30", "-o", tmp_path / "sim")
    assert simulated.code == 0, simulated.stderr
    summary = pd.read_csv(tmp_path / "sim" / "summary.csv")
    assert set(summary["method"]) == {toy_method, "uniform"}
    assert defaults_everywhere() == before


@pytest.mark.parametrize("contract", [
    contracts.test_declared_defaults_construct,
    contracts.test_budget_spent_exactly_without_repeats,
    contracts.test_design_agrees_with_its_samples])
def test_a_method_in_one_file_passes_the_contracts(
        toy_method: str, contract: Callable[[str], None]) -> None:
    contract(toy_method)


def test_a_method_in_one_file_resumes_and_survives_its_directory(
        toy_method: str, tmp_path: Path) -> None:
    for batch, stop in ((None, 1), (1, 3)):
        contracts.test_stop_save_restore_continue(toy_method, batch, stop)
    contracts.test_sample_survives_its_directory(toy_method, tmp_path)


def test_the_design_not_the_method_decides_what_applies(toy_method: str) -> None:
    """The toy's samples are estimated by every family that accepts its design, as those of
    ``active`` (the other with-replacement method) are."""
    assert METHODS[toy_method].design is WITH_REPLACEMENT
    assert set(estimator_families(METHODS[toy_method].design)) == set(
        estimator_families(METHODS["active"].design))
