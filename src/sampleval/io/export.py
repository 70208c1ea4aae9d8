"""A sample's judgments in the field's file formats, for tools other than sampleval.

- ``qrels`` (trec_eval, ir_measures, pytrec_eval): every document of the sample's frame, those
  not judged with grade -1 (trec_eval's "pooled, not judged", which infAP reads);
- ``sample-qrels`` (NIST's ``sample_eval``): ``topic iter docno stratum rel`` of every frame
  document (rel -1: not sampled); only for stratified samples (and censuses), the design
  sample_eval assumes;
- ``prels`` (Million Query's ``statAP_MQ_eval``): ``qid docno rel method prob`` of the judged
  documents with their inclusion probability. Prels keep first-order probabilities only: the
  estimates read back from them are the same, but their intervals then treat inclusions as
  independent (a warning says so where the design records more).

Written through :mod:`sampleval.io`'s writers, to a new file only (gzipped when its name ends
in ``.gz``), whole or not at all.
"""

from __future__ import annotations

import warnings
from os import PathLike
from pathlib import Path

import numpy as np
import pandas as pd

from sampleval.core.sample import Sample
from sampleval.errors import UsageError

FORMATS = ("qrels", "sample-qrels", "prels")


def export(sample: Sample, path: str | PathLike[str], as_format: str = "qrels") -> int:
    """Write ``sample``'s judgments to the new file ``path`` as ``as_format`` (one of
    :data:`FORMATS`); return the number of lines written."""
    from sampleval.io import write_prels, write_qrels, write_sample_qrels

    if as_format not in FORMATS:
        raise UsageError(f"unknown export format {as_format!r} (one of {', '.join(FORMATS)})")
    target = Path(path)
    if target.exists():
        raise UsageError(f"{target}: exists; export writes a new file and overwrites nothing: "
                         "choose another name")
    if not target.parent.is_dir():
        raise UsageError(f"{target}: no such directory {target.parent}")
    tmp = target.with_name(f".tmp-{target.name}")  # keeps a .gz suffix: gzip is by name
    try:
        if as_format == "qrels":
            qrels = sample.to_qrels()
            write_qrels(qrels, tmp)
            lines = len(qrels)
        elif as_format == "sample-qrels":
            table = sample_qrels_frame(sample)
            write_sample_qrels(table, tmp)
            lines = len(table)
        else:
            table = prels_frame(sample)
            write_prels(table, tmp)
            lines = len(table)
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return lines


def sample_qrels_frame(sample: Sample) -> pd.DataFrame:
    """The frame as NIST's sampled qrels (columns as ``read_sample_qrels`` gives them)."""
    if not sample.design.has_strata:
        raise UsageError(f"a {sample.design} sample cannot be written as NIST sampled qrels, "
                         "whose design is stratified sampling; write it --as prels (inclusion "
                         "probabilities) or --as qrels")
    f = sample.frame
    stratum = f["stratum"].astype(str).str.replace(r"\s+", "_", regex=True)
    return pd.DataFrame({
        "query_id": f["query_id"].to_numpy(dtype=object), "iteration": "0",
        "doc_id": f["doc_id"].to_numpy(dtype=object),
        "stratum": np.where(stratum == "", "1", stratum).astype(object),
        "relevance": f["relevance"].fillna(-1.0).to_numpy(dtype=np.float64)})


def prels_frame(sample: Sample) -> pd.DataFrame:
    """The judged documents with their inclusion probabilities (columns as ``read_prels``
    gives them)."""
    judged = sample.judged()
    probability = judged["inclusion"].to_numpy(dtype=np.float64)
    if sample.design.is_deterministic:
        probability = np.ones(len(judged))
    bad = ~((probability > 0) & (probability <= 1))
    if bad.any():
        raise UsageError(f"{int(bad.sum())} judged documents have no inclusion probability in "
                         f"(0, 1] in this {sample.design} sample, so it cannot be written as "
                         "prels; write it --as qrels")
    if sample.design.has_joint_probabilities and not sample.design.independent_inclusions:
        warnings.warn(f"prels keep each document's inclusion probability only: estimates read "
                      f"back from them are the same, but their intervals treat inclusions as "
                      f"independent (the {sample.design} design's joint probabilities are "
                      "left out)", stacklevel=3)
    return pd.DataFrame({
        "query_id": judged["query_id"].to_numpy(dtype=object),
        "doc_id": judged["doc_id"].to_numpy(dtype=object),
        "relevance": judged["relevance"].to_numpy(dtype=np.float64),
        "method": str(sample.meta.get("method") or "sampleval"), "probability": probability})
