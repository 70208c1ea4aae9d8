"""``sampleval trec_eval -m all_trec`` vs pytrec_eval on one TREC-COVID round-5 run, and the
agreement of sampleval's measures with pytrec_eval's.

Timing: both tools as a user runs them, each a fresh process reading the qrels and one gzipped
run and printing every all_trec measure: ``sampleval trec_eval -m all_trec QRELS RUN`` and a
Python script that parses with pytrec_eval, evaluates ``{'all_trec'}`` and prints the means.
The two alternate (A B A B ...); the median of each and the median of the pairwise ratios are
printed, with the load average before and after (quote it with the figures). NIST's trec_eval
10.0 is timed too when found (``--trec-eval PATH``, else the build of
``scripts/build_trec_eval.sh`` in ``~/.cache/sampleval``, else ``trec_eval`` on PATH), on the
run unzipped (trec_eval reads plain files only), with the ratio sampleval / trec_eval.

Agreement (``--agreement``): ``sampleval.measures.evaluation.evaluate`` on every round-5 run for each
trec_eval measure pytrec_eval computes, per topic and mean, against pytrec_eval; prints the
largest absolute difference per measure. Interpolated precision (iprec_at_recall, 11pt_avg)
is compared on the topics where trec_eval 10's round(x R) and pytrec_eval's (trec_eval 9.0)
int(x R + 0.9) pick the same relevant document, and the other topics are counted.

    .venv/bin/python benchmarks/trec_eval_vs_pytrec_eval.py [--data DIR] [--run NAME]
        [--repeat N] [--trec-eval PATH] [--agreement]
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "trec-covid"
QRELS_FILE = "qrels/qrels.covid-round5.txt"
RUN_DIR = "round5/runs"
PYTREC_SCRIPT = """
import gzip, sys, pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with gzip.open(sys.argv[2], 'rt') as f:
    run = pytrec_eval.parse_run(f)
per_topic = pytrec_eval.RelevanceEvaluator(qrels, {'all_trec'}).evaluate(run)
names = sorted(next(iter(per_topic.values())))
for name in names:
    values = [v[name] for v in per_topic.values()]
    print(name, pytrec_eval.compute_aggregated_measure(name, values), sep='\\t')
"""


def timed(command: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU (user + system) seconds of one run of ``command`` (output
    discarded; must succeed)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"FAIL: {' '.join(command[:3])} ... exited {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime


def timing(data: Path, run_name: str, repeat: int, trec_eval: str | None) -> None:
    qrels = data / QRELS_FILE
    run = data / RUN_DIR / f"{run_name}.gz"
    sampleval = str(Path(sys.executable).parent / "sampleval")
    commands = {
        "sampleval trec_eval": [sampleval, "trec_eval", "-m", "all_trec", str(qrels), str(run)],
        "pytrec_eval": [sys.executable, "-c", PYTREC_SCRIPT, str(qrels), str(run)],
    }
    with tempfile.TemporaryDirectory() as tmp:
        if trec_eval:
            plain = Path(tmp) / run_name
            with gzip.open(run, "rb") as source, plain.open("wb") as target:
                shutil.copyfileobj(source, target)
            commands["trec_eval (C)"] = [trec_eval, "-m", "all_trec", str(qrels), str(plain)]
        for command in commands.values():  # warm-up: page cache
            timed(command)
        times: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(repeat):
            for name, command in commands.items():
                wall, cpu = timed(command)
                times[name].append(wall)
                cpus[name].append(cpu)
    print(f"one run ({run_name}), -m all_trec, {repeat} alternating passes, median seconds "
          "(wall; CPU, user + system):")
    for name, values in times.items():
        print(f"  {name:<20} {statistics.median(values):7.3f}  "
              f"(min {min(values):.3f}, max {max(values):.3f}); "
              f"CPU {statistics.median(cpus[name]):.3f}")
    peers = ["pytrec_eval"] + (["trec_eval (C)"] if "trec_eval (C)" in times else [])
    for peer in peers:
        for what, figures in (("wall", times), ("CPU", cpus)):
            ratios = [s / p for s, p in zip(figures["sampleval trec_eval"], figures[peer],
                                            strict=True)]
            print(f"  sampleval / {peer}, {what}, median of pairwise ratios: "
                  f"{statistics.median(ratios):.2f}")


def built_trec_eval() -> str | None:
    """The trec_eval binary to time: scripts/build_trec_eval.sh's build, or one on PATH."""
    cache = Path(os.environ.get("SAMPLEVAL_CACHE") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sampleval")
    built = cache / "trec_eval-10.0" / "trec_eval"
    return str(built) if os.access(built, os.X_OK) else shutil.which("trec_eval")


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def agreement(data: Path) -> int:
    import numpy as np
    import pytrec_eval

    from sampleval.io import read_qrels, read_runs
    from sampleval.measures.evaluation import MEAN_TOPIC, evaluate
    from sampleval.measures.names import SPECS, Measure

    qrels_path = data / QRELS_FILE
    paths = sorted((data / RUN_DIR).glob("*.gz"))
    with qrels_path.open() as fh:
        ref_qrels = pytrec_eval.parse_qrel(fh)
    ref_runs = {}
    for path in paths:
        with gzip.open(path, "rt") as fh:
            ref_runs[fh.readline().split()[5]] = path
    names = {}  # pytrec_eval name -> our measure
    for spec in SPECS:
        if spec.library and spec.trec in pytrec_eval.supported_measures:
            if spec.trec_params in ("counts", "shares"):
                cast = float if spec.trec_params == "shares" else int
                for cut in spec.trec_default.split(","):
                    measure = Measure(spec.key, cast(cut))
                    names[measure.trec_name] = measure
            else:
                names[spec.trec] = Measure(spec.key)
    qrels = read_qrels(qrels_path)
    judged = qrels.judged()
    r = judged.assign(rel=judged["relevance"] >= 1).groupby("query_id")["rel"].sum()
    levels = [i / 10 for i in range(11)]
    same = {t for t, n in r.items()
            if all(math.floor(x * n + 0.5) == int(x * n + 0.9) for x in levels)}
    evaluator = pytrec_eval.RelevanceEvaluator(ref_qrels, {"all_trec"})
    worst: dict[str, float] = {}
    compared: dict[str, int] = {}
    for run in read_runs(paths):
        with gzip.open(ref_runs[run.name], "rt") as fh:
            theirs = evaluator.evaluate(pytrec_eval.parse_run(fh))
        ours = evaluate(qrels, [run], list(names.values()))
        table = ours.set_index(["query_id", "measure"])["value"]
        for trec, measure in names.items():
            interpolated = trec.startswith(("iprec_at_recall", "11pt_avg"))
            values = []
            for topic, row in theirs.items():
                mine = table[(topic, str(measure))]
                if measure.aggregate == "gmean":
                    mine = math.log(max(mine, 1e-5))
                values.append(row[trec])
                if interpolated and topic not in same:
                    continue
                worst[trec] = max(worst.get(trec, 0.0), abs(mine - row[trec]))
                compared[trec] = compared.get(trec, 0) + 1
            if not interpolated:
                mean = pytrec_eval.compute_aggregated_measure(trec, values)
                diff = abs(table[(MEAN_TOPIC, str(measure))] - mean)
                worst[trec] = max(worst[trec], diff)
    print(f"agreement with pytrec_eval on {len(paths)} round-5 runs ({len(r)} topics; "
          f"interpolated precision on the {len(same)} topics where the two rules agree):")
    for trec in names:
        print(f"  {trec:<24} max |difference| {worst[trec]:.1e} over {compared[trec]} values")
    largest = max(worst.values())
    print(f"largest: {largest:.1e}")
    return 0 if largest <= 1e-9 and np.isfinite(largest) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="the trec-covid directory (default: ../shared/data/trec-covid)")
    parser.add_argument("--run", default="BRPHJ_BM25", help="round-5 run to time (file name "
                                                            "without .gz)")
    parser.add_argument("--repeat", type=int, default=5, help="timed passes per tool")
    parser.add_argument("--trec-eval", default=built_trec_eval(),
                        help="a trec_eval binary to time as well (default: the build of "
                             "scripts/build_trec_eval.sh, else trec_eval on PATH)")
    parser.add_argument("--agreement", action="store_true",
                        help="also compare every measure pytrec_eval has, on every run")
    args = parser.parse_args()
    if not (args.data / QRELS_FILE).exists():
        print(f"TREC-COVID data missing: {args.data / QRELS_FILE}", file=sys.stderr)
        return 2
    print(f"before: {load()} (2 cores: other jobs change the wall times)")
    timing(args.data, args.run, args.repeat, args.trec_eval)
    print(f"after: {load()}")
    return agreement(args.data) if args.agreement else 0


if __name__ == "__main__":
    sys.exit(main())
