"""``sampleval estimate``: measures estimated from incomplete judgments, with intervals."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from sampleval.cli._app import (
    Output,
    add_command,
    add_depth,
    add_duplicates,
    add_name_by,
    add_output,
    add_per_topic,
    add_predictions,
    add_rel_level,
    add_runs_argument,
    bounded_float,
    check_not_a_run,
    check_predictions_used,
    check_stdin_once,
    split_names,
    stderr_is_terminal,
)
from sampleval.errors import UsageError

if TYPE_CHECKING:
    from sampleval.core.sample import Sample
    from sampleval.estimation.setup import Setup

SAMPLE_FORMATS = ("auto", "sampleval", "qrels", "sample-qrels", "prels")
SAMPLE_DEPTH_HELP = ("use only each run's top N documents per topic (default: the depth the "
                     "sample was pooled at, recorded in its sample.json, as every command "
                     "on a sample uses it; another depth warns)")
FORMATS = ("table", "tsv", "json")


def add_commands(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "estimate", run,
                         "estimate measures from incomplete judgments, with confidence "
                         "intervals",
                         "Estimate measures of the runs from a sample of judgments and the "
                         "design that chose them, with confidence intervals.\n\n"
                         "Every estimate also says how far it can be trusted: 'frame share' "
                         "is the share of the run's top documents (to the sample's depth) "
                         "inside the sample's frame (documents outside it count as not "
                         "relevant, so a low share means an estimate biased low; below "
                         "90% warns), and 'imputed' the share of the value that the "
                         "estimator's smoothing guesses rather than measures (more than "
                         "half: marked * and warned). Counts (NumRel~ht, inum_rel) are summed "
                         "over topics, as trec_eval sums NumRel; the rest are averaged. See "
                         "docs/guide/estimating.md.")
    parser.add_argument("sample", metavar="SAMPLE",
                        help="the judgments and their design: a sample directory written by "
                             "sampleval, NIST sampled qrels 'topic iter docno stratum rel', "
                             "Million Query prels 'qid docno rel method prob', or qrels 'qid "
                             "iter docno rel' whose negative rel means 'pooled, not judged' "
                             "(trec_eval's infAP input); a file may be '-' (standard input) "
                             "or a pipe")
    add_runs_argument(parser)
    parser.add_argument("-m", "--measure", action="append", metavar="MEASURE",
                        help="a plain measure (AP, P@10, nDCG@10: by the estimator the "
                             "sample's design prefers, named in the output), an estimator's "
                             "name BASE~FAMILY (AP~ht, P@10~ht, nDCG@10~is) "
                             "or an established name (xinfAP, infNDCG, iP@10, infAP, statAP), "
                             "with options in parentheses (AP~ht(bias=taylor-jackknife): "
                             "docs/guide/options.md); "
                             "'sampleval methods' lists every family and its measures; repeat "
                             "or separate with commas (default: AP, nDCG@10, P@10 and NumRel, "
                             "each by the estimator the sample's design prefers: the most "
                             "accurate one measured, and for AP on stratified samples the one "
                             "whose intervals cover best, AP~ht; 'sampleval methods' lists "
                             "them per method; docs/guide/estimating.md)")
    parser.add_argument("--ci", type=bounded_float(0.5, 0.999), default=0.95, metavar="LEVEL",
                        help="confidence level of the intervals (lo, hi)")
    add_per_topic(parser)
    add_depth(parser, SAMPLE_DEPTH_HELP)
    add_rel_level(parser)
    add_sample_format(parser)
    parser.add_argument("-f", "--format", choices=FORMATS, default="table",
                        help="table: a readable leaderboard with ± half-intervals and each "
                             "run's frame share; tsv: header 'run topic measure value lo hi "
                             "frame_share imputed coverage estimator' (lo, hi empty where no "
                             "interval applies; coverage: frame_share's old name, for one "
                             "release), the mean as topic 'all', and 'estimator', the fully "
                             "resolved name (every option at its value); json: {run: {topic: "
                             "{measure: {value, lo, hi, frame_share, imputed, coverage, "
                             "estimator}}}}")
    add_ranks(parser)
    add_output(parser)
    add_predictions(parser, "what the prediction-powered estimators (P@10~ppi, AP~ppi ...) "
                            "correct with the judged sample")
    add_name_by(parser)
    add_duplicates(parser)
    parser.add_argument("--explain", action="store_true",
                        help="print, for each measure asked, the estimator it resolves to "
                             "with every option at its value (its fully resolved name, which "
                             "the estimator column of -f tsv/json also carries) and where "
                             "each value came from (given in the name, the defaults table "
                             "for the sample's design, or the family's default; a value "
                             "given, what it means), then the "
                             "sample's design and its capabilities and the depth and frame "
                             "used; and stop (the runs are not read). Options: "
                             "docs/guide/options.md")


def add_sample_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sample-format", choices=SAMPLE_FORMATS, default="auto",
                        help="the SAMPLE's format; auto: a directory is a sampleval sample, a "
                             "file is told by its columns")


def add_ranks(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ranks", action="store_true",
                        help="add each run's rank and simultaneous rank interval (columns "
                             "rank, rank_lo, rank_hi on the 'all' rows; all runs' true ranks "
                             "lie inside together with probability --ci), from the per-topic "
                             "estimates' paired t-tests of every pair of runs (Holm's "
                             "step-down: docs/guide/audit.md, 'Rank intervals')")


def check_order(sample: str, runs: list[str], command: str = "estimate") -> None:
    """A run file given first, or a sample directory among the runs, means the arguments
    were swapped."""
    def a_sample_directory(path: str) -> bool:
        return (Path(path) / "sample.json").is_file()

    for given in runs:
        if a_sample_directory(given) and not a_sample_directory(sample):
            raise UsageError(f"{given}: a sample directory given as a run, while {sample} "
                             "is not one: the sample comes first (sampleval "
                             f"{command} SAMPLE RUN...)")
    check_not_a_run(sample, "the sample", f"sampleval {command} SAMPLE RUN...")


def depth_of(args: argparse.Namespace) -> int | str:
    """``-M N`` as given, else the sample's pool depth (:func:`setup_for`'s default)."""
    from sampleval.estimation.setup import SAMPLE_DEPTH

    return SAMPLE_DEPTH if args.depth is None else int(args.depth)


def run(args: argparse.Namespace) -> None:
    from sampleval.estimation.estimates import estimate, largest_grade
    from sampleval.estimation.ranks import RANK_COLUMNS, ranked
    from sampleval.estimation.setup import setup_for
    from sampleval.io import read_runs
    from sampleval.io.formats import (
        ESTIMATE_NUMBERS,
        ESTIMATE_TEXTS,
        print_table,
        to_json,
        to_tsv,
    )
    from sampleval.io.predictions import read_predictions
    from sampleval.io.samples import load_sample
    from sampleval.measures.evaluation import MEAN_TOPIC

    predictions = [] if args.predictions is None else [args.predictions]
    check_stdin_once(args.sample, args.runs, predictions)
    check_order(args.sample, args.runs)
    output = Output(args.output, [args.sample, *args.runs, *predictions])
    judgments = load_sample(args.sample, args.sample_format)
    setup = setup_for(judgments, split_names(args.measure) if args.measure else None,
                      depth=depth_of(args), with_predictions=args.predictions is not None,
                      warn=False)  # fails before the runs are read
    check_predictions_used(setup.specs, args.predictions is not None)
    if args.explain:
        output.write(explain(judgments, setup, named=bool(args.measure)))
        return
    predicted = (None if args.predictions is None
                 else read_predictions(args.predictions, largest_grade(judgments)))
    loaded = read_runs(args.runs, name_by=args.name_by, progress=stderr_is_terminal(),
                       duplicates=args.duplicates)
    results = estimate(judgments, loaded, setup.names,
                       depth=depth_of(args),
                       level=args.rel_level, ci=args.ci, predictions=predicted,
                       progress=stderr_is_terminal())
    numbers: tuple[str, ...] = ESTIMATE_NUMBERS
    if args.ranks:
        results, numbers = ranked(results, args.ci), (*ESTIMATE_NUMBERS, *RANK_COLUMNS)
    if not args.per_topic:
        results = results[results["query_id"] == MEAN_TOPIC]
    if args.format == "table":
        console = output.console()
        chosen = "".join(f"; {c}" for c in setup.chosen)
        print_table(results, console, title=f"Estimates ({args.ci:.0%} intervals{chosen})")
        output.write_console(console)
    elif args.format == "tsv":
        output.write(to_tsv(results, numbers, ESTIMATE_TEXTS))
    else:
        output.write(to_json(results, numbers, ESTIMATE_TEXTS))


def explain(sample: Sample, setup: Setup, named: bool = True) -> str:
    """``--explain``: per measure asked (``named``: by -m; else the default measures), its
    fully resolved estimator and where each option's value came from (a value given: its
    meaning, from the options' vocabulary); the sample's design and capabilities; the depth
    and frame used."""
    from sampleval.estimation.family import same_as_normal
    from sampleval.estimation.options import VOCABULARY
    from sampleval.estimation.setup import draws_reach_every_document, simple_random
    from sampleval.estimation.spec import TABLE, names_an_estimator, option_sources

    design = sample.design
    variant = [text for text, holds in (
        ("simple random samples", simple_random(sample)),
        ("draws that reach every document", draws_reach_every_document(sample))) if holds]
    table = f"the defaults table for {design} samples" + (
        f" ({', '.join(variant)})" if variant else "")
    meanings = {TABLE: table}
    lines = []
    for asked, spec in zip(setup.asked, setup.specs, strict=True):
        by = ("as named" if named and names_an_estimator(asked) else f"by {table}"
              + ("" if named else "; no -m: a default measure"))
        lines += [f"{asked}: {spec.full_name}", f"  estimator: {spec.name} ({by})"]
        if spec.level is not None:
            lines.append(f"  rel={spec.level}: the measure's own relevance level (-l does "
                         "not change it)")
        sources = option_sources(asked, spec)
        for name, value, source in sources:  # a value given: what it means too
            lines.append(f"  {name}={value}: {meanings.get(source, source)}")
            if source == "given" and str(value) in getattr(VOCABULARY.get(name), "values", {}):
                lines.append(f"    {VOCABULARY[name].line(str(value))}")
        if same_as_normal(spec.family, spec.base, {n: v for n, v, _ in sources}):
            lines.append(f"  interval=bias-aware: the same as interval=normal with "
                         f"bias={spec.option('bias')} (no estimate of a bias left to widen by)")
    held = [c.replace("_", " ") for c, has in design.capabilities().items() if has]
    method = sample.meta.get("method")
    lines.append(f"design: {design}" + (f" (method {method})" if method else "")
                 + f"; capabilities: {', '.join(held) or 'none'}")
    pooled = sample.meta.get("pool_depth", "not recorded")
    pooled = "whole runs" if pooled is None else f"top {pooled}" if isinstance(pooled, int) \
        else pooled
    depth = "whole ranking" if setup.depth is None else f"top {setup.depth}"
    lines.append(f"depth: each run's {depth} per topic (the sample's pool: {pooled})")
    share = "whole ranking" if setup.share_depth is None else f"top {setup.share_depth}"
    strata = ("; documents of strata without a judged document are outside it"
              if setup.strata_bound else "")
    lines.append(f"frame: frame_share measured on each run's {share}{strata}")
    return "\n".join(lines) + "\n"
