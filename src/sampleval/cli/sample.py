"""``sampleval sample`` (simulate a judging campaign with a selection method) and
``sampleval methods`` (what methods and estimator families there are)."""

from __future__ import annotations

import argparse
import sys

from sampleval.cli._app import (
    add_command,
    add_duplicates,
    add_name_by,
    add_runs_argument,
    check_stdin_once,
    positive_int,
    rate,
    stderr_is_terminal,
)
from sampleval.errors import UsageError


def add_commands(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "sample", run_sample,
                         "choose documents to judge with a selection method, judged by qrels, "
                         "and save the sample with its design")
    parser.add_argument("method", metavar="METHOD",
                        help="selection method, e.g. strata, stratified, active, uniform (all "
                             "of them: 'sampleval methods')")
    add_runs_argument(parser)
    parser.add_argument("--qrels", required=True, metavar="ORACLE",
                        help="qrels 'qid iter docno rel' that answer for the assessor "
                             "(simulation; '-' reads standard input); a document they do not "
                             "judge counts as not relevant")
    parser.add_argument("-o", "--output", required=True, metavar="SAMPLE",
                        help="directory to write the sample to: sample.json and its tables "
                             "(docs/sample-format.md), read by 'sampleval estimate'")
    budget = parser.add_mutually_exclusive_group(required=True)
    budget.add_argument("-n", "--budget", type=positive_int, metavar="N",
                        help="judge N documents per topic (all of a smaller pool)")
    budget.add_argument("-r", "--rate", type=rate, metavar="R",
                        help="judge a fraction R in (0, 1] of each topic's pool, rounded up")
    parser.add_argument("-M", "--depth", type=positive_int, metavar="K",
                        help="pool each run's top K documents per topic (trec_eval order); "
                             "default: all they retrieved")
    parser.add_argument("-s", "--seed", type=int, metavar="S",
                        help="seed of the random draws; default: a fresh one, recorded in "
                             "sample.json")
    parser.add_argument("-p", "--param", action="append", metavar="NAME=VALUE",
                        help="a parameter of the method (see 'sampleval methods'), e.g. "
                             "strategy=2strata or k=10; repeat for several")
    target = parser.add_argument_group(
        "judging until confident (docs/confident.md)",
        "With --target, the budget (-n/-r) is each topic's ceiling, which the method's design "
        "is laid out for; judging stops once every targeted run's interval is narrow enough.")
    target.add_argument("--target", metavar="MEASURE:HALF_WIDTH",
                        help="stop when the 95%% half-width of every run's mean over topics "
                             "is at most HALF_WIDTH, e.g. AP:0.01 or AP~ht:0.02; each next "
                             "batch goes to the topic where it narrows the widest interval "
                             "most")
    target.add_argument("--target-run", action="append", metavar="RUN",
                        help="only these runs must meet the target (repeat; default: all)")
    target.add_argument("--ceiling", type=positive_int, metavar="N",
                        help="judge at most N documents in all (default: the budget of every "
                             "topic)")
    target.add_argument("--start", type=positive_int, default=20, metavar="N",
                        help="judgments per topic before allocating (more where the design "
                             "needs more to reach every stratum)")
    target.add_argument("--batch", type=positive_int, default=5, metavar="N",
                        help="documents per allocation step")
    add_name_by(parser)
    add_duplicates(parser)
    add_command(commands, "methods", run_methods,
                "list the selection methods and the estimator families",
                "List the selection methods (their design, parameters and the estimator "
                "families that apply to their samples) and the estimator families (their "
                "measures and designs).")


def run_sample(args: argparse.Namespace) -> None:
    from dataclasses import replace

    import numpy as np

    from sampleval.core.pool import Pool
    from sampleval.io import read_qrels, read_runs
    from sampleval.params import resolve
    from sampleval.selection import METHODS, Budget, qrels_oracle, simulate

    cls = METHODS[args.method]
    params: dict[str, str] = {}
    for text in args.param or []:
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--param expects NAME=VALUE, not {text!r}")
        params[name.strip()] = value.strip()
    resolve(cls.parameters, params, cls.name)  # bad parameters fail before any file is read
    target = None
    if args.target is not None:
        from sampleval.confident import Target

        target = Target.parse(args.target, args.target_run)
    elif args.target_run or args.ceiling:
        raise UsageError("--target-run and --ceiling apply only with --target")
    check_stdin_once(args.qrels, args.runs)
    oracle = qrels_oracle(read_qrels(args.qrels))
    loaded = read_runs(args.runs, name_by=args.name_by, progress=stderr_is_terminal(),
                       duplicates=args.duplicates)
    seed = args.seed
    if seed is None:
        seed = int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
    selector = cls(Pool.from_runs(loaded, depth=args.depth), Budget(args.budget, args.rate),
                   np.random.default_rng(seed), **params)
    reached = ""
    if target is None:
        result = simulate(selector, oracle).sample()
    else:
        from sampleval.confident import ConfidentJudging

        status = ConfidentJudging(selector, target, ceiling=args.ceiling, start=args.start,
                                  batch=args.batch).run(oracle)
        result = selector.sample()
        reached = (f"; target {target.measure}:{target.half_width}: {status.reason}, widest "
                   f"half-width {status.widest:.4f}")
    result = replace(result, meta={**result.meta, "seed": seed})
    result.save(args.output)
    judged = result.judged()
    per_topic = judged.groupby("query_id").size().reindex(result.topics, fill_value=0)
    relevant = int((judged["relevance"] > 0).sum())
    low, high = (per_topic.min(), per_topic.max()) if len(per_topic) else (0, 0)
    sys.stdout.write(f"{args.method}: {len(per_topic)} topics, {len(judged)} judged "
                     f"({low}-{high} per topic), {relevant} relevant found{reached}; sample "
                     f"written to {args.output}\n")


def run_methods(args: argparse.Namespace) -> None:
    from sampleval.estimators.family import FAMILIES
    from sampleval.selection import METHODS

    lines = ["Selection methods (sampleval sample METHOD ... --param NAME=VALUE)", ""]
    for name, cls in METHODS.items():
        families = ", ".join(cls.estimator_families()) or (
            "none (exact measures on the judged documents)")
        unit = "" if cls.budget_unit == "judgments" else f"; the budget counts {cls.budget_unit}"
        lines += [f"  {name}: {cls.summary}",
                  f"      design: {cls.design}; estimators: {families}{unit}"]
        lines += [f"      {p.name} ({p.type.__name__}): {p.describe()}" for p in cls.parameters]
        lines.append("")
    lines += ["Estimator families (sampleval estimate SAMPLE RUN... -m NAME, options as "
              "NAME(OPTION=VALUE), e.g. xinfAP(var=appendix))", ""]
    for name, family in FAMILIES.items():
        lines += [f"  {name}: {family.title} ({family.reference})",
                  f"      measures: {', '.join(family.measure_names())}",
                  f"      designs: {', '.join(family.designs)}"]
        lines += [f"      option {line}" for line in family.option_lines()]
        lines.append("")
    sys.stdout.write("\n".join(lines))
