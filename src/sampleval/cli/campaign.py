"""``sampleval campaign create|add-assessor|status|export|simulate`` and ``sampleval serve``:
judging campaigns with people (docs/guide/campaigns.md). They need the ``campaign`` extra
(from a clone: ``.venv/bin/pip install -e '.[campaign]'``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sampleval.cli._app import (
    add_command,
    add_duplicates,
    add_name_by,
    add_predictions,
    add_target,
    check_stdin_once,
    parse_params,
    positive_int,
    rate,
    split_names,
    start_reading_runs,
    stdout_console,
)
from sampleval.errors import UsageError

DB_HELP = ("the campaign store: a SQLite file path or URL, or a PostgreSQL URL "
           "postgresql://USER:PASSWORD@HOST/DB (default: sampleval-campaigns.db in the "
           "working directory)")
BASE_URL = "http://127.0.0.1:8000"


def add_commands(commands: argparse._SubParsersAction) -> None:
    group = add_command(commands, "campaign", _group_help,
                        "judging campaigns with people: create, add assessors, watch, "
                        "export, simulate",
                        "Create a judging campaign from runs and a selection method, give "
                        "assessors their logins, serve the pages ('sampleval serve'), watch "
                        "progress and live estimates, and export the judgments as a sample "
                        "for 'sampleval estimate'. See docs/guide/campaigns.md.")
    group.set_defaults(group=group)
    sub = group.add_subparsers(title="campaign commands", metavar="COMMAND",
                               parser_class=type(group))
    _create(sub)
    _add_assessor(sub)
    _status(sub)
    _export(sub)
    _simulate(sub)
    serve = add_command(commands, "serve", run_serve,
                        "serve the campaigns' pages and API (assessors judge in a browser)",
                        "Serve every campaign of the store: the assessors' and organisers' "
                        "pages, and the JSON API (its OpenAPI description at "
                        "/api/openapi.json). One process holds the campaigns' selectors: "
                        "run one server per store.")
    _db(serve)
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (another than 127.0.0.1 exposes the "
                            "pages to the network: put HTTPS in front)")
    serve.add_argument("--port", type=positive_int, default=8000, help="port to listen on")
    serve.add_argument("--refresh", type=float, default=2.0, metavar="SECONDS",
                       help="recompute a campaign's live estimates at most this often")
    serve.add_argument("--public-url", metavar="URL",
                       help="the address browsers reach the server at behind a reverse "
                            "proxy, e.g. https://judging.example.org: requests whose Origin "
                            "is this site are this site's (the proxy may rewrite Host); the "
                            "printed address uses it (docs/guide/campaigns.md, 'Behind a reverse "
                            "proxy')")
    serve.add_argument("--trusted-proxy", action="append", metavar="ADDRESS",
                       help="an address or network (127.0.0.1, 10.0.0.0/8) of a reverse "
                            "proxy whose X-Forwarded-Host and X-Forwarded-Proto headers are "
                            "believed (from no one else); repeat for several")


def require_extra() -> None:
    """A one-line error when the ``campaign`` extra is not installed."""
    import importlib.util

    missing = [name for name in ("sqlalchemy", "alembic", "fastapi", "uvicorn", "jinja2",
                                 "multipart") if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(f"campaigns need the 'campaign' extra ({', '.join(missing)} missing): "
                         "from the repository's clone, .venv/bin/pip install -e '.[campaign]'")


def _db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="URL", help=DB_HELP)


def _group_help(args: argparse.Namespace) -> None:
    args.group.print_help()
    raise SystemExit(2)


def _create(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "create", run_create,
                    "create a campaign: its pool, selection method, budget and grades",
                    "Create a campaign from runs: their pool (to --depth), a selection "
                    "method with its parameters, a budget per topic and a seed, as "
                    "'sampleval sample' would use them; a campaign judged by an oracle "
                    "ends with the very sample 'sampleval sample' draws. Prints the "
                    "organiser's login.")
    p.add_argument("name", metavar="NAME", help="the campaign's name (letters, digits, "
                                                "'.', '_', '-')")
    p.add_argument("--runs", nargs="+", required=True, metavar="RUN",
                   help="run files 'qid Q0 docno rank score tag' (plain or .gz; '-' "
                        "reads standard input; pipes such as <(zcat run.gz) work), "
                        "directories of runs, or glob patterns")
    p.add_argument("--method", required=True, metavar="M",
                   help="selection method, e.g. active, strata, dynamic, uniform ('sampleval "
                        "methods' lists them)")
    budget = p.add_mutually_exclusive_group(required=True)
    budget.add_argument("--budget", type=positive_int, metavar="N",
                        help="judge N documents per topic (all of a smaller pool)")
    budget.add_argument("--rate", type=rate, metavar="R",
                        help="judge a fraction R in (0, 1] of each topic's pool, rounded up")
    p.add_argument("--depth", type=positive_int, metavar="K",
                   help="pool each run's top K documents per topic (default: all)")
    p.add_argument("--seed", type=int, metavar="S",
                   help="seed of the method's random draws (default: a fresh one, recorded)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a parameter of the method ('sampleval methods'); repeat for several")
    p.add_argument("--topics", metavar="FILE",
                   help="TREC topics (XML as TREC-COVID's, or <top> SGML) or SMART queries "
                        "(Cranfield's cran.qry, numbered 1, 2, 3, ... by position as "
                        "cranqrel numbers them): the statement assessors read")
    p.add_argument("--corpus", metavar="FILE",
                   help="document texts: TREC <DOC> SGML, JSON lines {id, title, text}, or "
                        "SMART (.I/.T/.W, as Cranfield); plain or gzipped. Without it "
                        "assessors see docnos only")
    p.add_argument("--grades", default="0,1", metavar="SCALE",
                   help="the grade scale, e.g. 0,1,2 or '0:not relevant,1:relevant' (one "
                        "button each)")
    p.add_argument("--overlap", type=float, default=0.0, metavar="SHARE",
                   help="share of documents that every assessor of a topic judges "
                        "(agreement studies)")
    p.add_argument("--rejudge", action="store_true",
                   help="let an assessor judge again a document they judged, without "
                        "undoing it (the latest judgment counts under --label latest); "
                        "without it a judgment is accepted only of a document offered to "
                        "its assessor, or offered again after an undo")
    add_predictions(p, "for the methods that select by them (stratified --param "
                       "size=residual, importance --param prior=predictions), kept in the "
                       "campaign's saved selector state")
    target = p.add_argument_group(
        "judging until confident (docs/guide/campaigns.md, docs/guide/confident.md)",
        "With --target, the organiser page and 'campaign status' show each targeted run's "
        "current 95% half-width against the target and a projection of the judgments "
        "still needed; once the target is met (and every topic has its --start "
        "judgments), the campaign stops handing out documents. The budget stays each "
        "topic's ceiling; documents are not reallocated between topics.")
    add_target(target, "the 95%% half-width of every run's mean over topics to reach, e.g. "
                       "AP:0.01 or AP~ht:0.02")
    target.add_argument("--start", type=positive_int, metavar="N",
                        help="judgments every topic receives before the target may stop the "
                             "campaign (more where the design needs more to reach every "
                             "stratum; default: 20)")
    target.add_argument("--stop", choices=("committed", "anytime"), default=None,
                        help="committed (default): stop once every targeted run's 95%% "
                             "half-width meets the target; anytime: each recomputation of "
                             "the live estimates is a look, and the campaign stops at the "
                             "first look where every targeted run's anytime-valid half-width "
                             "(a confidence sequence, valid however often one looks: "
                             "docs/guide/anytime.md) is at most the target; the page and "
                             "'campaign status' then show those half-widths")
    add_name_by(p)
    add_duplicates(p)
    _base_url(p)
    _db(p)


def _base_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-url", default=BASE_URL, metavar="URL",
                        help="the address assessors reach the server at, for the printed "
                             "login link: the one 'sampleval serve' prints when it starts "
                             "(its --public-url, or http://HOST:PORT of its --host and "
                             "--port; default: serve's defaults, http://127.0.0.1:8000)")


def _add_assessor(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "add-assessor", run_add_assessor,
                    "add an assessor (or give one a new token) and print the login",
                    "Add PERSON to campaign NAME with the topics to judge, and print their "
                    "login link and token. For someone already added, the topics are "
                    "added and a new token replaces the old one (tokens are stored hashed: "
                    "a lost token is replaced, never shown again).")
    p.add_argument("name", metavar="NAME", help="the campaign")
    p.add_argument("person", metavar="PERSON", help="the person's name")
    p.add_argument("--topics", action="append", metavar="T1,T2",
                   help="topic ids to judge (default: every topic)")
    p.add_argument("--organiser", action="store_true",
                   help="an organiser instead (watches, exports; judges nothing)")
    _base_url(p)
    _db(p)


def _status(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "status", run_status,
                    "progress per topic and per assessor, and the current estimates",
                    "Print each topic's progress, each person's judgments and time, and the "
                    "runs' estimates from the judgments so far (95% intervals).")
    p.add_argument("name", metavar="NAME", help="the campaign")
    _db(p)


def _export(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "export", run_export,
                    "write the campaign's judgments as a sample for 'sampleval estimate'",
                    "Write the sample so far (the judgments with the design that chose "
                    "them, docs/guide/sample-format.md). --label says which judgment counts when a "
                    "document was judged more than once.")
    p.add_argument("name", metavar="NAME", help="the campaign")
    p.add_argument("-o", "--output", required=True, metavar="SAMPLE",
                   help="directory to write the sample to")
    p.add_argument("--label", default="latest", metavar="RULE",
                   help="latest (the most recent judgment), majority (each assessor's latest "
                        "votes; ties to the most recent), mean (fractional labels) or an "
                        "assessor's name (their judgments; others' where they judged none)")
    _db(p)


def _simulate(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "simulate", run_simulate,
                    "judge a campaign with oracle assessors through the HTTP service",
                    "Add simulated assessors (oracle-1 ... oracle-N) whose labels come from "
                    "qrels, and let them judge the campaign to its end through the HTTP "
                    "API: of a server started for the purpose, or of a running one "
                    "(--url). Prints the judgments made and the rate.")
    p.add_argument("name", metavar="NAME", help="the campaign")
    p.add_argument("--qrels", required=True, metavar="FILE",
                   help="qrels 'qid iter docno rel' answering for the assessors (a document "
                        "they do not judge is not relevant)")
    p.add_argument("--assessors", type=positive_int, default=1, metavar="N",
                   help="simulated assessors working at once")
    p.add_argument("--url", metavar="URL",
                   help="a running server of the same store (default: start one)")
    _db(p)


def run_create(args: argparse.Namespace) -> None:
    from dataclasses import replace

    require_extra()
    check_stdin_once(args.runs, args.topics or [], args.corpus or [],
                     args.predictions or [])
    with start_reading_runs(args) as reading:  # the runs parse while the store's code loads
        from sampleval.campaign.organise import Design, create_campaign, parse_grades
        from sampleval.campaign.store import Store
        from sampleval.campaign.topics import read_topics
        from sampleval.declare import resolve
        from sampleval.io.predictions import read_predictions
        from sampleval.selection import METHODS, Budget

        cls = METHODS[args.method]
        params = parse_params(args.param)
        resolve(cls.parameters, params, cls.name)  # bad parameters fail before the store
        cls.check_predictions(args.predictions is not None)
        grades = tuple(parse_grades(args.grades))
        predicted = None if args.predictions is None else read_predictions(
            args.predictions, max(g.value for g in grades))
        if args.target is None and (args.target_run or args.start or args.stop):
            raise UsageError("--target-run, --start and --stop apply only with --target")
        design = Design(args.name, cls.name, Budget(args.budget, args.rate), params,
                        args.depth, args.seed, grades, args.overlap, predicted,
                        args.target, tuple(args.target_run or ()))
        design = replace(design, rejudge=args.rejudge,
                         target_stop=args.stop or "committed")
        if args.start is not None:
            design = replace(design, target_start=args.start)
        statements = read_topics(args.topics) if args.topics else None
        runs = reading.result()
    store = Store(args.db)
    try:
        token = create_campaign(store, design, runs, statements, args.corpus)
        from sampleval.campaign.organise import campaign_status

        status = campaign_status(store, args.name)
    finally:
        store.close()
    info = status.campaign
    depth = f"depth {info.depth}" if info.depth else "all they retrieved"
    sys.stdout.write(
        f"campaign {info.name!r} created: method {info.method}, {len(runs)} runs pooled to "
        f"{depth}, {len(status.topics)} topics, a budget of {status.budget} "
        f"{'draws' if info.budget_unit == 'draws' else 'documents'} to judge, "
        f"seed {info.seed}, grades {', '.join(g.text for g in info.grades)}"
        f"{_target_text(info)}\n"
        f"organiser login: {args.base_url.rstrip('/')}/login?token={token}\n"
        f"organiser token: {token}\n"
        f"next: 'sampleval campaign add-assessor {info.name} PERSON' for each assessor, then "
        f"'sampleval serve'\n")


def _target_text(info: Any) -> str:
    if info.target is None:
        return ""
    runs = ", ".join(info.target_runs) if info.target_runs else "every run"
    from sampleval.judging.confident import is_anytime

    how = " (anytime-valid)" if is_anytime(info.target_stop) else ""
    return (f", target {info.target}{how} ({runs}; stops handing out documents once met, "
            f"after {info.target_start} judgments per topic)")


def run_add_assessor(args: argparse.Namespace) -> None:
    require_extra()
    from sampleval.campaign.organise import add_person
    from sampleval.campaign.store import Store

    topics = split_names(args.topics) if args.topics else None
    store = Store(args.db)
    try:
        token, mine, new = add_person(store, args.name, args.person, topics,
                                      "organiser" if args.organiser else "assessor")
    finally:
        store.close()
    what = "organiser" if args.organiser else f"assessor of topics {', '.join(mine)}"
    verb = "added" if new else "given a new token (the old one no longer works)"
    sys.stdout.write(f"{args.person} {verb} as {what} in campaign {args.name!r}\n"
                     f"login link: {args.base_url.rstrip('/')}/login?token={token}\n"
                     f"token: {token}\n")


def run_status(args: argparse.Namespace) -> None:
    require_extra()
    from rich.table import Table

    from sampleval.campaign.organise import campaign_status, estimates_now, rows_frame
    from sampleval.campaign.store import Store
    from sampleval.campaign.target import widest_first
    from sampleval.io.formats import print_table

    store = Store(args.db)
    try:
        status = campaign_status(store, args.name)
        rows, note, counted, confidence = estimates_now(store, args.name)
    finally:
        store.close()
    console = stdout_console()
    info = status.campaign
    console.print(f"campaign {info.name}: method {info.method}, {status.progress()}")
    topics = Table(title="Topics", title_justify="left")
    for column in ("topic", "title", "judged", "budget", "batches", "done", "assessors"):
        topics.add_column(column, justify="right" if column in ("judged", "budget",
                                                                "batches") else "left")
    for t in status.topics:
        unit = " draws" if t.budget_unit == "draws" else ""
        topics.add_row(t.qid, t.title[:40], str(t.judged), f"{t.budget}{unit}", str(t.batches),
                       "yes" if t.done else "", ", ".join(t.assessors))
    console.print(topics)
    people = Table(title="People", title_justify="left")
    for column in ("person", "role", "judgments", "undone", "seconds", "median s"):
        people.add_column(column, justify="left" if column in ("person", "role") else "right")
    for p in status.people:
        people.add_row(p.name, p.role, str(p.judgments), str(p.retracted), f"{p.seconds:.0f}",
                       "" if p.median_seconds is None else f"{p.median_seconds:.1f}")
    console.print(people)
    if confidence is not None:
        widths = Table(title=f"Target: {confidence['text']}", title_justify="left")
        from sampleval.judging.confident import is_anytime

        kind = ("anytime-valid 95% half-width" if is_anytime(confidence.get("stop"))
                else "95% half-width")
        for column in ("run", kind, "target", "met"):
            widths.add_column(column, justify="left" if column == "run" else "right")
        for run, width in widest_first(confidence["half_widths"]):
            widths.add_row(run, "" if width is None else f"{width:.4f}",
                           f"{confidence['half_width']:g}",
                           "yes" if width is not None and width <= confidence["half_width"]
                           else "")
        console.print(widths)
    if info.stopped:
        console.print(f"Stopped handing out documents: {info.stopped}")
    if status.stale_since:
        console.print(f"The server's live estimates are stale since {status.stale_since}: "
                      f"its estimates worker stopped and is being restarted (the estimates "
                      f"below are computed now, by this command)")
    if not rows:
        console.print(f"Estimates: {note}")
        return
    print_table(rows_frame(rows), console,
                title=f"Estimates from {counted} judgments ({note})")


def run_export(args: argparse.Namespace) -> None:
    require_extra()
    from sampleval.campaign.organise import (
        CampaignInfo,
        campaign_row,
        export_sample,
        waiting,
        waiting_text,
    )
    from sampleval.campaign.store import Store

    store = Store(args.db)
    try:
        sample, fallback = export_sample(store, args.name, args.label)
        with store.read() as session:
            waits = waiting(session, CampaignInfo.of(campaign_row(session, args.name)), sample)
    finally:
        store.close()
    sample.save(args.output)
    judged = sample.judged()
    sys.stdout.write(f"campaign {args.name!r}: {len(judged)} judged documents over "
                     f"{judged['query_id'].nunique()} topics, labels by {args.label}; sample "
                     f"written to {args.output}\n")
    if waits:
        sys.stderr.write(f"sampleval: warning: {waiting_text(waits)}\n")
    if fallback:
        sys.stderr.write(f"sampleval: warning: {fallback} documents were not judged by "
                         f"{args.label} and keep their latest label\n")


def run_simulate(args: argparse.Namespace) -> None:
    require_extra()
    from sampleval.campaign.server import ServerProcess
    from sampleval.campaign.simulation import check_scale, drive, oracle_assessors, percentile
    from sampleval.campaign.store import Store
    from sampleval.io import read_qrels
    from sampleval.selection import qrels_oracle

    qrels = read_qrels(args.qrels)
    oracle = qrels_oracle(qrels)
    store = Store(args.db)
    try:
        check_scale(store, args.name, qrels, args.qrels)
        assessors = oracle_assessors(store, args.name, args.assessors)
        url = store.url
    finally:
        store.close()
    server = None if args.url else ServerProcess(url).start()
    try:
        report = drive(server.url if server else args.url, args.name, assessors, oracle)
    finally:
        if server is not None:
            server.stop()
    rate_ = report.judgments / report.seconds if report.seconds else float("nan")
    sys.stdout.write(
        f"campaign {args.name!r}: {report.judgments} judgments by {len(assessors)} oracle "
        f"assessors in {report.seconds:.1f} s ({rate_:.0f}/s; judge request p50 "
        f"{percentile(report.latencies, 0.5) * 1000:.1f} ms, p99 "
        f"{percentile(report.latencies, 0.99) * 1000:.1f} ms; {report.retries} retries)\n")


def run_serve(args: argparse.Namespace) -> None:
    require_extra()
    from sampleval.campaign.server import serve
    from sampleval.campaign.store import database_url

    if args.refresh <= 0:
        raise UsageError("--refresh must be a positive number of seconds")
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        sys.stderr.write(f"sampleval: warning: listening on {args.host}: the pages are "
                         "reachable from the network; serve them through HTTPS\n")
    serve(database_url(args.db), args.host, args.port, args.refresh,
          public_url(args.public_url), trusted_proxies(args.trusted_proxy or []))


def public_url(text: str | None) -> str | None:
    """``--public-url``: ``http(s)://HOST[:PORT]`` (a path is not supported)."""
    if text is None:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path.strip("/"):
        raise UsageError(f"--public-url: {text!r} is not http(s)://HOST[:PORT] (the server "
                         "is served at the root of its address)")
    return f"{parts.scheme}://{parts.netloc}"


def trusted_proxies(texts: list[str]) -> list[str]:
    """``--trusted-proxy``: addresses or networks, checked."""
    from ipaddress import ip_network

    for text in texts:
        try:
            ip_network(text, strict=False)
        except ValueError:
            raise UsageError(f"--trusted-proxy: {text!r} is not an IP address or network "
                             "(127.0.0.1, 10.0.0.0/8, ::1)") from None
    return texts
