"""``sampleval sample`` (simulate a judging campaign with a selection method) and
``sampleval methods`` (what methods and estimator families there are)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from sampleval.cli._app import (
    add_command,
    add_duplicates,
    add_name_by,
    add_predictions,
    add_runs_argument,
    add_target,
    check_stdin_once,
    parse_params,
    positive_int,
    rate,
    stderr_is_terminal,
)
from sampleval.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from sampleval.core.design import Design
    from sampleval.core.sample import Sample
    from sampleval.selection import Selector
    from sampleval.selection.base import Oracle


def add_commands(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "sample", run_sample,
                         "choose documents to judge with a selection method: list them for "
                         "judging in any tool, or simulate the judging with qrels",
                         "Choose documents to judge with a selection method and keep the "
                         "design that chose them, so that 'sampleval estimate' can estimate "
                         "from the judgments without bias.\n\n"
                         "Without --qrels, the documents to judge are listed in "
                         "SAMPLE/to-judge.tsv (topic, docno, stratum, inclusion); judge them "
                         "in any tool and import the labels with 'sampleval judge SAMPLE "
                         "JUDGMENTS', which lists the next batch for methods that adapt to the "
                         "labels. With --qrels, the qrels answer for the assessor (a "
                         "simulation) and the finished sample is written at once. See "
                         "docs/guide/judging.md.")
    parser.add_argument("method", metavar="METHOD",
                        help="selection method, e.g. strata, stratified, active, uniform (all "
                             "of them: 'sampleval methods')")
    add_runs_argument(parser)
    parser.add_argument("--qrels", metavar="ORACLE",
                        help="simulate the judging: qrels 'qid iter docno rel' answer for the "
                             "assessor ('-' reads standard input; a document they do not "
                             "judge counts as not relevant); without it, the documents are "
                             "listed for judging")
    parser.add_argument("-o", "--output", required=True, metavar="SAMPLE",
                        help="a new (or empty) directory to write the sample to: sample.json "
                             "and its tables (docs/guide/sample-format.md), and the documents to "
                             "judge; an existing file or a directory holding anything is "
                             "refused")
    budget = parser.add_mutually_exclusive_group(required=True)
    budget.add_argument("-n", "--budget", type=positive_int, metavar="N",
                        help="judge N documents per topic (all of a smaller pool)")
    budget.add_argument("-r", "--rate", type=rate, metavar="R",
                        help="judge a fraction R in (0, 1] of each topic's pool, rounded up")
    parser.add_argument("-M", "--depth", type=positive_int, metavar="K",
                        help="pool each run's top K documents per topic (trec_eval order), "
                             "recorded as the sample's depth, which 'estimate' then uses; "
                             "default: all they retrieved")
    parser.add_argument("-s", "--seed", type=int, metavar="S",
                        help="seed of the random draws; default: a fresh one, recorded in "
                             "sample.json")
    parser.add_argument("-p", "--param", action="append", metavar="NAME=VALUE",
                        help="a parameter of the method (see 'sampleval methods'), e.g. "
                             "strategy=2strata or k=10; repeat for several")
    parser.add_argument("-b", "--batch", type=positive_int, metavar="N",
                        help="documents per topic handed out at a time (default: as many as "
                             "the method can before it needs labels: the whole plan for "
                             "strata, uniform, stratified, depth-k and importance, a round "
                             "for active and dynamic, one for mtf and mab; more makes an "
                             "adaptive method adapt less often)")
    add_predictions(parser, "for the methods that use them (audit and audit-neyman need "
                            "them; stratified --param size=residual, importance --param "
                            "prior=predictions)")
    target = parser.add_argument_group(
        "judging until confident (docs/guide/confident.md)",
        "With --target, the budget (-n/-r) is each topic's cap; judging stops once every "
        "targeted run's interval is narrow enough. Methods that lay out stratified samples "
        "(strata, stratified, uniform) judge in committed phases: a pilot of --start per "
        "topic, then phases whose sizes are fixed before they are judged, each laid out "
        "afresh over the documents not judged yet; others follow the adaptive rule. --batch "
        "is the allocation step (default 5).")
    add_target(target, "stop when the 95%% half-width of every run's mean over topics is at "
                       "most HALF_WIDTH, e.g. AP:0.01 or AP~ht:0.02; judgments go to the "
                       "topics where they narrow the widest interval most. The budget "
                       "(-r/-n) caps each topic; a tighter cap can take more judgments in "
                       "all, since a topic it stops short of full judging is narrowed "
                       "through the others at a higher price (docs/guide/confident.md, \"A "
                       "tighter cap\")")
    target.add_argument("--ceiling", type=positive_int, metavar="N",
                        help="judge at most N documents in all (default: the budget of every "
                             "topic)")
    target.add_argument("--start", type=positive_int, default=20, metavar="N",
                        help="each topic's pilot before allocating, and the least size of "
                             "its final phase (more where the design needs more to reach every "
                             "stratum); default 20")
    target.add_argument("--stop", choices=("committed", "anytime"), default="committed",
                        help="committed (default): as above; anytime: every method follows "
                             "the adaptive rule, looks after every batch and stops at the "
                             "first look where every targeted run's anytime-valid half-width "
                             "(a confidence sequence, valid however often one looks: "
                             "docs/guide/anytime.md) is at most the target; the intervals "
                             "to report are those sequences")
    add_name_by(parser)
    add_duplicates(parser)
    methods = add_command(commands, "methods", run_methods,
                          "list the selection methods and the estimator families",
                          "List the selection methods (their design and its capabilities, "
                          "parameters and the estimator families that apply to their samples) "
                          "and the estimator families (their measures and designs).")
    methods.add_argument("--defaults", action="store_true",
                         help="print instead the default estimator of each plain measure on "
                              "each design (the table estimate, compare and simulate use; "
                              "docs/guide/defaults.md)")
    methods.add_argument("-f", "--format", choices=("table", "tsv"), default="table",
                         help="table (text; with --defaults aligned columns) or tsv: one row "
                              "per method (header 'method design', a column per capability of "
                              "the design, 'families'), or with --defaults one row per design "
                              "and measure (header 'design measure estimator')")


def run_sample(args: argparse.Namespace) -> None:
    from dataclasses import replace

    import numpy as np

    from sampleval.core.pool import Pool
    from sampleval.core.sample import check_new_directory
    from sampleval.declare import resolve
    from sampleval.io import expand_run_paths, read_qrels, read_runs
    from sampleval.io.predictions import read_predictions
    from sampleval.judging.confident import ConfidentJudging, make_judging
    from sampleval.selection import METHODS, Budget, qrels_oracle

    cls = METHODS[args.method]
    params = parse_params(args.param)
    resolve(cls.parameters, params, cls.name)  # bad parameters fail before any file is read
    cls.check_predictions(args.predictions is not None)
    target = None
    if args.target is not None:
        from sampleval.judging.confident import Target

        target = Target.parse(args.target, args.target_run)
    elif args.target_run or args.ceiling or args.stop != "committed":
        raise UsageError("--target-run, --ceiling and --stop apply only with --target")
    check_new_directory(args.output)
    predictions = [] if args.predictions is None else [args.predictions]
    check_stdin_once(*([] if args.qrels is None else [args.qrels]), args.runs, predictions)
    files = expand_run_paths(args.runs)
    if args.qrels is None:
        from sampleval.judging.loop import check_run_files

        check_run_files(files)
    oracle = None if args.qrels is None else read_qrels(args.qrels)
    # on the judgments' scale: the oracle's grades when it is given, else only >= 0
    top = None if oracle is None else max(1.0, float(oracle.frame["relevance"].max()))
    predicted = None if args.predictions is None else read_predictions(args.predictions, top)
    loaded = read_runs(files, name_by=args.name_by, progress=stderr_is_terminal(),
                       duplicates=args.duplicates)
    seed = args.seed
    if seed is None:
        seed = int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
    selector = cls(Pool.from_runs(loaded, depth=args.depth), Budget(args.budget, args.rate),
                   np.random.default_rng(seed), predictions=predicted, **params)
    if oracle is None:
        from sampleval.judging.loop import TO_JUDGE, read_to_judge, start

        judged_by: Selector | ConfidentJudging = selector
        if target is not None:
            judged_by = make_judging(selector, target, args.stop, ceiling=args.ceiling,
                                     start=args.start, batch=args.batch or 5)
        progress = start(args.output, files, judged_by, args.batch, args.name_by,
                         meta={"seed": seed}, duplicates=args.duplicates)
        listed = read_to_judge(progress.directory)
        sys.stdout.write(f"{args.method}: {_counts(listed['topic'], 'to judge')}, listed in "
                         f"{progress.directory / TO_JUDGE} (topic, docno, stratum, "
                         "inclusion); judge them in any tool, then import the labels (a qrels "
                         f"file 'topic iter docno rel') with: sampleval judge {args.output} "
                         "JUDGMENTS\n")
        return
    reached = ""
    if target is None:
        result = _simulated(selector, qrels_oracle(oracle), args.batch)
    else:
        judging = make_judging(selector, target, args.stop, ceiling=args.ceiling,
                               start=args.start, batch=args.batch or 5)
        status = judging.run(qrels_oracle(oracle))
        result = judging.sample()
        reached = (f"; target {target.measure}:{target.half_width}: {status.reason}, widest "
                   f"half-width {status.widest:.4f}")
    result = replace(result, meta={**result.meta, "seed": seed})
    result.save(args.output)
    judged = result.judged()
    relevant = int((judged["relevance"] > 0).sum())
    sys.stdout.write(f"{args.method}: {_counts(judged['query_id'], 'judged', result.topics)}"
                     f", {relevant} relevant found{reached}; sample written to "
                     f"{args.output}\n")


def _counts(topics: pd.Series, what: str, every: list[str] | None = None) -> str:
    """``T topics, N WHAT (lo-hi per topic)`` for a column of topics."""
    per_topic = topics.value_counts()
    if every is not None:
        per_topic = per_topic.reindex(every, fill_value=0)
    low, high = (per_topic.min(), per_topic.max()) if len(per_topic) else (0, 0)
    return f"{len(per_topic)} topics, {int(per_topic.sum())} {what} ({low}-{high} per topic)"


def _simulated(selector: Selector, oracle: Oracle, batch: int | None) -> Sample:
    """The sample of ``selector`` judged by ``oracle``, with a progress bar over the topics
    on a terminal."""
    from sampleval.progress import steps
    from sampleval.selection import simulate

    seen: set[str] = set()
    with steps(len(selector.pool.topics), f"{selector.name}: judging",
               stderr_is_terminal()) as step:

        def answer(topic: str, docnos: list[str]) -> dict[str, float]:
            if topic not in seen:
                seen.add(topic)
                step(f"{selector.name}: judging topic {topic}")
            return oracle(topic, docnos)

        return simulate(selector, answer, batch=batch).sample()


def run_defaults(output_format: str) -> None:
    """``sampleval methods --defaults``: the defaults table, one row per design and
    measure."""
    from sampleval.estimation.defaults import rows

    table = [("design", "measure", "estimator"), *rows()]
    if output_format == "tsv":
        sys.stdout.write("".join("\t".join(row) + "\n" for row in table))
        return
    widths = [max(len(row[i]) for row in table) for i in range(2)]
    sys.stdout.write("".join(f"{d:{widths[0]}}  {m:{widths[1]}}  {e}\n" for d, m, e in table))


def run_methods_tsv() -> None:
    """``sampleval methods -f tsv``: one row per selection method, its design, whether the
    design has each capability (``true``/``false``) and the families that accept it."""
    from sampleval.core.design import CAPABILITIES
    from sampleval.selection import METHODS

    lines = ["\t".join(("method", "design", *CAPABILITIES, "families"))]
    for name, cls in METHODS.items():
        held = cls.design.capabilities()
        lines.append("\t".join((name, cls.design.name,
                                *(str(held[c]).lower() for c in CAPABILITIES),
                                ",".join(estimator_families(cls.design)))))
    sys.stdout.write("\n".join(lines) + "\n")
def estimator_families(design: Design) -> list[str]:
    """The estimator families that accept samples of ``design``, those of the design's default
    estimators first (none for a pooled design: its judged documents are evaluated exactly).
    Here, above both, so that the selection methods need not import the estimators."""
    from sampleval.estimation.family import FAMILIES
    from sampleval.estimation.setup import accepts
    from sampleval.estimation.spec import default_families

    first = default_families(design)
    rest = [f.name for f in FAMILIES.values() if accepts(f, design)]
    return list(dict.fromkeys([*first, *rest]))


def run_methods(args: argparse.Namespace) -> None:
    if getattr(args, "defaults", False):  # a bare Namespace lists the methods
        run_defaults(getattr(args, "format", "table"))
        return
    if getattr(args, "format", "table") == "tsv":
        run_methods_tsv()
        return
    import shutil
    import textwrap

    from sampleval.declare import resolve
    from sampleval.estimation.estimates import DEFAULT_MEASURES
    from sampleval.estimation.family import FAMILIES
    from sampleval.estimation.spec import estimator_for
    from sampleval.selection import METHODS

    width = min(shutil.get_terminal_size((100, 24)).columns, 100)

    def entry(head: str, body: str = "", indent: int = 6) -> str:
        """``head: body`` wrapped to the width, continued lines indented under it."""
        text = f"{head}: {body}" if body else head
        return textwrap.fill(text, width, initial_indent=" " * indent,
                             subsequent_indent=" " * (indent + 4),
                             break_on_hyphens=False, break_long_words=False)

    def defaults(cls: type[Selector]) -> str:
        """What ``estimate`` uses on the method's samples made with its default parameters."""
        resolved = resolve(cls.parameters, {}, cls.name)
        reach = cls.draws_reach_every_document(resolved)
        simple = cls.simple_random_sample(resolved)
        chosen = [estimator_for(base, cut, cls.design, reach, simple)
                  for base, cut in DEFAULT_MEASURES]
        names = [spec.name for spec in chosen if spec is not None]
        return ", ".join(names) or "none"

    lines = ["Selection methods (sampleval sample METHOD RUN... --param NAME=VALUE)", ""]
    for name, cls in METHODS.items():
        lines.append(entry(name, cls.summary, indent=2))
        unit = "" if cls.budget_unit == "judgments" else f"; the budget counts {cls.budget_unit}"
        held = ", ".join(c for c, has in cls.design.capabilities().items() if has)
        if not cls.design.is_probability_design:
            lines.append(entry("design", f"{cls.design} (deterministic): its judgments are "
                                         "exact, evaluate them with 'sampleval evaluate SAMPLE "
                                         f"RUN...'{unit}"))
            lines.append(entry("capabilities", held))
        else:
            lines += [entry("design", cls.design + unit), entry("capabilities", held)]
            lines.append(entry("estimator families", ", ".join(estimator_families(cls.design))))
            lines.append(entry("estimated by default", defaults(cls)))
        lines += [entry(f"{p.name} ({p.type.__name__})", p.describe()) for p in cls.parameters]
        lines.append("")
    lines += [entry("Estimator families (sampleval estimate SAMPLE RUN... -m NAME, options as "
                    "NAME(OPTION=VALUE), e.g. xinfAP(variance=appendix))", indent=0), ""]
    for name, family in FAMILIES.items():
        lines += [entry(name, f"{family.title} ({family.reference})", indent=2),
                  entry("measures", ", ".join(family.measure_names())),
                  entry("designs", ", ".join(family.designs))]
        lines += [entry(f"option {line}") for line in family.option_lines()]
        lines.append("")
    sys.stdout.write("\n".join(lines))
