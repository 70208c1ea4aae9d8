"""``sampleval trec_eval -h``: trec_eval-style help (options, then the formats, then the
measures named with ``-m``), written for sampleval."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sampleval.measures.names import SPECS, MeasureSpec

if TYPE_CHECKING:
    from sampleval.compat.trec_eval import Options

HELP = """\
sampleval trec_eval [-h] [-q] [-m measure[.params]]... [-c] [-n] [-l num] [-N num]
    [-M num] [-J] [-D num[.qid]] [-R rel_format] [-T results_format] [-Z zscores_file]
    rel_info_file results_file

Evaluate the run in results_file against the judgments in rel_info_file and print
what trec_eval 10 prints, byte for byte. Either file may be '-' (standard input) and
may be gzipped. Options may be clustered (-qc), values attached (-mall_trec, -l2),
and long names abbreviated (--meas P.10).

 -h, --help                 this help; with -m, the named measures' descriptions too
 -v, --version              print the trec_eval version emulated, and exit
 -q, --query_eval_wanted    print each topic's values before the summary
 -m, --measure name[.params]
                            measure(s) to print; repeat for more. A name may be a
                            nickname: official (the default set), all_trec (every measure
                            of qrels and results), set (the unranked ones), all_prefs and
                            prefs (preference measures, with -R prefs or -R qrels_prefs),
                            qrels_jg (judgment-group measures, with -R qrels_jg). Text
                            after the first '.' sets the measure's parameters, comma
                            separated: cutoffs (P.5,10), recall levels
                            (iprec_at_recall..1,.5), level=gain pairs (ndcg.1=3,2=9),
                            coefficients (utility.1,-1,0,0). The first -m giving a measure
                            parameters wins.
 -c, --complete_rel_info_wanted
                            average over every topic of rel_info_file; a topic the run
                            lacks is measured on a one-document ranking of a document no
                            one judged (as trec_eval does), so most of its values are 0
 -l, --level_for_rel num    grades of at least num are relevant (default 1)
 -n, --nosummary            no summary over topics
 -N, --Number_docs_in_coll num
                            documents in the collection (utility's fourth coefficient)
 -M, --Max_retrieved_per_topic num
                            use only each topic's top num documents
 -J, --Judged_docs_only     drop the unjudged documents of each ranking first (values
                            look better than they are: use with care)
 -D, --Debug_level num[.qid]
                            with .qid, evaluate that topic only (no debugging output)
 --duplicates error|first|last
                            a document the run repeats within a topic: error (default,
                            as trec_eval: where it counts, in a topic evaluated and
                            within the -M cut), first (keep the occurrence that ranks
                            highest), last (keep the last line, as pytrec_eval does);
                            sampleval's own option
 -R, --Rel_info_format fmt  qrels (default), qrels_jg, prefs or qrels_prefs
 -T, --Results_format fmt   trec_results (the only one)
 -Z, --Zscore file          print z-scores instead: (value - mean) / stddev, with the
                            mean and stddev of each topic and measure read from file
                            (lines 'qid measure mean stddev'; -1000000 when missing)

Runs are ranked by score (in double precision), ties broken by docno in reverse
byte order (for preferences: in byte order); the rank column is ignored. A document
the qrels lack, or give a negative grade, is unjudged. Topics are those of rel_info_file,
in byte order; a topic the run lacks is skipped unless -c is given.
Errors are one line on standard error, exit code 2.
"""

RESULTS = """\
Results format trec_results: lines 'qid iter docno rank score tag'; iter and rank are
ignored; the run's name is the tag of the last line; fields after the sixth and lines
starting with '#' are ignored; a docno may appear once per topic (see --duplicates).
"""

REL_INFO = {
    "qrels": "Rel_info format qrels: lines 'qid iter docno grade'; grades are read as whole "
             "numbers;\na negative grade means 'in the pool, not judged'; iter is ignored; "
             "lines starting\nwith '#' are ignored.\n",
    "qrels_jg": "Rel_info format qrels_jg: lines 'qid group docno grade', one set of "
                "judgments per\njudgment group (user); measures are averaged over a topic's "
                "groups.\n",
    "prefs": "Rel_info format prefs: lines 'qid group subgroup docno level'. Within a "
             "subgroup, a\ndocument with a higher level is preferred to one with a lower "
             "level; the subgroups\nof a group (one user's judgments) are combined, their "
             "preferences closed\ntransitively, and must not contradict each other; level 0 "
             "means 'not relevant'.\n",
    "qrels_prefs": "Rel_info format qrels_prefs: a qrels file read as preferences: lines "
                   "'qid group\ndocno level', each group a single subgroup (see prefs).\n",
}

RULE = "-----------------------\n"


def _describe(spec: MeasureSpec) -> str:
    lines = [f"    {spec.doc[0].upper()}{spec.doc[1:]}."]
    if spec.trec_default:
        lines.append(f"    Default parameters: -m {spec.trec}.{spec.trec_default}")
    if spec.library:
        lines.append(f"    In sampleval evaluate: {spec.key}"
                     + ("@k" if spec.cutoff == "required" else ""))
    return "\n".join(lines) + "\n"


def help_text(opts: Options) -> str:
    """The help: options, formats, and the measures ``-m`` named (in trec_eval's order)."""
    parts = [HELP, RULE, RESULTS, RULE, REL_INFO.get(opts.rel_format, ""), RULE,
             "Measures requested with -m:\n"]
    marked = [s for s in SPECS if s.trec_eval and s.trec in opts.marked]
    parts += [f"{s.trec}\n{_describe(s)}" for s in marked]
    if not marked:
        parts.append("(none: add -m name or -m all_trec to see measures described)\n")
    return "".join(parts)
