"""The interpreter lock's convoy, as the campaign server meets it: a thread that lets the
lock go for short system calls (a commit's writes and flush, a socket's read, a wait for the
group commit) beside a thread computing in Python (``dynamic``'s classifier fit,
:func:`sampleval.selection.dynamic.logistic_scores`, on 12 features as in
``campaign_load.py``'s campaign), for a few switch intervals (``sys.setswitchinterval``).

Each round, the first thread makes ``--calls`` blocking calls of 0.1 ms (``time.sleep``:
it lets the lock go, as ``sqlite3``'s step and ``fsync`` do) and the round's wall time is
recorded; the computing thread fits all along. Alone, a round takes ``--calls`` x the call
(about 0.1-0.2 ms each); beside the fits, each call's return waits for the lock until the
fitting thread's interval is up. Prints the p50/p99 of a round's wall time per interval,
and how many fits the computing thread made (what the shorter interval costs it).

    .venv/bin/python benchmarks/campaign_convoy.py [--calls 30] [--rounds 200]
        [--intervals 5,1,0.5]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable

import numpy as np

from sampleval.campaign.server import single_threaded_blas
from sampleval.campaign.simulation import percentile
from sampleval.selection.dynamic import logistic_scores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=30,
                        help="blocking calls per round (the lock let go and taken back)")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--intervals", default="5,1,0.5",
                        help="switch intervals to try, milliseconds, comma-separated")
    args = parser.parse_args()
    single_threaded_blas()
    rng = np.random.default_rng(1)
    x = rng.random((400, 12))
    y = np.where(rng.random(400) < 0.1, 1.0, -1.0)
    weight = np.ones(400)
    print(f"{args.calls} calls of 0.1 ms per round, {args.rounds} rounds; beside: a thread "
          "fitting dynamic's classifier (400 x 12) in a loop")
    alone = rounds(args.calls, args.rounds, None)
    print(f"alone:                 round p50 {alone[0]:6.1f} ms, p99 {alone[1]:6.1f} ms")
    default = sys.getswitchinterval()
    try:
        for interval in (float(v) for v in args.intervals.split(",")):
            sys.setswitchinterval(interval / 1000)
            p50, p99, fits = rounds(args.calls, args.rounds,
                                    lambda: logistic_scores(x, y, weight, x))
            print(f"switch interval {interval:3g} ms: round p50 {p50:6.1f} ms, p99 "
                  f"{p99:6.1f} ms; fits per second beside {fits:5.0f}")
    finally:
        sys.setswitchinterval(default)
    return 0


def rounds(calls: int, count: int, work: Callable[[], object] | None
           ) -> tuple[float, float, float]:
    """p50 and p99 (ms) of a round's wall time, and the computing thread's fits per second
    (0 without one)."""
    stop = threading.Event()
    fits = 0

    def compute() -> None:
        nonlocal fits
        while work is not None and not stop.is_set():
            work()
            fits += 1

    thread = threading.Thread(target=compute) if work is not None else None
    if thread is not None:
        thread.start()
    begun = time.perf_counter()
    walls = []
    try:
        for _ in range(count):
            start = time.perf_counter()
            for _ in range(calls):
                time.sleep(0.0001)
            walls.append(time.perf_counter() - start)
    finally:
        stop.set()
        if thread is not None:
            thread.join()
    seconds = time.perf_counter() - begun
    return (percentile(walls, 0.5) * 1000, percentile(walls, 0.99) * 1000,
            fits / seconds)


if __name__ == "__main__":
    sys.exit(main())
