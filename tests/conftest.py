"""Shared fixtures: the real TREC-COVID and Cranfield data beside the repository.

The tests are in tiers (issue 28, step 8): ``unit/``, ``contracts/``, ``agreement/`` (trec_eval,
pytrec_eval, ir_measures, sample_eval), ``montecarlo/`` (every test slow), ``campaign/``,
``cli/``, ``studies/`` (smoke runs of ``studies/``) and the frozen numbers of ``golden/``.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import signal
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_limits

from golden import make
from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample
from sampleval.datasets.synthetic import make_collection
from sampleval.estimation.engine.views import TopicView, topic_views
from sampleval.io import read_qrels, read_runs
from sampleval.simulation.predictors import pool_truth

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

# Two test processes share the two cores (make check: -n 2): a threaded BLAS in each spins
# on threads the other needs (range_multiplier's eigh took 7x the CPU under load). One BLAS
# thread here, and in the subprocesses the tests start (test_campaign_blas, which needs a
# threaded BLAS, removes the variables).
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
threadpool_limits(limits=1, user_api="blas")


def need(found: bool, message: str) -> None:
    """Skip the test (fail it in CI, ``CI`` set) with ``message`` when something it needs is
    not ``found``."""
    if not found:
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def shared_path(*parts: str) -> Path:
    """A path under ../shared/data; fails in CI and skips elsewhere when it is missing."""
    path = SHARED_DATA.joinpath(*parts)
    need(path.exists(), f"real data missing: {path} (../shared/data beside the repository)")
    return path


@functools.cache
def golden_collection(name: str = "synthetic") -> make.Collection:
    """A collection of the golden table (``tests/golden/make.py``): ``synthetic`` or
    ``covid`` (a TREC-COVID round-5 subset; fails in CI and skips elsewhere without the
    data), made once per process for every test that uses it."""
    if name == "covid":
        found = make.covid(shared_path("trec-covid").parent)
        assert found is not None
        return found
    return make.synthetic()


@functools.cache
def golden_samples(name: str = "synthetic") -> dict[str, Sample | None]:
    """The golden collection's sample of each design, made on first use
    (``make.cell_table`` and :func:`golden_sample` fill it), shared by every test."""
    return {}


def golden_sample(design: str, name: str = "synthetic") -> Sample:
    """The golden collection ``name``'s sample of ``design`` (made once per process)."""
    samples = golden_samples(name)
    if design not in samples:
        samples[design] = make.design_sample(golden_collection(name), design)
    made = samples[design]
    assert made is not None, f"no {design} sample of {name}"
    return made


@pytest.fixture(scope="session")
def covid() -> Path:
    """The trec-covid directory (runs of rounds 1 and 5, qrels of every round)."""
    return shared_path("trec-covid")


@pytest.fixture(scope="session")
def trec_eval_suite() -> Path:
    """trec_eval 10's own test suite: inputs, golden outputs, README table of the cases."""
    return shared_path("trec_eval-test")


@pytest.fixture(scope="session")
def cranfield_dir() -> Path:
    """The Cranfield 1400 directory (texts, queries, qrels)."""
    return shared_path("cranfield")


def toy_collection_files(directory: Path, n_docs: int) -> tuple[Path, Path]:
    """A run file ``run.txt`` and a qrels file ``qrels.txt`` in ``directory``: 3 topics of
    ``n_docs`` documents each, every third one relevant."""
    run_lines, qrels_lines = [], []
    for topic in ("1", "2", "3"):
        for i in range(n_docs):
            run_lines.append(f"{topic} Q0 {topic}-d{i:02d} {i + 1} {n_docs - i} toy")
            qrels_lines.append(f"{topic} 0 {topic}-d{i:02d} {int(i % 3 == 0)}")
    (directory / "run.txt").write_text("\n".join(run_lines) + "\n")
    (directory / "qrels.txt").write_text("\n".join(qrels_lines) + "\n")
    return directory / "run.txt", directory / "qrels.txt"


INNER_PYTEST = ("-p", "no:cacheprovider", "-p", "no:schemathesis", "-p", "no:hypothesispytest",
                "-p", "no:anyio")
"""Options of a pytest run inside a test: no cache, and none of the plugins the suite's own
tests need but the inner run's do not (their imports cost it about 2 s CPU)."""


def plugin_env(directory: Path, module: str, source: str) -> dict[str, str]:
    """The environment of a ``sampleval`` process that loads ``source`` as the plugin module
    ``module`` (written to ``directory``, named in ``SAMPLEVAL_PLUGINS``)."""
    (directory / f"{module}.py").write_text(source)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(directory),
                                                      env.get("PYTHONPATH", "")]))
    env["SAMPLEVAL_PLUGINS"] = module
    return env


@pytest.fixture(scope="session")
def round5_runs(covid: Path) -> list[Run]:
    """Every run of TREC-COVID round 5 (126; read once per process: 2-3 s)."""
    return read_runs(covid / "round5" / "runs")


@pytest.fixture(scope="session")
def round5_qrels(covid: Path) -> Qrels:
    """The round-5 qrels."""
    return read_qrels(covid / "qrels" / "qrels.covid-round5.txt")


@pytest.fixture(scope="session")
def round5_pool(round5_runs: list[Run]) -> Pool:
    """Every round-5 run pooled to depth 100."""
    return Pool.from_runs(round5_runs, depth=100)


@pytest.fixture(scope="session")
def round5_census(round5_qrels: Qrels, round5_pool: Pool
                  ) -> tuple[Qrels, Pool, list[TopicView]]:
    """Round 5 pooled to depth 100, with a census frame: the pooled and the judged documents,
    labels from the round-5 qrels (pooled but not judged there: 0)."""
    qrels, pool = round5_qrels, round5_pool
    pooled = pd.concat([pd.DataFrame({"query_id": tp.topic, "doc_id": pool.docnos_of(tp.topic)})
                        for tp in pool])
    frame = pooled.merge(qrels.judged()[["query_id", "doc_id", "relevance"]], how="outer",
                         on=["query_id", "doc_id"])
    frame = frame.assign(relevance=frame["relevance"].fillna(0.0), stratum="", inclusion=1.0)
    return qrels, pool, topic_views(pool, Sample("census", frame))


# -- campaigns ----------------------------------------------------------------------------------

def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


MONTE_CARLO = Path(__file__).resolve().parent / "montecarlo"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of ``montecarlo/`` is slow: ``make check`` (``-m "not slow"``) leaves the
    tier out, ``make test`` runs it. Then the modules that hold a slow test run first (each
    module's tests kept together and in order), so that with several processes (``-n 2``)
    the long tests start early and the short ones fill in at the end, rather than one long
    test running alone last."""
    for item in items:
        if MONTE_CARLO in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.slow)
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_modules)  # stable: order kept within


def pytest_sessionstart(session: pytest.Session) -> None:
    """A run stopped by SIGTERM stops as one interrupted by Ctrl-C: every fixture's
    teardown runs, so nothing a fixture started is left running (SIGKILL: the servers the
    fixtures start die with this process, ``campaign.server.die_with_parent``)."""
    signal.signal(signal.SIGTERM, _terminated)


@pytest.fixture(scope="session")
def postgres():  # type: ignore[no-untyped-def]
    """A PostgreSQL server of the tests' own (Debian's binaries; fails in CI, skips elsewhere
    when missing), started once per session."""
    pytest.importorskip("sqlalchemy")
    from campaign_support import have_postgres, need
    from sampleval.campaign.devdb import LocalPostgres

    need(have_postgres(), "PostgreSQL server binaries (Debian package postgresql)")
    server = LocalPostgres(fsync=False).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty campaign store: a SQLite file, or a database on the test PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/store.db"
    import uuid

    return request.getfixturevalue("postgres").fresh_database(f"t{uuid.uuid4().hex[:12]}")

@dataclass(frozen=True)
class CliResult:
    """What one in-process command line did."""

    code: int
    stdout: str
    stderr: str

    @property
    def returncode(self) -> int:
        """The exit code, as ``subprocess.CompletedProcess`` names it."""
        return self.code


def run_cli(*args: object) -> CliResult:
    """Run ``sampleval ARGS...`` in this process as the console script does (errors as one
    line and exit code 2, warnings as lines on stderr: each shown, as a fresh process shows
    it), without a new interpreter's start-up cost (imports, numba's cache: about 2 s CPU a
    call); returns its exit code and output. Not thread-safe (it swaps ``sys.stdout``)."""
    from sampleval.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    sys.argv = ["sampleval", *map(str, args)]
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            warnings.simplefilter("always")
            main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = saved
    return CliResult(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """:func:`run_cli`, for tests that take it as a fixture."""
    return run_cli


@pytest.fixture(scope="session")
def sparse_collection() -> tuple[list[Run], Qrels, Pool]:
    """A sparse synthetic collection (10 topics, 6 runs, 8% relevant), its depth-30 pool
    judged in full (the pool carries the labels)."""
    made = make_collection(np.random.default_rng(11), n_topics=10, n_runs=6, n_docs=400,
                           depth=30, pool_depth=30, rel_rate=0.08)
    runs = [Run.from_frame(frame, name) for name, frame in made.runs.items()]
    qrels = Qrels.from_frame(made.qrels)
    return runs, qrels, Pool.from_runs(runs, depth=30, qrels=qrels)


@pytest.fixture(scope="module")
def judged_collection() -> tuple[list[Run], Qrels, Pool, pd.DataFrame]:
    """A small synthetic collection: 6 runs, 8 topics, its depth-30 pool judged in full
    (qrels), and every pooled document's truth (:func:`pool_truth`)."""
    made = make_collection(np.random.default_rng(3), n_topics=8, n_runs=6, n_docs=400,
                           depth=30, pool_depth=30)
    runs = [Run.from_frame(frame, name) for name, frame in made.runs.items()]
    qrels = Qrels.from_frame(made.qrels)
    pool = Pool.from_runs(runs, depth=30)
    return runs, qrels, pool, pool_truth(pool, qrels)


def jackknife_variance(y: np.ndarray, ranks: np.ndarray, cutoff: int | None, paper: bool,
                       taylor: bool, pi: np.ndarray, pi_joint: np.ndarray,
                       strata: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                       pairs: np.ndarray | None = None) -> np.ndarray:
    """The delete-one jackknife variance of AP-hat as reported (``taylor``: Taylor-corrected,
    each replicate recomputing the correction), stratified with ``strata``, (1 - pi)-weighted
    without; per run, or per pair's difference: the variance of the array-level jackknives
    that ``AP~ht`` keeps (:mod:`sampleval.estimation.engine.replicates`)."""
    from sampleval.estimation.engine import replicates

    if taylor:
        return (replicates.taylor_jackknife(y, ranks, cutoff, paper, strata, pairs).variance
                if strata is not None else replicates.taylor_jackknife_independent(
                    y, ranks, cutoff, paper, pi, pi_joint, pairs).variance)
    if strata is not None:
        return replicates.stratified_average_precision(y, *strata, ranks, cutoff, paper,
                                                       False, pairs).variance
    return replicates.average_precision_jackknife(y, pi, pi_joint, ranks, cutoff, paper,
                                                  False, pairs).variance
