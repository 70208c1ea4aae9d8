"""sampleval vs pytrec_eval, end to end, on TREC-COVID round 5 (126 runs).

Both tools read every run file and the qrels, then compute AP, P@20, nDCG@20, Rprec and Bpref
for every run and topic. The script checks that they agree, times each of sampleval's phases
and, as a floor, the time just to gunzip the run files into bytes.

    .venv/bin/python benchmarks/evaluate_vs_pytrec_eval.py [--data DIR] [--repeat N]

``--data`` is the ``trec-covid`` directory (default: ``../shared/data/trec-covid`` next to the
repository). Each repeat runs both tools, alternating which goes first so that the page cache
and allocator warm-up favour neither; the best of the repeats is reported for each.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytrec_eval
from rich.console import Console
from rich.table import Table

from sampleval.core.pool import Pool
from sampleval.evaluation import MEAN_TOPIC, evaluate
from sampleval.io.qrels import read_qrels
from sampleval.io.runs import read_runs
from sampleval.measures.names import parse_measures

MEASURES = ("AP", "P@20", "nDCG@20", "Rprec", "Bpref")
PYTREC_MEASURES = {"map", "P.20", "ndcg_cut.20", "Rprec", "bpref"}
TOLERANCE = 1e-9
RUNS_GLOB = "round5/runs/*.gz"
QRELS_FILE = "qrels/qrels.covid-round5.txt"
DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "trec-covid"


@dataclass
class Timed:
    """One tool's pass: seconds per phase (in order) and what the pass produced."""

    phases: dict[str, float] = field(default_factory=dict)
    output: Any = None

    @property
    def total(self) -> float:
        return sum(self.phases.values())


class Clock:
    """Seconds since the last lap, with time.perf_counter."""

    def __init__(self) -> None:
        self.last = time.perf_counter()

    def lap(self) -> float:
        now = time.perf_counter()
        elapsed, self.last = now - self.last, now
        return elapsed


def run_sampleval(run_paths: list[Path], qrels_path: Path) -> Timed:
    out = Timed()
    clock = Clock()
    runs = read_runs(run_paths)
    out.phases["read runs"] = clock.lap()
    qrels = read_qrels(qrels_path)
    out.phases["read qrels"] = clock.lap()
    pool = Pool.from_runs(runs, qrels=qrels, topics=qrels.topics)
    out.phases["build Pool"] = clock.lap()
    results = evaluate(qrels, pool, MEASURES)
    out.phases["compute measures"] = clock.lap()
    out.output = (runs, results)
    return out


def run_pytrec_eval(run_paths: list[Path], qrels_path: Path) -> Timed:
    out = Timed()
    clock = Clock()
    with qrels_path.open() as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    out.phases["parse qrels"] = clock.lap()
    runs = {}
    for path in run_paths:
        with gzip.open(path, "rt") as fh:
            runs[path] = pytrec_eval.parse_run(fh)
    out.phases["parse runs"] = clock.lap()
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES)
    out.phases["build evaluator"] = clock.lap()
    results = {path: evaluator.evaluate(run) for path, run in runs.items()}
    out.phases["evaluate"] = clock.lap()
    out.output = results
    return out


def gunzip_floor(run_paths: list[Path]) -> float:
    clock = Clock()
    total = sum(len(gzip.decompress(p.read_bytes())) for p in run_paths)
    assert total > 0
    return clock.lap()


def max_difference(sampleval_out: Any, pytrec_out: dict[Path, dict[str, dict[str, float]]]
                   ) -> tuple[float, int, str]:
    """Largest |sampleval - pytrec_eval| over runs x topics x measures (and the runs' means),
    how many values were compared, and where the largest difference is."""
    runs, results = sampleval_out
    trec_name = {str(m): m.trec_name for m in parse_measures(list(MEASURES))}
    by_name = {r.name: Path(r.source) for r in runs}
    theirs: dict[tuple[str, str, str], float] = {}
    for name, path in by_name.items():
        for topic, values in pytrec_out[path].items():
            for measure, trec in trec_name.items():
                theirs[(name, topic, measure)] = values[trec]
    ours = {(r, q, m): v for r, q, m, v in results[results["query_id"] != MEAN_TOPIC]
            .itertuples(index=False, name=None)}
    if ours.keys() != theirs.keys():
        only_ours, only_theirs = ours.keys() - theirs.keys(), theirs.keys() - ours.keys()
        sys.exit(f"FAIL: the tools evaluated different (run, topic, measure) sets: "
                 f"{len(only_ours)} only in sampleval (e.g. {sorted(only_ours)[:3]}), "
                 f"{len(only_theirs)} only in pytrec_eval (e.g. {sorted(only_theirs)[:3]})")
    worst, where = 0.0, "-"
    for key, value in ours.items():
        diff = abs(value - theirs[key])
        if not diff <= worst:  # NaN counts as a failure too
            worst, where = (math.inf if math.isnan(diff) else diff), " / ".join(key)
    # The means over topics: pytrec_eval gives per-topic values, so average them here.
    means = results[results["query_id"] == MEAN_TOPIC]
    for name, measure, value in means[["run", "measure", "value"]].itertuples(
            index=False, name=None):
        per_topic = [v[trec_name[measure]] for v in pytrec_out[by_name[name]].values()]
        diff = abs(value - math.fsum(per_topic) / len(per_topic))
        if not diff <= worst:
            worst, where = (math.inf if math.isnan(diff) else diff), f"{name} / mean / {measure}"
    return worst, len(ours) + len(means), where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="the trec-covid directory (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=3, help="passes per tool (best is kept)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    data: Path = args.data
    qrels_path = data / QRELS_FILE
    run_paths = sorted(data.glob(RUNS_GLOB))
    if not qrels_path.is_file() or not run_paths:
        sys.exit(f"TREC-COVID data not found: need {data / RUNS_GLOB} and {qrels_path} "
                 f"(pass --data DIR)")

    console = Console(soft_wrap=True)
    console.print(f"TREC-COVID round 5: {len(run_paths)} runs, qrels {qrels_path.name}; "
                  f"measures {', '.join(MEASURES)}; {args.repeat} repeat(s)")
    tools: dict[str, Callable[[list[Path], Path], Timed]] = {
        "sampleval": run_sampleval, "pytrec_eval": run_pytrec_eval}
    passes: dict[str, list[Timed]] = {name: [] for name in tools}
    floors: list[float] = []
    for i in range(args.repeat):
        order = list(tools) if i % 2 == 0 else list(reversed(tools))
        for name in order:
            gc.collect()
            timed = tools[name](run_paths, qrels_path)
            if i > 0:
                timed.output = None  # only the first pass's outputs are compared
            passes[name].append(timed)
            console.print(f"  repeat {i + 1}: {name:<11} {timed.total:7.2f} s")
        gc.collect()
        floors.append(gunzip_floor(run_paths))

    worst, compared, where = max_difference(passes["sampleval"][0].output,
                                            passes["pytrec_eval"][0].output)
    for timed in (passes["sampleval"][0], passes["pytrec_eval"][0]):
        timed.output = None

    best = {name: min(ps, key=lambda t: t.total) for name, ps in passes.items()}
    for name in tools:
        table = Table(title=f"{name}: best of {args.repeat} (seconds)", title_justify="left")
        table.add_column("phase")
        table.add_column("best pass", justify="right")
        table.add_column("min per phase", justify="right")
        for phase, seconds in best[name].phases.items():
            fastest = min(t.phases[phase] for t in passes[name])
            table.add_row(phase, f"{seconds:.3f}", f"{fastest:.3f}")
        table.add_row("total", f"{best[name].total:.3f}", "", style="bold")
        console.print(table)
    floor = min(floors)
    s_best, p_best = best["sampleval"].total, best["pytrec_eval"].total
    console.print(f"floor, gunzip all run files to bytes: {floor:.3f} s (best of {len(floors)}); "
                  f"sampleval reads runs in {best['sampleval'].phases['read runs'] / floor:.1f}x "
                  f"that, end to end {s_best / floor:.1f}x")
    for i in range(args.repeat):
        s, p = passes["sampleval"][i].total, passes["pytrec_eval"][i].total
        console.print(f"repeat {i + 1}: sampleval {s:.2f} s, pytrec_eval {p:.2f} s, "
                      f"ratio {p / s:.2f}x")
    console.print(f"end to end (best of {args.repeat}): sampleval {s_best:.2f} s, "
                  f"pytrec_eval {p_best:.2f} s")
    console.print(f"speed-up: {p_best / s_best:.1f}x  (pytrec_eval / sampleval)", style="bold")
    console.print(f"max abs difference: {worst:.3g} over {compared} values "
                  f"(runs x topics x measures, and each run's means); largest at {where}")
    if not worst <= TOLERANCE:
        console.print(f"FAIL: sampleval and pytrec_eval differ by {worst:.3g} > {TOLERANCE:g} "
                      f"({where})", style="bold red")
        sys.exit(1)
    console.print(f"agree within {TOLERANCE:g}", style="green")


if __name__ == "__main__":
    main()
