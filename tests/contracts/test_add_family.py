"""An estimator family in one file of its own, loaded as a plugin (``SAMPLEVAL_PLUGINS``), is
listed by ``sampleval methods``, estimates in ``sampleval estimate`` and ``sampleval simulate``,
is collected and passed by the contract tests, and changes no default (issue 28: the preset
declares its measures, designs and options; the engine and ``estimation/result.py`` give it
its rows and intervals, the ``few`` floor and ``compare``'s differences)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
from test_plugins import SAMPLEVAL, files, run

from conftest import INNER_PYTEST, plugin_env

__all__ = ["files"]  # the fixture, shared with the selection method's plugin test

PLUGIN = '''"""A toy estimator family: Horvitz-Thompson P@k and DCG through the engine's ht form
with no predictions and lam fixed (so, ~ht's numbers)."""

import numpy as np

from sampleval.estimation.result import TopicParts, floored, rows_of
from sampleval.estimation.family import Base, EstimatorFamily, register_family
from sampleval.estimation.engine.values import ppi_values
from sampleval.estimation.engine.units import topic_datas


def parts(run_names, views, sample, spec, level):
    topics = [topic_datas(v, sample, "ht", [np.zeros(len(v.sample.docnos))])[0]
              for v in views]
    result = ppi_values(spec, topics, level, tuning="none", anticipated=False)
    return TopicParts(result.value, result.variance, np.zeros_like(result.value))


def differences(run_names, views, sample, spec, level, pairs):
    topics = [topic_datas(v, sample, "ht", [np.zeros(len(v.sample.docnos))])[0]
              for v in views]
    result = ppi_values(spec, topics, level, tuning="none", anticipated=False, pairs=pairs)
    return result.value[:, pairs[:, 0]] - result.value[:, pairs[:, 1]], result.pair_variance


PARTS = floored(parts)
register_family(EstimatorFamily(
    name="toyht", title="toy plugin: HT totals through the engine", reference="a test",
    bases=(Base("P", "required"), Base("DCG", "optional")),
    requires=("has_joint_probabilities",),
    compute=rows_of(PARTS), parts=PARTS, differences=differences))
'''


@pytest.mark.slow
def test_a_family_in_one_file_is_offered_everywhere_and_changes_no_default(
        tmp_path: Path, files: tuple[Path, Path]) -> None:
    env = plugin_env(tmp_path, "toy_family", PLUGIN)
    plain_env = {k: v for k, v in env.items() if k != "SAMPLEVAL_PLUGINS"}
    listed = run([str(SAMPLEVAL), "methods"], env)
    assert listed.returncode == 0, listed.stderr
    assert "toy plugin: HT totals through the engine" in listed.stdout
    assert "P@k~toyht" in listed.stdout
    defaults = [run([str(SAMPLEVAL), "methods", "--defaults", "-f", "tsv"], e)
                for e in (env, plain_env)]
    assert defaults[0].returncode == 0, defaults[0].stderr
    assert defaults[0].stdout == defaults[1].stdout  # registering changes no default
    assert "toyht" not in defaults[0].stdout
    out = tmp_path / "sample"
    sampled = run([str(SAMPLEVAL), "sample", "stratified", str(files[0]), "--qrels",
                   str(files[1]), "-n", "8", "-o", str(out), "--seed", "1"], env)
    assert sampled.returncode == 0, sampled.stderr
    estimated = run([str(SAMPLEVAL), "estimate", str(out), str(files[0]), "-m",
                     "P@5~toyht,P@5~ht", "-f", "tsv", "-q"], env)
    assert estimated.returncode == 0, estimated.stderr
    both = pd.read_csv(pd.io.common.StringIO(estimated.stdout), sep="\t")
    tables = {name: both[both["measure"] == name].reset_index(drop=True)
              for name in ("P@5~toyht", "P@5~ht")}
    assert len(tables["P@5~ht"]) > 0
    named = ["measure", "estimator"]
    pd.testing.assert_frame_equal(tables["P@5~toyht"].drop(columns=named),
                                  tables["P@5~ht"].drop(columns=named), atol=1e-12)
    simulated = run([str(SAMPLEVAL), "simulate", str(files[0]), "--qrels", str(files[1]),
                     "--methods", "stratified", "--budgets", "8", "--trials", "2",
                     "--measures", "P@5~toyht,P@5", "--depth", "20", "-o",
                     str(tmp_path / "sim")], env)
    assert simulated.returncode == 0, simulated.stderr
    summary = pd.read_csv(tmp_path / "sim" / "summary.csv")
    assert "P@5~toyht" in set(summary["estimator"]), summary.columns
    checked = run([sys.executable, "-m", "pytest", "tests/contracts/test_contracts.py", "-v",
                   *INNER_PYTEST, "-k", "toyht"], env)
    passed = [line for line in checked.stdout.splitlines()
              if "toyht" in line and "PASSED" in line]
    assert checked.returncode == 0, checked.stdout[-3000:]
    assert len(passed) >= 5, checked.stdout[-3000:]  # names, census, 3 designs
    plain = run([str(SAMPLEVAL), "methods"], plain_env)
    assert "toyht" not in plain.stdout
