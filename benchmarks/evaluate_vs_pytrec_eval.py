"""sampleval vs pytrec_eval as a user runs them, on TREC-COVID round 5 (126 runs), in one run.

- evaluate: ``sampleval evaluate QRELS RUN... -m AP,P@20,nDCG@20,Rprec,Bpref -f tsv -q`` as a
  command, against ``benchmarks/pytrec_eval_evaluate.py`` (a script that parses the qrels and
  every gzipped run with pytrec_eval and evaluates them with one ``RelevanceEvaluator``), each
  a fresh process: wall time, CPU time (user + system, all threads: on a loaded machine the
  steadier figure) and peak memory (the process's maximum resident set size);
- startup: ``sampleval --help`` and ``sampleval evaluate --help`` against ``python -c pass``;
- the floor: inflating every run file into memory on 2 threads, with zlib and with ISA-L.

    .venv/bin/python benchmarks/evaluate_vs_pytrec_eval.py [--data DIR] [--repeat N]

The tools run in turn, alternating which goes first; medians of the repeats are reported with
their ratios. The script fails (exit 1) unless both tools print the same values within 1e-9
for every run, topic and measure. Quote it with the machine's load (printed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from isal import isal_zlib

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "trec-covid"
SAMPLEVAL = Path(sys.executable).parent / "sampleval"
MEASURES = "AP,P@20,nDCG@20,Rprec,Bpref"
TOLERANCE = 1e-9


def timed(command: list[str], output: Path | None = None) -> tuple[float, float, float]:
    """Wall seconds, peak resident memory (MB) and CPU seconds (user + system) of one run of
    ``command`` (its standard output to ``output``); a failing command stops the
    benchmark."""
    with open(output or os.devnull, "wb") as out:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"FAIL: {' '.join(command[:3])} ... exited {process.returncode}: "
                 f"{process.stderr.read().decode() if process.stderr else ''}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime  # maxrss: KB


def values(path: Path) -> dict[tuple[str, str, str], float]:
    """(run, topic, measure) -> value of a ``run topic measure value`` TSV (header optional,
    means over topics left out)."""
    out = {}
    for line in path.read_text().splitlines():
        run, topic, measure, value = line.split("\t")
        if topic not in ("all", "topic"):
            out[(run, topic, measure)] = float(value)
    return out


def inflate_floor(paths: list[Path], inflate: Callable[[bytes], bytes]) -> float:
    """Seconds to inflate every file into memory on 2 threads (files already read)."""
    blobs = [p.read_bytes() for p in paths]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as workers:
        total = sum(len(b) for b in workers.map(inflate, blobs))
    assert total > 0
    return time.perf_counter() - start


def median_line(name: str, figures: list[float], unit: str = "s") -> str:
    low, mid, high = min(figures), statistics.median(figures), max(figures)
    return f"{name:<34} median {mid:7.3f} {unit}  (min {low:.3f}, max {high:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="the trec-covid directory (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command")
    args = parser.parse_args()
    qrels = args.data / "qrels" / "qrels.covid-round5.txt"
    runs = sorted((args.data / "round5" / "runs").glob("*.gz"))
    if not qrels.is_file() or not runs:
        sys.exit(f"TREC-COVID data not found under {args.data} (pass --data DIR)")
    print(f"{len(runs)} runs, {qrels.name}; measures {MEASURES}; {args.repeat} repeats; "
          f"load average before: {os.getloadavg()[0]:.2f}")

    startup = {"python -c pass": [sys.executable, "-c", "pass"],
               "sampleval --help": [str(SAMPLEVAL), "--help"],
               "sampleval evaluate --help": [str(SAMPLEVAL), "evaluate", "--help"]}
    start_times: dict[str, list[float]] = {name: [] for name in startup}
    for command in startup.values():
        timed(command)  # warm-up: page cache
    for _ in range(max(args.repeat, 5)):
        for name, command in startup.items():
            start_times[name].append(timed(command)[0])

    with tempfile.TemporaryDirectory() as tmp:
        outputs = {"sampleval": Path(tmp) / "sampleval.tsv",
                   "pytrec_eval": Path(tmp) / "pytrec_eval.tsv"}
        commands = {
            "sampleval": [str(SAMPLEVAL), "evaluate", str(qrels), *map(str, runs), "-m",
                          MEASURES, "-f", "tsv", "-q", "--name-by", "file"],
            "pytrec_eval": [sys.executable, str(HERE / "pytrec_eval_evaluate.py"), str(qrels),
                            *map(str, runs)],
        }
        walls: dict[str, list[float]] = {name: [] for name in commands}
        peaks: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        timed(commands["sampleval"], outputs["sampleval"])  # warm-up: page cache
        for i in range(args.repeat):
            for name in (list(commands) if i % 2 == 0 else list(reversed(commands))):
                wall, peak, cpu = timed(commands[name], outputs[name])
                walls[name].append(wall)
                peaks[name].append(peak)
                cpus[name].append(cpu)
        ours, theirs = values(outputs["sampleval"]), values(outputs["pytrec_eval"])
    floors = {"zlib, 2 threads": inflate_floor(runs, lambda b: zlib.decompress(b, wbits=31)),
              "ISA-L, 2 threads": inflate_floor(
                  runs, lambda b: isal_zlib.decompress(b, wbits=31))}

    print("\nstartup (wall, fresh process each):")
    for name, figures in start_times.items():
        print("  " + median_line(name, figures))
    base = statistics.median(start_times["python -c pass"])
    for name in ("sampleval --help", "sampleval evaluate --help"):
        print(f"  {name}: {statistics.median(start_times[name]) / base:.1f}x python -c pass")

    print("\nevaluate all runs (wall, fresh process each):")
    for name in commands:
        print("  " + median_line(name, walls[name]))
        print("  " + median_line(f"{name} CPU", cpus[name]))
        print("  " + median_line(f"{name} peak memory", peaks[name], "MB"))
    for what, by_tool in (("wall", walls), ("CPU", cpus)):
        ratios = [s / p for s, p in zip(by_tool["sampleval"], by_tool["pytrec_eval"],
                                        strict=True)]
        print(f"  sampleval / pytrec_eval, {what}: {statistics.median(ratios):.3f} (median of "
              f"pairs; {min(ratios):.3f}-{max(ratios):.3f})")

    print("\ninflate every run file into memory:")
    for name, seconds in floors.items():
        print(f"  {name:<24} {seconds:.3f} s")
    ours_median = statistics.median(walls["sampleval"])
    print(f"  sampleval evaluate takes {ours_median / floors['ISA-L, 2 threads']:.1f}x the "
          f"ISA-L floor, {ours_median / floors['zlib, 2 threads']:.1f}x zlib's")
    print(f"load average after: {os.getloadavg()[0]:.2f}")

    if ours.keys() != theirs.keys():
        sys.exit(f"FAIL: different (run, topic, measure) sets: {len(ours)} vs {len(theirs)}")
    worst = max(abs(v - theirs[k]) for k, v in ours.items())
    print(f"max abs difference over {len(ours)} values: {worst:.3g}")
    if not worst <= TOLERANCE:
        sys.exit(f"FAIL: the tools differ by {worst:.3g} > {TOLERANCE:g}")


if __name__ == "__main__":
    main()
