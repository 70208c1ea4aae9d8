"""What a judgment costs the campaign server's interpreter, by step, in this process: the
campaign of ``campaign_load.py`` (its synthetic collection: 32 topics, 12 runs, pooled to
depth 100; ``--judgments`` in all), one oracle assessor per topic, judging in turn through
the service layer (``CampaignService.judge_and_offer``, the API's call), each judgment timed
with the steps its ``Server-Timing`` would name (:mod:`sampleval.campaign.timing`: the
handler's CPU, ``labels``, ``observe``, ``propose``, ``save``, ``commit``...).

A judgment that completes its batch (``batch``: the selector observes it and proposes the
next) is what ``dynamic``'s bursts are made of (docs/research/campaign-load.md, thirteenth
round). Besides the handler's own CPU (``cpu``), ``process cpu`` is the whole process's CPU
time over the call: the group commit's thread writing the judgment (and the batch) is in it,
and all of it holds the interpreter lock but for the system calls (the flush). One process,
one thread judging: CPU times, not latencies, so the figures hold on a busy machine up to
the CPU's own speed (run it beside the same load to compare two trees).

    .venv/bin/python benchmarks/campaign_completion.py [--method dynamic] [--judgments 3200]
        [--profile N]

``--profile N`` prints the N functions with the most time of their own in the batch
completions' handler (``cProfile``, the judging thread only).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from campaign_load import TOPICS, synthetic
from sampleval.campaign.organise import Design, create_campaign, parse_grades
from sampleval.campaign.server import single_threaded_blas
from sampleval.campaign.simulation import Judge, judge_in_turn, oracle_assessors, percentile
from sampleval.campaign.store import Store
from sampleval.campaign.timing import request_timing
from sampleval.selection import Budget

STEPS = ("process cpu", "cpu", "labels", "observe", "propose", "save", "commit", "offer")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", default="dynamic")
    parser.add_argument("--judgments", type=int, default=3200)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    args = parser.parse_args()
    single_threaded_blas()  # as serve does
    profile = cProfile.Profile() if args.profile else None
    with tempfile.TemporaryDirectory() as tmp:
        timings = judge_all(Path(tmp), args.method, args.judgments, args.seed, profile)
    table = Table(title=f"{args.method}: CPU and steps per judgment, ms (in process, one "
                        f"thread judging, {len(timings)} judgments)")
    for column in ("kind", "judgments", "stat", *STEPS):
        table.add_column(column, justify="left" if column in ("kind", "stat") else "right")
    for kind in ("batch", "other"):
        chosen = [t for t in timings if ("observe" in t) == (kind == "batch")]
        if not chosen:
            continue
        for stat, share in (("p50", 0.5), ("p99", 0.99), ("mean", None)):
            values = [np.mean([t.get(s, 0.0) for t in chosen]) if share is None
                      else percentile([t.get(s, 0.0) for t in chosen], share) for s in STEPS]
            table.add_row(kind, str(len(chosen)), stat, *(f"{v * 1000:.2f}" for v in values))
    Console(width=200).print(table)
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.profile)
    return 0


def judge_all(directory: Path, method: str, judgments: int, seed: int,
              profile: cProfile.Profile | None) -> list[dict[str, float]]:
    """Every judgment's steps (seconds; ``process cpu`` added), the campaign judged in full,
    each assessor one judgment in turn (as :func:`.simulation.judge_in_turn`); ``profile``
    records the batch-completing calls."""
    runs, oracle = synthetic(seed)
    store = Store(f"sqlite:///{directory}/{method}.db")
    create_campaign(store, Design(method, method, Budget(max(1, judgments // TOPICS)),
                                  depth=100, seed=seed, grades=tuple(parse_grades("0,1,2"))),
                    runs)
    tokens = [a.token for a in oracle_assessors(store, method, TOPICS)]
    out: list[dict[str, float]] = []

    def timed(offer: Any, judge: Judge) -> Any:
        completes = offer.docno in offer.topic.open and len(offer.topic.open) - sum(
            1 for d in offer.topic.open if offer.topic.judges.get(d)) == 1
        if profile is not None and completes:
            profile.enable()
        begun = time.process_time()
        with request_timing() as timing:
            made = judge()
            timing.finish()
        spent = time.process_time() - begun
        if profile is not None:
            profile.disable()
        out.append({**timing.spans, "process cpu": spent})
        return made

    try:
        judge_in_turn(store, tokens, oracle, seed, around=timed)
    finally:
        store.close()
    return out


if __name__ == "__main__":
    sys.exit(main())
