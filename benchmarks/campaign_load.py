"""Load on the campaign server: judgments per second and judge-request latency (p50, p99)
with 8 and 32 concurrent assessors, on SQLite and on PostgreSQL.

For each store and number of clients: a fresh store, a campaign over a seeded synthetic
collection (``sampleval.datasets.synthetic``: 32 topics, 12 runs, pooled to depth 100), the
``strata`` method by default and a budget giving about ``--judgments`` judgments in all;
``sampleval serve`` in its own process (live estimates on, as when an organiser watches);
oracle assessors (``campaign.simulation``), one thread and HTTP connection each, dealt the
topics round-robin, judging until the campaign is done. Two runs each:

- ``max``: every client sends its next judgment as soon as the previous one is answered
  (closed loop): the throughput the server reaches. With n clients in a closed loop the
  mean latency is n / throughput (Little's law), so this run's latency says how long the
  queue got, not how fast a request is served;
- ``paced``: the clients together send ``--rate`` judgments per second (200, the target) on
  a schedule; latencies count from the scheduled moment (a server falling behind shows as
  latency, not as clients that quietly wait). ``--pacing fixed`` (the default, the issue's
  figures): each client every ``clients / rate`` seconds, the starts evenly staggered, so
  the clients move in lockstep: topics whose batches have the same sizes (``dynamic``'s
  1, 2, 3... on every topic, every method's last batch) complete them within the same
  0.16 s, a burst no group of people judging makes. ``--pacing poisson``: each client's gaps
  independent and exponential with that mean (a Poisson process each, seeded by
  ``--seed``), the same mean rate with the clients out of step.

The time counts from the first request to the last answer (server start excluded); latency
is that of each judge request (POST, committed before answered, the next document in the
answer).

What the latency is made of. ``server p99`` is the p99 of the server's own ``Server-Timing``
(from the request reaching the app to its answer: the request's work, the commit's flush,
waits for the interpreter lock and for a CPU); the rest of the client's latency is spent in
sockets, in uvicorn's parsing and in the client's own threads. ``server cpu ms/j`` is the
CPU time the server's process spent per judgment (its threads' ``/proc/PID/task/*/schedstat``:
what the code costs, whatever else the machine runs), ``worker ms/j`` that of its
live-estimates worker process, and ``wait ms/j`` the time the threads of both were ready to
run but had no CPU (the kernel's run-queue delay), per judgment: the share of the latency
the machine's other load causes; ``retries`` the clients' calls sent again, by cause
(``TimeoutError``: no answer within the client's 30 s; ``HTTP 5xx``; a lost connection);
``server wrote KiB/j`` the bytes the server's process wrote to files (the WAL, and the
checkpoints' copies into the database file) per judgment, and ``WAL at end MiB`` the WAL
file's size once the run is over. A second table says where the judge requests' time went
in the server, from the steps their ``Server-Timing`` names (:mod:`sampleval.campaign.timing`,
``docs/guide/campaigns.md``: auth, lock, labels, observe, propose, save, commit, offer, the
handler's wall and CPU time; :data:`TIMING_COLUMNS`), by kind (``batch``: the judgment
completed its batch, so the selector observed it and proposed the next; ``other``): the
p50 and p99 of each step on its own, and each step's mean over the kind's slowest 1%
(what a slow request was made of). ``--hog N`` adds N busy processes during the runs, to see how the figures move
with load; ``--server-nice -5`` (as root) favours the server over them and over the clients.

The platform's floor, beside every run (:func:`probe_floor`, a process of its own at the
server's nice, running while the run goes, the same hogs beside it): ``commit ms``, the
p50/p99/max of a raw durable commit (one row in its own transaction, SQLite in WAL mode with
``synchronous=FULL``: the write and its fsync) on the store's directory, one every
:data:`FLOOR_COMMIT_EVERY` seconds; ``wake ms``, the p50/p99/max of the scheduler's wake-up
delay (a thread asking to sleep 1 ms: how much longer it slept). No acknowledged judgment can
come faster than one such commit, nor a thread woken by it sooner than the wake-up delay: when
the raw commit's p99 is near 100 ms, so is the server's, whatever its code.

There is no peer campaign server to run here (HiCAL needs its own stack), so the reference
is the store itself: ``naive`` commits judgments one transaction at a time from one thread,
with the same durability (SQLite WAL, ``synchronous=FULL``; PostgreSQL with fsync on), the
rate a server without group commit could at best reach; the table prints the server's rate
over it.

    .venv/bin/python benchmarks/campaign_load.py [--clients 8,32] [--stores sqlite,postgresql]
        [--method strata] [--judgments 3200] [--runs max,paced] [--pacing fixed]
        [--hog N] [--server-nice N] [--py-spy PREFIX]

Targets (issue 11): on SQLite with 32 clients, p99 under 100 ms and at least 200
judgments per second (read: ``max`` reaches 200/s, and at 200/s ``paced`` p99 < 100 ms).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from sampleval.campaign.devdb import LocalPostgres
from sampleval.campaign.organise import Design, create_campaign, parse_grades
from sampleval.campaign.server import ServerProcess
from sampleval.campaign.simulation import PACINGS, Report, drive, oracle_assessors, percentile
from sampleval.campaign.store import Store
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.synthetic import make_collection
from sampleval.judging.confident import STOP_MODES
from sampleval.selection import Budget, qrels_oracle
from sampleval.selection.base import Oracle

TOPICS = 32
TARGET_P99_MS = 100.0
TARGET_RATE = 200.0
FLOOR_COMMIT_EVERY = 0.05
"""Seconds between two raw commits of the floor probe (20 a second: a sample of the disk
beside the server's own flushes, not a load of its own)."""
STALL_SECONDS = 10.0
"""Seconds without a write system call of the server, while a run goes, after which its
threads' stacks are dumped (:func:`stall_watch`)."""
FLOOR_NAP = 0.001
"""Seconds the floor probe's sleeping thread asks for (its overshoot is the wake-up delay)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="8,32")
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--method", default="strata")
    parser.add_argument("--judgments", type=int, default=3200)
    parser.add_argument("--rate", type=float, default=TARGET_RATE,
                        help="judgments per second of the paced run")
    parser.add_argument("--runs", default="max,paced",
                        help="which runs to make, comma-separated: max (closed loop), paced "
                             "(--rate judgments per second)")
    parser.add_argument("--pacing", choices=PACINGS, default="fixed",
                        help="the paced run's schedule: fixed (each assessor every "
                             "clients/rate seconds, starts staggered: the assessors move in "
                             "lockstep) or poisson (each assessor's gaps exponential of that "
                             "mean, independent: see the module docstring)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--target", metavar="MEASURE:HALF_WIDTH",
                        help="create the campaigns with this target (campaign create "
                             "--target): with --stop anytime and a method with committed "
                             "phases (strata), the anytime rule's plan hands the documents "
                             "out (campaign/target.py's PlanSelector, its whole state saved "
                             "with every batch)")
    parser.add_argument("--stop", choices=STOP_MODES, default="committed",
                        help="how --target may stop the campaign (campaign create --stop)")
    parser.add_argument("--hog", type=int, default=0,
                        help="busy processes running beside the server (CPU contention)")
    parser.add_argument("--server-nice", type=int, default=0,
                        help="nice value given to the server's threads once it answers "
                             "(negative: favoured over the hogs and the clients; needs root)")
    parser.add_argument("--py-spy", metavar="PREFIX",
                        help="record the server's Python stacks while the runs go (py-spy, "
                             "installed apart: pip install py-spy; sampling only the thread "
                             "holding the interpreter lock): PREFIX-STORE-CLIENTS.txt, "
                             "collapsed stacks with counts")
    parser.add_argument("--py-spy-rate", type=int, default=50, metavar="HZ",
                        help="samples a second of --py-spy")
    parser.add_argument("--requests", metavar="PREFIX",
                        help="write every judge request (its moment from the run's first, "
                             "the client's latency, the server's Server-Timing metrics: "
                             "seconds) to PREFIX-STORE-CLIENTS-RUN.jsonl")
    parser.add_argument("--stall-dump", default=str(Path(tempfile.gettempdir()) / "stall"),
                        metavar="PREFIX",
                        help="when the server makes no write system call for "
                             f"{STALL_SECONDS:.0f} s while a run goes (no answer, no commit), "
                             "dump its threads' stacks (py-spy dump) to "
                             "PREFIX-STORE-CLIENTS-RUN.txt")
    args = parser.parse_args()
    kinds = args.runs.split(",")
    if not set(kinds) <= {"max", "paced"}:
        parser.error(f"--runs: max, paced or both, not {args.runs!r}")
    runs, oracle = synthetic(args.seed)
    budget = max(1, args.judgments // TOPICS)
    clients = [int(c) for c in args.clients.split(",")]
    console = Console(width=400)
    method = args.method + (f" (target {args.target}, stop {args.stop})" if args.target
                            else "")
    table = Table(title=f"Campaign server load: method {method}, {TOPICS} topics x "
                        f"{budget} judgments, {os.cpu_count()} cores, {args.hog} hog(s), "
                        f"server nice {args.server_nice}, pacing {args.pacing}, load average at "
                        f"start {_load()}")
    for column in ("store", "clients", "run", "judgments", "seconds", "judgments/s", "p50 ms",
                   "p99 ms", "server p99 ms", "server cpu ms/j", "worker ms/j",
                   "wait ms/j", "retries",
                   "naive commits/s",
                   "ratio", "floor: commit ms p50/p99/max", "wake ms p50/p99/max",
                   "server wrote KiB/j", "WAL at end MiB", "transactions/j", "flushes/j"):
        table.add_column(column, justify="left" if column == "store" else "right")
    steps = Table(title="Where the judge requests' time went (the server's Server-Timing, "
                        "ms): by kind, p50, p99, and the mean over the kind's slowest 1% "
                        "(by app)")
    for column in ("store", "clients", "run", "kind", "requests", "stat", *TIMING_COLUMNS):
        steps.add_column(column, justify="left" if column in ("store", "kind", "stat")
                         else "right")
    together: list[str] = []
    postgres = None
    results: dict[tuple[str, int, str], tuple[float, float]] = {}
    floors: dict[tuple[str, int, str], Floor] = {}
    # a SIGTERM (timeout, kill) unwinds through the finally below, which stops the hogs;
    # they do not hold this script's output open either
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
            for _ in range(args.hog)]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for store_kind in args.stores.split(","):
                if store_kind == "postgresql":
                    postgres = LocalPostgres(fsync=True).start()
                for n in clients:
                    url = (postgres.fresh_database(f"load{n}") if postgres is not None
                           else f"sqlite:///{tmp}/load{n}.db")
                    naive = naive_commits(url)
                    store = Store(url)
                    teams, organisers = {}, {}
                    for run in kinds:
                        organisers[run] = create_campaign(
                            store, design(run, args.method, budget, args.seed, args.target,
                                          args.stop), runs)
                        teams[run] = oracle_assessors(store, run, n)
                    store.close()
                    with ServerProcess(url, log=Path(tmp) / f"{store_kind}{n}.log") as server:
                        assert server.process is not None
                        renice(server.process.pid, args.server_nice)
                        spy = None if args.py_spy is None else py_spy(
                            server.process.pid, f"{args.py_spy}-{store_kind}-{n}.txt", args.py_spy_rate)
                        for run, team in teams.items():
                            before = scheduled(server.process.pid)
                            wrote = proc_io(server.process.pid, "write_bytes")
                            counted = write_counts(server.url, run, organisers[run])
                            dumps = Path(f"{args.stall_dump}-{store_kind}-{n}-{run}.txt")
                            with (floor_beside(Path(tmp), args.server_nice) as floor,
                                  stall_watch(server.process.pid, dumps)):
                                report = drive(server.url, run, team, oracle,
                                               rate=args.rate if run == "paced" else None,
                                               pacing=args.pacing,
                                               rng=np.random.default_rng(args.seed))
                            if dumps.exists():
                                console.print(f"the server made no write for "
                                              f"{STALL_SECONDS:.0f} s: its threads' stacks "
                                              f"are in {dumps}")
                            after = scheduled(server.process.pid)
                            wrote = proc_io(server.process.pid, "write_bytes") - wrote
                            counted = {k: v - counted[k] for k, v in write_counts(
                                server.url, run, organisers[run]).items()}
                            shares = [f"{counted[k] / max(report.judgments, 1):.3f}"
                                      if k in counted
                                      else "n/a" for k in ("transactions", "flushes")]
                            cpu, wait = used(before, after)
                            worker, _ = used(before, {k: v for k, v in after.items()
                                                      if k[0] != server.process.pid})
                            rate = report.judgments / report.seconds
                            p99 = percentile(report.latencies, 0.99) * 1000
                            per = 1000 / max(report.judgments, 1)
                            table.add_row(store_kind, str(n), run, str(report.judgments),
                                          f"{report.seconds:.1f}", f"{rate:.0f}",
                                          f"{percentile(report.latencies, 0.5) * 1000:.1f}",
                                          f"{p99:.1f}",
                                          f"{percentile(report.server_latencies, 0.99) * 1000:.1f}",
                                          f"{(cpu - worker) * per:.2f}",
                                          f"{worker * per:.2f}",
                                          f"{wait * per:.2f}",
                                          _retries(report.problems),
                                          f"{naive:.0f}", f"{rate / naive:.1f}x",
                                          _spread(floor.commits), _spread(floor.wakes),
                                          f"{wrote / 1024 / max(report.judgments, 1):.1f}",
                                          _wal_size(url), *shares)
                            if args.requests is not None:
                                write_requests(report, Path(
                                    f"{args.requests}-{store_kind}-{n}-{run}.jsonl"))
                            for row in timing_rows(report.server_timings):
                                steps.add_row(store_kind, str(n), run, *row)
                            together.append(f"{store_kind}, {n} clients, {run}: "
                                            f"{bursts(report)}")
                            results[store_kind, n, run] = (rate, p99)
                            floors[store_kind, n, run] = floor
                        if spy is not None:
                            spy.send_signal(signal.SIGINT)
                            spy.wait(60)
                if postgres is not None:
                    postgres.stop()
                    postgres = None
        finally:
            if postgres is not None:
                postgres.stop()
            for hog in hogs:
                hog.kill()
                hog.wait()
    if ("sqlite", 32, "max") in results and ("sqlite", 32, "paced") in results:
        reached = results["sqlite", 32, "max"][0] >= TARGET_RATE
        quick = results["sqlite", 32, "paced"][1] < TARGET_P99_MS
        table.caption = (f"SQLite, 32 clients: >= {TARGET_RATE:.0f} judgments/s "
                         f"{'met' if reached else 'NOT met'}; p99 < {TARGET_P99_MS:.0f} ms at "
                         f"{args.rate:.0f}/s {'met' if quick else 'NOT met'}"
                         f"{floors['sqlite', 32, 'paced'].verdict(TARGET_P99_MS)}; load "
                         f"average at the end {_load()}{favoured_session()}")
    console.print(table)
    console.print(steps)
    for line in together:
        console.print(line)
    return 0


def design(name: str, method: str, budget: int, seed: int, target: str | None = None,
           stop: str = "committed") -> Design:
    """A run's campaign: ``budget`` judgments per topic of ``method``, grades 0-2, and
    ``target`` (``--target``) with the stop mode ``stop`` (``--stop``)."""
    return Design(name, method, Budget(budget), depth=100, seed=seed,
                  grades=tuple(parse_grades("0,1,2")), target=target, target_stop=stop)


def synthetic(seed: int) -> tuple[list[Run], Oracle]:
    """The benchmark's collection: :data:`TOPICS` topics, 12 runs, pooled to depth 100
    (runs and the qrels' oracle)."""
    collection = make_collection(np.random.default_rng(seed), n_topics=TOPICS, n_runs=12,
                                 n_docs=3000, depth=100, pool_depth=100)
    runs = [Run.from_frame(frame, name) for name, frame in collection.runs.items()]
    return runs, qrels_oracle(Qrels.from_frame(collection.qrels))


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def favoured_session(autogroup: Path = Path("/proc/self/autogroup")) -> str:
    """A clause for the table's caption when this process's session runs at a negative
    autogroup nice (``echo -10 > /proc/$$/autogroup``), else nothing. The hogs are this
    script's children and share the favour, and the kernel's work that completes a write
    runs outside every session: measured on an idle machine, the raw commit's p99 went from
    6-159 ms to 230-1,086 ms, so such a run says nothing about the platform's p99."""
    try:
        nice = int(autogroup.read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        return ""
    if nice >= 0:
        return ""
    return (f"; this session's autogroup nice is {nice}: the hogs share the favour and "
            f"the kernel's write completions are starved, run it in a plain session")


def py_spy(pid: int, out: str, rate: int = 50) -> subprocess.Popen[bytes]:
    """py-spy recording process ``pid`` (its thread holding the GIL, ``rate`` samples a second,
    without stopping it) into ``out`` until sent SIGINT."""
    beside = Path(sys.executable).with_name("py-spy")  # installed in this venv
    spy = subprocess.Popen([str(beside) if beside.exists() else "py-spy", "record", "--pid", str(pid), "--format", "raw", "--gil",
                            "--nonblocking", "--rate", str(rate), "--output", out],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached before the first request
    return spy


def renice(pid: int, nice: int) -> None:
    """Give every thread of process ``pid`` the nice value ``nice`` (threads and processes
    it starts later inherit it from the thread that starts them)."""
    if nice:
        for task in os.listdir(f"/proc/{pid}/task"):
            os.setpriority(os.PRIO_PROCESS, int(task), nice)


def scheduled(pid: int) -> dict[tuple[int, str], tuple[float, float]]:
    """Per thread of process ``pid`` and of its children: seconds on a CPU and seconds ready
    but waiting for one (run-queue delay), from Linux's ``schedstat`` (empty elsewhere)."""
    pids = [pid]
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                pids += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children")
                         .read_text().split()]
    out: dict[tuple[int, str], tuple[float, float]] = {}
    for process in pids:
        with contextlib.suppress(OSError):
            for thread in Path(f"/proc/{process}/task").iterdir():
                with contextlib.suppress(OSError, ValueError):
                    on_cpu, queued, _ = (thread / "schedstat").read_text().split()
                    out[process, thread.name] = (int(on_cpu) / 1e9, int(queued) / 1e9)
    return out


def proc_io(pid: int, field: str) -> float:
    """A counter of process ``pid``'s ``/proc/PID/io`` (NaN where it cannot be read):
    ``syscw``, the write system calls it has made so far (its answers' and its files');
    ``write_bytes``, the bytes it has sent to the storage layer (its writes to files, the
    WAL's and the checkpoint's, not its sockets)."""
    try:
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            name, _, value = line.partition(":")
            if name == field:
                return float(value)
    except OSError:
        pass
    return math.nan


@contextlib.contextmanager
def stall_watch(pid: int, out: Path, seconds: float = STALL_SECONDS) -> Iterator[None]:
    """For the duration of the block: when process ``pid`` makes no write system call for
    ``seconds`` (it neither answers nor commits: the start-up stall of benchmarks/README.md),
    write the stacks of all its threads (``py-spy dump``, native frames too) to ``out``,
    once."""
    stop = threading.Event()

    def watch() -> None:
        last, since = proc_io(pid, "syscw"), time.monotonic()
        while not stop.wait(0.5):
            now = proc_io(pid, "syscw")
            if math.isnan(now):
                return
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= seconds:
                beside = Path(sys.executable).with_name("py-spy")
                with contextlib.suppress(OSError, subprocess.SubprocessError), \
                        out.open("w") as sink:
                    subprocess.run([str(beside) if beside.exists() else "py-spy", "dump",
                                    "--pid", str(pid), "--native", "--locals"],
                                   stdout=sink, stderr=subprocess.STDOUT, timeout=60)
                return

    out.unlink(missing_ok=True)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()


def write_counts(url: str, campaign: str, token: str) -> dict[str, int]:
    """The server's group-commit counters (writes, transactions, WAL flushes since it
    started: ``server_writes`` of the campaign's status, read as its organiser)."""
    import httpx

    answer = httpx.get(f"{url}/api/campaigns/{campaign}/status", timeout=60,
                       headers={"Authorization": f"Bearer {token}"})
    answer.raise_for_status()
    counts: dict[str, int] = answer.json().get("server_writes", {})  # ({}: an older server)
    return counts


def _wal_size(url: str) -> str:
    """The size of a SQLite store's WAL file in MiB (n/a: PostgreSQL, or no WAL)."""
    if not url.startswith("sqlite:///"):
        return "n/a"
    wal = Path(f"{url.removeprefix('sqlite:///')}-wal")
    return f"{wal.stat().st_size / 2**20:.1f}" if wal.exists() else "0"


def used(before: dict[tuple[int, str], tuple[float, float]],
         after: dict[tuple[int, str], tuple[float, float]]) -> tuple[float, float]:
    """CPU seconds and run-queue seconds between two :func:`scheduled` readings (threads
    that ended in between are not counted; NaN when nothing could be read)."""
    if not after:
        return math.nan, math.nan
    cpu = sum(c - before.get(k, (0.0, 0.0))[0] for k, (c, _) in after.items())
    wait = sum(w - before.get(k, (0.0, 0.0))[1] for k, (_, w) in after.items())
    return cpu, wait


def naive_commits(url: str, count: int = 300) -> float:
    """Judgment-sized rows committed one transaction at a time, per second."""
    from sqlalchemy import Column, Float, Integer, MetaData, String, Table, insert

    store = Store(url, migrate=False)
    table = Table("naive", MetaData(), Column("id", Integer, primary_key=True),
                  Column("key", String(64), unique=True), Column("label", Float))
    table.create(store.engine)
    started = time.perf_counter()
    for _ in range(count):
        with store.write() as session:
            session.execute(insert(table).values(key=uuid.uuid4().hex, label=1.0))
    rate = count / (time.perf_counter() - started)
    table.drop(store.engine)
    store.close()
    return rate


@dataclass(frozen=True)
class Floor:
    """What the platform gave a probe beside a run: seconds per raw durable commit and
    seconds of wake-up delay (:func:`probe_floor`)."""

    commits: list[float]
    wakes: list[float]

    def verdict(self, target_ms: float) -> str:
        """A clause for the table's caption when the raw commit's p99 alone is at least half
        of ``target_ms`` (no acknowledgment waiting for a commit can then be sure to come in
        time), else nothing."""
        p99 = percentile(self.commits, 0.99) * 1000
        if not p99 >= target_ms / 2:
            return ""
        return (f" (the disk's raw commit alone has p99 {p99:.0f} ms: a durable "
                f"acknowledgment cannot be much faster)")


def raw_commits(directory: Path, stop: threading.Event, every: float = FLOOR_COMMIT_EVERY,
                clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Seconds each raw durable commit took: one row inserted and committed in a
    transaction of its own into a fresh SQLite file in ``directory`` (WAL mode,
    ``synchronous=FULL``, no automatic checkpoint: the store's server settings, without
    SQLAlchemy), one every ``every`` seconds until ``stop`` is set. The file is removed."""
    path = directory / f"floor-{uuid.uuid4().hex}.db"
    out: list[float] = []
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        for pragma in ("journal_mode=WAL", "synchronous=FULL", "wal_autocheckpoint=0"):
            connection.execute(f"PRAGMA {pragma}")
        connection.execute("CREATE TABLE floor (id INTEGER PRIMARY KEY, key TEXT UNIQUE, "
                           "label REAL)")
        while not stop.is_set():
            started = clock()
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("INSERT INTO floor (key, label) VALUES (?, 1.0)",
                               (uuid.uuid4().hex,))
            connection.execute("COMMIT")
            out.append(clock() - started)
            stop.wait(every)
    finally:
        connection.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    return out


def wake_delays(stop: threading.Event, nap: float = FLOOR_NAP,
                sleep: Callable[[float], None] = time.sleep,
                clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Seconds by which each sleep of ``nap`` seconds overshot (the scheduler's wake-up
    delay, with the timer's slack), one after another until ``stop`` is set."""
    out: list[float] = []
    while not stop.is_set():
        started = clock()
        sleep(nap)
        out.append(max(0.0, clock() - started - nap))
    return out


def probe_floor(directory: str, nice: int, stop: Any, ready: Any, answer: Connection) -> None:
    """The floor probe's process: at nice ``nice`` (threads started after inherit it),
    :func:`raw_commits` on ``directory`` in one thread and :func:`wake_delays` in another
    until ``stop`` is set; sends the :class:`Floor` down ``answer``."""
    if nice:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    halt = threading.Event()
    commits: list[float] = []
    wakes: list[float] = []
    committer = threading.Thread(
        target=lambda: commits.extend(raw_commits(Path(directory), halt)))
    waker = threading.Thread(target=lambda: wakes.extend(wake_delays(halt)))
    committer.start()
    waker.start()
    ready.set()
    stop.wait()
    halt.set()
    committer.join()
    waker.join()
    answer.send(Floor(commits, wakes))


@contextlib.contextmanager
def floor_beside(directory: Path, nice: int) -> Iterator[Floor]:
    """Run :func:`probe_floor` in a process of its own for the duration of the block; the
    yielded :class:`Floor` is filled when the block ends."""
    context = multiprocessing.get_context("spawn")
    stop, ready = context.Event(), context.Event()
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=probe_floor, args=(str(directory), nice, stop, ready,
                                                        send), daemon=True)
    process.start()
    floor = Floor([], [])
    try:
        ready.wait(60)
        yield floor
    finally:
        stop.set()
        if receive.poll(60):
            found = receive.recv()
            floor.commits.extend(found.commits)
            floor.wakes.extend(found.wakes)
        process.join(10)
        if process.is_alive():
            process.kill()


TIMING_COLUMNS = ("app", "outside", "handler", "cpu", "ready", "auth", "lock", "labels",
                  "observe", "propose", "save", "commit", "offer")
"""The columns of the steps table: the ``Server-Timing`` metrics
(:mod:`sampleval.campaign.timing`) and, derived from them, ``outside`` (app less handler: the
wait for a worker thread, the request's parsing and the answer's writing) and ``ready``
(handler less cpu, lock and commit: the handler's thread ready to run, waiting for the
interpreter lock or a CPU)."""


def timing_rows(timings: Sequence[dict[str, float]]) -> list[list[str]]:
    """The steps table's rows for one run's judge requests: for each kind (``batch``: the
    judgment completed its batch, so the selector observed it and proposed the next one;
    ``other``), the p50 and p99 of every column (each on its own) and the columns' means
    over the kind's slowest 1% of requests by ``app``."""
    rows = []
    for kind, chosen in (("batch", [t for t in timings if "observe" in t]),
                         ("other", [t for t in timings if "observe" not in t])):
        if not chosen:
            continue
        derived = [{**t, "outside": t.get("app", math.nan) - t.get("handler", math.nan),
                    "ready": t.get("handler", math.nan) - t.get("cpu", math.nan)
                    - t.get("lock", 0.0) - t.get("commit", 0.0)} for t in chosen]
        slowest = sorted(derived, key=lambda t: t.get("app", 0.0))[
            -max(1, math.ceil(len(derived) / 100)):]
        columns = {c: [t.get(c, 0.0) for t in derived] for c in TIMING_COLUMNS}
        for stat, values in (
                ("p50", [percentile(columns[c], 0.5) for c in TIMING_COLUMNS]),
                ("p99", [percentile(columns[c], 0.99) for c in TIMING_COLUMNS]),
                (f"slowest {len(slowest)}",
                 [float(np.mean([t.get(c, 0.0) for t in slowest])) for c in TIMING_COLUMNS])):
            rows.append([kind, str(len(chosen)), stat, *(f"{v * 1000:.1f}" for v in values)])
    return rows


BURST_WINDOW = 0.25
"""Seconds of the window in which :func:`bursts` counts batch completions together."""


def bursts(report: Report, window: float = BURST_WINDOW) -> str:
    """How bunched the run's batch completions were (the judge requests whose
    ``Server-Timing`` has ``observe``): for each, how many completions (itself included) were
    sent within ``window`` seconds of it, p50 and max; with the fixed pacing `dynamic`'s 32
    topics complete each batch together."""
    moments = np.sort([at for at, t in zip(report.sent, report.server_timings, strict=True)
                       if "observe" in t])
    if not len(moments):
        return "no batch completions"
    near = (np.searchsorted(moments, moments + window / 2, side="right")
            - np.searchsorted(moments, moments - window / 2, side="left"))
    return (f"{len(moments)} batch completions; completions within {window:g} s of each: "
            f"p50 {np.median(near):.0f}, p90 {np.percentile(near, 90):.0f}, max {near.max()}")


def write_requests(report: Report, out: Path) -> None:
    """Every judge request of ``report`` as a JSON line: ``at`` (seconds from the run's first
    request), ``latency`` (the client's) and the server's ``Server-Timing`` metrics."""
    first = min(report.sent, default=0.0)
    with out.open("w") as file:
        for at, latency, timings in zip(report.sent, report.latencies,
                                        report.server_timings, strict=True):
            file.write(json.dumps({"at": round(at - first, 6), "latency": round(latency, 6),
                                   **{k: round(v, 6) for k, v in timings.items()}}) + "\n")


def _spread(seconds: Sequence[float]) -> str:
    """p50/p99/max in milliseconds, or n/a."""
    if not seconds:
        return "n/a"
    return "/".join(f"{v * 1000:.1f}" for v in (percentile(seconds, 0.5),
                                                percentile(seconds, 0.99), max(seconds)))


def _retries(problems: Counter[str]) -> str:
    """The clients' retries by cause (``TimeoutError: 2``: two calls had no answer within
    the client's timeout), or 0."""
    return ", ".join(f"{name}: {count}" for name, count in problems.most_common()) or "0"


if __name__ == "__main__":
    sys.exit(main())
