"""The golden estimates: every estimator family x base measure x option value x design, on the
synthetic collection and on a small TREC-COVID round-5 subset (issue 28, step 1).

Everything is enumerated from the registries: the families (``FAMILIES``), the measures each
declares, the values of every option its measures take (one option moved off its default at
a time, the others at theirs), the designs it accepts; one sample per design, from the first
selection method of that design (``PREFERRED`` first), or built here (``poisson``,
``inclusion``, ``census``). A family, option value or design registered later is a cell the
golden files lack, which ``tests/contracts/test_golden.py`` reports.

Each cell keeps, per run, the ``all`` row's value, lo and hi (the mean over the topics, or the
sum for counts); a cell the family refuses on that design (an option value made for other
designs) is kept as refused, with no rows. A cutoff is 10 where the measure needs one; a
measure whose cutoff is optional is estimated without one and at 10.

Regenerate (after a change of numbers made on purpose, stated in its commit)::

    PYTHONPATH=src python tests/golden/make.py          # writes tests/golden/*.parquet
    PYTHONPATH=src python tests/golden/make.py --check  # compares, writes nothing

Both print which cells moved (added, removed, refused, largest relative change).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import DESIGNS, Sample
from sampleval.errors import UsageError
from sampleval.estimation.estimates import MEAN_TOPIC, estimate
from sampleval.estimation.family import FAMILIES, Base, EstimatorFamily
from sampleval.estimation.spec import EstimateSpec
from sampleval.selection import METHODS, Budget, qrels_oracle, simulate

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parents[2] / "shared" / "data"
RTOL = 1e-12
"""Relative tolerance of the comparison: the estimates are deterministic float64 arithmetic
on fixed inputs, so a rewrite that computes the same formulas moves them only by reordered
sums (a few ulps, ~1e-15 relative, times the conditioning of a ratio or a difference); any
change of formula, correction, variance or default moves them by far more (1e-6 and up)."""
ATOL = 1e-13
"""Absolute floor for values that are 0 up to rounding (a difference estimate, a lo at 0)."""
COLUMNS = ["collection", "design", "family", "measure", "run", "value", "lo", "hi"]
PREFERRED = {"stratified": "stratified", "with-replacement": "active",
             "importance": "importance"}
"""The selection method whose sample stands for a design (else the first of that design)."""
CUTOFF = 10
DRAWN_SEED = 11


@dataclass(frozen=True)
class Collection:
    """Runs, complete labels of their pool (unjudged: 0) and the samples' budget."""

    name: str
    runs: list[Run]
    qrels: Qrels
    depth: int
    budget: int


def synthetic() -> Collection:
    """``sampleval.datasets.synthetic``: 6 topics, 6 runs, pooled and estimated at depth 20."""
    from sampleval.datasets.synthetic import make_collection

    made = make_collection(np.random.default_rng(2026), n_topics=6, n_runs=6, n_docs=300,
                           depth=30, pool_depth=20)
    runs = [Run.from_frame(frame, name) for name, frame in sorted(made.runs.items())]
    return Collection("synthetic", runs, _complete(made.qrels, runs, 20), 20, 24)


def covid(root: Path = SHARED_DATA) -> Collection | None:
    """TREC-COVID round 5: its first 5 topics, the first 6 runs by file name, depth 15,
    labels from the round-5 qrels (None when ../shared/data is missing)."""
    from sampleval.io import read_qrels, read_runs

    base = root / "trec-covid"
    if not base.exists():
        return None
    files = sorted((base / "round5" / "runs").iterdir())[:6]
    runs = read_runs([str(f) for f in files])
    topics = sorted({t for r in runs for t in r.to_frame()["query_id"]}, key=int)[:5]
    cut = []
    for run in runs:
        frame = run.to_frame()
        frame = frame[frame["query_id"].isin(topics)]
        cut.append(Run.from_frame(frame[["query_id", "doc_id", "score"]], run.name))
    qrels = read_qrels(base / "qrels" / "qrels.covid-round5.txt")
    return Collection("covid", cut, _complete(qrels.frame, cut, 15), 15, 20)


def _complete(qrels: pd.DataFrame, runs: list[Run], depth: int) -> Qrels:
    """A label for every document of the depth-``depth`` pool (0 where the qrels have none
    or mark it unjudged)."""
    pool = Pool.from_runs(runs, depth=depth)
    pooled = pd.concat([pd.DataFrame({"query_id": tp.topic, "doc_id": pool.docnos_of(tp.topic)})
                        for tp in pool])
    judged = qrels[["query_id", "doc_id", "relevance"]]
    frame = pooled.merge(judged, how="left", on=["query_id", "doc_id"])
    grade = frame["relevance"].fillna(0).clip(lower=0).astype(int)
    return Qrels.from_frame(frame.assign(relevance=grade))


def design_sample(collection: Collection, design: str) -> Sample | None:
    """A sample of ``design`` of the collection's pool (None when none can be made)."""
    pool = Pool.from_runs(collection.runs, depth=collection.depth)
    methods = [n for n in METHODS if METHODS[n].design == design]
    name = PREFERRED.get(design, methods[0] if methods else None)
    if name is not None:
        selector = METHODS[name](pool, Budget(count=collection.budget),
                                 np.random.default_rng(DRAWN_SEED))
        return simulate(selector, qrels_oracle(collection.qrels)).sample()
    frame = collection.qrels.frame[["query_id", "doc_id", "relevance"]]
    frame = frame.assign(relevance=frame["relevance"].astype(float), stratum="")
    if design == "census":
        return Sample("census", frame.assign(inclusion=1.0))
    if design in ("poisson", "inclusion"):
        rng = np.random.default_rng(DRAWN_SEED)
        pi = rng.uniform(0.2, 0.9, len(frame))
        kept = rng.random(len(frame)) < pi
        return Sample(design, frame.assign(
            relevance=np.where(kept, frame["relevance"], np.nan), inclusion=pi))
    return None


def predictions(collection: Collection) -> pd.DataFrame:
    """Informative, noisy predictions of every pooled document: half its grade over the
    largest, half uniform noise (seeded)."""
    frame = collection.qrels.frame
    top = max(1.0, float(frame["relevance"].max()))
    noise = np.random.default_rng(5).uniform(0, 1, len(frame))
    return frame[["query_id", "doc_id"]].assign(
        prediction=top * (0.5 * frame["relevance"].to_numpy() / top + 0.5 * noise))


def specs(family: EstimatorFamily, base: Base) -> Iterator[EstimateSpec]:
    """The base at its default options, then with each value of each option it takes (the
    others at their defaults); without and with a cutoff where it is optional."""
    cutoffs = {"no": [None], "optional": [None, CUTOFF], "required": [CUTOFF]}[base.cutoff]
    for cutoff in cutoffs:
        yield EstimateSpec(family.name, base.name, cutoff)
        for option in base.options:
            declared = family.option(option, base.name)
            assert declared is not None and declared.choices, (family.name, option)
            for value in declared.choices:
                if value != declared.default:
                    yield EstimateSpec(family.name, base.name, cutoff, ((option, value),))


def groups() -> Iterator[tuple[str, str]]:
    """(design, family) of every family and every design it accepts."""
    for family in FAMILIES.values():
        for design in DESIGNS:
            if design in family.designs:
                yield design, family.name


def cell_table(collection: Collection, design: str, family_name: str,
               samples: dict[str, Sample | None]) -> pd.DataFrame:
    """The ``all`` rows of every measure of ``family_name`` on the design's sample (made
    once into ``samples``), then the measures the family refuses there (run ``-``, no
    numbers)."""
    if design not in samples:
        samples[design] = design_sample(collection, design)
    sample = samples[design]
    family = FAMILIES[family_name]
    names = [s.name for b in family.bases for s in specs(family, b)]
    if sample is None:
        return pd.DataFrame(columns=COLUMNS)
    given = predictions(collection) if family.needs_predictions else None
    refused: list[str] = []
    while True:  # an option value made for other designs refuses in one line, naming it
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = estimate(sample, collection.runs, names, depth=collection.depth,
                               predictions=given)
            break
        except UsageError as error:
            named = [n for n in names if str(error).startswith(f"{n}: ")]
            if not named:
                raise
            refused.append(named[0])
            names.remove(named[0])
    out = out[out["query_id"] == MEAN_TOPIC]
    no = pd.DataFrame({"measure": refused, "run": "-", "value": np.nan, "lo": np.nan,
                       "hi": np.nan})
    out = pd.concat([out, no], ignore_index=True) if refused else out
    return out.assign(collection=collection.name, design=design, family=family_name)[COLUMNS]


def build(collection: Collection) -> pd.DataFrame:
    """The golden table of one collection."""
    samples: dict[str, Sample | None] = {}
    parts = [cell_table(collection, design, family, samples) for design, family in groups()]
    return pd.concat(parts, ignore_index=True)


def path_of(name: str) -> Path:
    return HERE / f"{name}.parquet"


def write(table: pd.DataFrame, path: Path) -> None:
    """Parquet, float64 exact (zstd, byte-stream-split floats: a few hundred KB)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), path,
                   compression="zstd", compression_level=19,
                   use_dictionary=["collection", "design", "family", "measure", "run"],
                   use_byte_stream_split=["value", "lo", "hi"])


def read(path: Path) -> pd.DataFrame:
    return pd.read_parquet(path).reindex(columns=COLUMNS)


def differences(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Per cell (collection, design, measure) that differs: its state in each table
    (``rows``, ``refused``, ``missing``) and the largest relative change of value, lo or hi
    over its runs (inf where a number appeared or vanished)."""
    key = ["collection", "design", "measure", "run"]
    both = old.drop(columns="family").merge(new.drop(columns="family"), how="outer", on=key,
                                            suffixes=("_old", "_new"), indicator=True)
    moved = np.zeros(len(both))
    beyond = np.array(both["_merge"] != "both", dtype=bool)
    for column in ("value", "lo", "hi"):
        a = both[f"{column}_old"].to_numpy(dtype=np.float64)
        b = both[f"{column}_new"].to_numpy(dtype=np.float64)
        same_nan = np.isnan(a) & np.isnan(b)
        beyond |= ~(np.isclose(b, a, rtol=RTOL, atol=ATOL) | same_nan)
        change = np.abs(b - a) / np.maximum(np.abs(a), ATOL)
        moved = np.fmax(moved, np.where(same_nan, 0.0, np.nan_to_num(change, nan=np.inf)))
    refused = (both["run"] == "-").to_numpy()
    in_old = (both["_merge"] != "right_only").to_numpy()
    in_new = (both["_merge"] != "left_only").to_numpy()
    rows = both[key[:3]].assign(moved=moved, beyond=beyond, in_old=in_old, in_new=in_new,
                                refused_old=in_old & refused, refused_new=in_new & refused)
    cells = rows.groupby(key[:3], sort=False).agg(
        {"moved": "max", "beyond": "any", "in_old": "any", "in_new": "any",
         "refused_old": "any", "refused_new": "any"}).reset_index()
    for side in ("old", "new"):
        cells[side] = np.where(~cells[f"in_{side}"], "missing",
                               np.where(cells[f"refused_{side}"], "refused", "rows"))
    return cells.loc[cells["beyond"], [*key[:3], "old", "new", "moved"]]


def summary(cells: pd.DataFrame, limit: int = 40) -> str:
    """A few lines saying which cells moved."""
    if cells.empty:
        return "golden: no cell moved"
    lines = [f"golden: {len(cells)} cells differ"]
    for (old, new), group in cells.groupby(["old", "new"], sort=False):
        what = "moved" if old == new == "rows" else f"{old} -> {new}"
        lines.append(f"  {what}: {len(group)} cells")
    shown = cells.sort_values("moved", ascending=False).head(limit)
    for row in shown.itertuples():
        change = "" if row.old != row.new else f"  max rel change {row.moved:.3g}"
        lines.append(f"  {row.collection:9} {row.design:16} {row.measure:40} "
                     f"{row.old} -> {row.new}{change}")
    if len(cells) > limit:
        lines.append(f"  ... and {len(cells) - limit} more")
    return "\n".join(lines)


def collections() -> list[Collection]:
    return [c for c in (synthetic(), covid()) if c is not None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the stored files; write nothing")
    args = parser.parse_args(argv)
    status = 0
    for collection in collections():
        new = build(collection)
        path = path_of(collection.name)
        old = read(path) if path.exists() else new.iloc[:0]
        cells = differences(old, new)
        print(f"{collection.name}: {len(new)} rows")
        print(summary(cells))
        if args.check:
            status |= int(not cells.empty)
        else:
            write(new, path)
            print(f"wrote {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
