"""What a pytrec_eval user writes to evaluate run files: parse the qrels and every run (gzipped
runs through ``gzip.open``), evaluate with one ``RelevanceEvaluator``, print TSV.

    python benchmarks/pytrec_eval_evaluate.py QRELS RUN [RUN ...]

Prints ``run topic measure value`` rows (ir_measures names) for AP, P@20, nDCG@20, Rprec and
Bpref, the run named by its file (without ``.gz``); ``evaluate_vs_pytrec_eval.py`` runs it
as the peer of ``sampleval evaluate``.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import pytrec_eval

MEASURES = {"map": "AP", "P_20": "P@20", "ndcg_cut_20": "nDCG@20", "Rprec": "Rprec",
            "bpref": "Bpref"}


def main() -> None:
    qrels_path, *run_paths = sys.argv[1:]
    with open(qrels_path) as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P.20", "ndcg_cut.20", "Rprec",
                                                       "bpref"})
    out = sys.stdout
    for path in run_paths:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as fh:
            run = pytrec_eval.parse_run(fh)
        name = Path(path).name.removesuffix(".gz")
        for topic, values in evaluator.evaluate(run).items():
            for trec, measure in MEASURES.items():
                out.write(f"{name}\t{topic}\t{measure}\t{values[trec]!r}\n")


if __name__ == "__main__":
    main()
