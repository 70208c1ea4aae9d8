"""``sampleval plan``: from a pilot sample, the judgments a target is forecast to need."""

from __future__ import annotations

import argparse
import sys

from sampleval.cli._app import (
    add_command,
    add_depth,
    add_duplicates,
    add_name_by,
    add_rel_level,
    add_runs_argument,
    add_target,
    bounded_float,
    check_stdin_once,
    positive_int,
    stderr_is_terminal,
)
from sampleval.errors import UsageError


def add_commands(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands, "plan", run,
        "forecast from a pilot sample the judgments a target half-width needs",
        "From a pilot sample (for example 20 judgments per topic), forecast how many "
        "judgments in all (the pilot's included) every targeted run's 95% half-width of its "
        "mean over topics needs: 'fixed' for a design whose sizes are fixed in advance and "
        "estimated once with ordinary intervals, 'anytime' for judging with --stop anytime "
        "(intervals valid however often one looks). Each topic's variance is taken to fall "
        "as simple random sampling's (or active sampling's: --model); for 'fixed' the "
        "judgments go where they narrow the means most (Neyman), for 'anytime' equally to "
        "every topic, as that rule allocates them; the interval resamples the topics. A "
        "model, not a "
        "measurement: docs/guide/anytime.md says how far its forecasts were off. "
        "'committed' (a pilot laid out in strata: stratified, strata, uniform) is judging "
        "until confident's committed rule (sample --target): its own first plan after this "
        "pilot, then --campaigns campaigns simulated from it (the variance each topic's "
        "first phase reveals drawn from the pilot's topics, the shortfall plan the rule "
        "then makes); the forecast is their mean, its interval their quantiles "
        "(docs/guide/confident.md, 'How many judgments'). On such a pilot 'anytime' is "
        "--stop anytime's rule there, the anytime rule on the committed phases, simulated "
        "alike (it may stop within a phase). Each row says what its interval comes from.")
    parser.add_argument("sample", metavar="SAMPLE",
                        help="the pilot: a sample directory written by sampleval (or any "
                             "sample 'sampleval estimate' reads)")
    add_runs_argument(parser)
    add_target(parser, "the 95%% half-width of every run's mean over topics to reach, e.g. "
                       "AP:0.02 or AP~ht:0.02 (required)")
    parser.add_argument("--cap", type=positive_int, metavar="N",
                        help="judgments per topic at most (default: its pool)")
    parser.add_argument("--ci", type=bounded_float(0.5, 0.999), default=0.95, metavar="LEVEL",
                        help="confidence level of the target's intervals (default 0.95)")
    parser.add_argument("--interval", type=bounded_float(0.5, 0.99), default=0.9,
                        metavar="LEVEL", help="level of the forecast's interval (default 0.9)")
    parser.add_argument("--replicates", type=positive_int, default=200, metavar="N",
                        help="bootstrap resamples of the topics for the interval (default 200)")
    parser.add_argument("--campaigns", type=positive_int, metavar="N",
                        help="campaigns simulated for the committed and anytime rows' forecasts and "
                             "intervals (default 20: sampleval.judging.pilot_plan.CAMPAIGNS)")
    parser.add_argument("-f", "--format", choices=("table", "tsv"), default="table",
                        help="table (default): a heading line, then one tab-separated line "
                             "per rule: rule, needed, more, the interval (LO-HI) and what it "
                             "comes from; tsv: header 'rule judged needed more lo hi level "
                             "from', empty where there is no figure")
    parser.add_argument("--model", choices=("srs", "active"), default="srs",
                        help="how each topic's variance is taken to fall as judging goes "
                             "on: srs (default), as simple random sampling's, 1/n - 1/N; "
                             "active, as active sampling's with-replacement draws (its "
                             "default uniform share over the AP-prior), whose judgments are "
                             "the distinct documents drawn")
    parser.add_argument("--exponent", type=exponents, metavar="B[,B...]",
                        help="the decay exponents learnt from earlier campaigns of the same "
                             "kind, one per campaign (the widest mean's variance falling as "
                             "n^-B; sampleval.judging.planning.decay_exponent): forecast each "
                             "rule from the pilot's widest variance as n (V / V*)^(1/B) at "
                             "their median, with the --interval interval at their quantiles "
                             "(none from one exponent); without the variance model, --model "
                             "and the bootstrap")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the bootstrap (default 0)")
    add_depth(parser, "use only each run's top N documents per topic (default: the depth "
                      "the sample was pooled at)")
    add_rel_level(parser)
    add_name_by(parser)
    add_duplicates(parser)


def exponents(text: str) -> list[float]:
    """``--exponent``'s value: one or more decay exponents, comma-separated, each in
    [0.05, 20]."""
    check = bounded_float(0.05, 20.0)
    values = [check(part.strip()) for part in text.split(",") if part.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"no exponent in {text!r}: give B or B,B,...")
    return values


def run(args: argparse.Namespace) -> None:
    import numpy as np

    from sampleval.io import read_runs
    from sampleval.io.samples import load_sample
    from sampleval.judging.confident import Target
    from sampleval.judging.pilot_plan import CAMPAIGNS, committed_forecast
    from sampleval.judging.planning import forecast

    if args.target is None:
        raise UsageError("plan needs --target MEASURE:HALF_WIDTH, e.g. --target AP:0.02")
    target = Target.parse(args.target, args.target_run)
    check_stdin_once(args.sample, args.runs)
    sample = load_sample(args.sample)
    runs = read_runs(args.runs, name_by=args.name_by, progress=stderr_is_terminal(),
                     duplicates=args.duplicates)
    caps = None if args.cap is None else {t: args.cap for t in sample.topics}
    made = forecast(sample, runs, target, ci=args.ci, level=args.rel_level, depth=args.depth,
                    caps=caps, rng=np.random.default_rng(args.seed),
                    replicates=args.replicates, coverage=args.interval, model=args.model,
                    exponent=args.exponent)
    sources = [("one exponent" if len(args.exponent) == 1 else
                f"{len(args.exponent)} exponents") if args.exponent is not None
               else f"{args.replicates} topic resamples"] * len(made)
    if args.exponent is None:
        for stop in ("committed", "anytime"):  # the rules on the pilot's committed phases
            try:
                phased = committed_forecast(
                    sample, runs, target, ci=args.ci, level=args.rel_level, depth=args.depth,
                    cap=args.cap, rng=np.random.default_rng(args.seed),
                    campaigns=args.campaigns or CAMPAIGNS, coverage=args.interval, stop=stop)
            except UsageError as error:
                if stop == "committed":
                    sys.stderr.write(f"committed: no forecast: {error}\n")
                break
            source = f"{args.campaigns or CAMPAIGNS} simulated campaigns"
            if stop == "anytime":  # --stop anytime's rule on such a pilot
                row = [f.rule for f in made].index("anytime")
                made[row], sources[row] = phased, source
            else:
                made.append(phased)
                sources.append(source)
    capped = [f for f in made if f.capped]
    if capped:
        import warnings

        judgeable = max(x for f in capped for x in (f.needed, f.hi) if x is not None)
        warnings.warn(f"{', '.join(f.rule for f in capped)}: capped at the {judgeable} "
                      "judgeable documents: the decay forecast more, and judging them all "
                      "gives the exact measure", stacklevel=1)
    if args.format == "tsv":
        sys.stdout.write("rule\tjudged\tneeded\tmore\tlo\thi\tlevel\tfrom\n")
        for f, source in zip(made, sources, strict=True):
            cells = [f.rule, f.judged, f.needed,
                     None if f.needed is None else max(0, f.needed - f.judged), f.lo, f.hi,
                     f"{args.interval:g}", source]
            sys.stdout.write("\t".join("" if c is None else str(c) for c in cells) + "\n")
        return
    sys.stdout.write(f"target {target.measure}:{target.half_width:g} "
                     f"({args.ci:.0%} half-width of each run's mean); pilot "
                     f"{made[0].judged} judgments over {len(sample.topics)} topics\n")
    sys.stdout.write(f"rule\tneeded\tmore\t{args.interval:.0%} interval\tinterval from\n")
    for f, source in zip(made, sources, strict=True):
        if f.needed is None:
            sys.stdout.write(f"{f.rule}\tnot reachable within the caps\t\t\t\n")
            continue
        span = ("none (one exponent)" if f.lo is None and f.hi is None else
                f"{f.lo if f.lo is not None else '?'}-"
                f"{f.hi if f.hi is not None else 'unreachable'}")
        sys.stdout.write(f"{f.rule}\t{f.needed}\t{max(0, f.needed - f.judged)}\t{span}\t"
                         f"{source}\n")
