"""Judging outside sampleval: a sample directory that a selection method fills, batch by
batch, with labels that people give in their own tool.

:func:`start` creates the directory: the method proposes its first documents, listed in
``to-judge.tsv`` (``topic docno stratum inclusion``: the stratum and the inclusion
probability each document will have in the sample, where the design fixes them then), and the
method's state (``Selector.state()``) is kept in ``selector-state.json.gz``. :func:`judge`
reads labels from a qrels file, gives those of the listed documents to the method
(``Selector.restore`` then ``observe``), and, for methods that adapt to the labels (active,
mtf, mab, dynamic), lists the next batch. Once every listed document has a label and the
method proposes nothing more (its budget is spent, or ``stop``), the directory is a complete
sample that ``sampleval estimate`` reads; until then it refuses it, so that no estimate is
made from a design half carried out. ``sample.json`` records the progress under
``judging`` (docs/guide/judging.md): the run files the pool was built from (read again at each
step, with the same ``name_by`` and ``duplicates`` rules), the batch size, how many documents await a label, and whether the sample is complete.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.core.sample import Sample, check_new_directory, read_header
from sampleval.errors import InputError, UsageError
from sampleval.judging.confident import (
    STATE_FORMAT,
    AnytimeJudging,
    ConfidentJudging,
    restore_judging,
)
from sampleval.selection import METHODS, Selector

TO_JUDGE = "to-judge.tsv"
STATE = "selector-state.json.gz"
TO_JUDGE_COLUMNS = ["topic", "docno", "stratum", "inclusion"]


@dataclass(frozen=True)
class Progress:
    """Where a judging directory stands after a step."""

    directory: Path
    pending: int
    """documents listed in ``to-judge.tsv``, awaiting a label"""
    judged: int
    """documents of the sample with a label"""
    imported: int = 0
    """labels taken from the judgments file in this step"""
    ignored: int = 0
    """judgments of documents not awaiting a label (left aside)"""
    skipped: int = 0
    """labels of listed documents outside the judgments' scale (negative: not judged yet),
    left listed; a warning names their lines"""
    complete: bool = False


def start(directory: str | PathLike[str], run_files: Sequence[str | PathLike[str]],
          selector: Selector | ConfidentJudging, batch: int | None = None,
          name_by: str = "tag", meta: dict[str, Any] | None = None,
          duplicates: str = "error") -> Progress:
    """Create the judging directory for ``selector`` (new, over a Pool of the runs read from
    ``run_files`` with ``name_by`` and ``duplicates``: :func:`sampleval.io.read_runs`) and
    list its first documents to judge, ``batch`` per topic at a time (default: the method's
    ``batch_size``). ``meta`` joins the sample's metadata (the seed, say). A
    :class:`~sampleval.judging.confident.ConfidentJudging` (its committed design) judges until
    confident: each step lists what it hands out until its phases wait for labels."""
    out = Path(directory)
    check_new_directory(out)
    check_run_files(run_files)
    judging = {"runs": [str(Path(f).resolve()) for f in run_files], "name_by": name_by,
               "duplicates": duplicates, "batch": batch, "meta": meta or {}}
    if (isinstance(selector, ConfidentJudging) and not selector.committed
            and not isinstance(selector, AnytimeJudging)):
        raise UsageError(f"{selector.selector.name}: judging until confident outside "
                         "sampleval needs a method whose phases can be committed (strata, "
                         "stratified, uniform, without predictions), or --stop anytime")
    pending = _propose(selector, set(selector.selector.pool.topics if isinstance(
        selector, ConfidentJudging) else selector.pool.topics), batch)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)
        progress = _write(tmp, selector, pending, judging, complete=pending.empty)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return replace(progress, directory=out)


def judge(directory: str | PathLike[str], judgments: Qrels,
          runs: Sequence[Run] | Sequence[str | PathLike[str]] | None = None,
          stop: bool = False, progress: bool = False) -> Progress:
    """Give the method the labels ``judgments`` holds for the listed documents; list the next
    batch (none with ``stop``: the sample then ends with what is judged, which needs every
    listed document labelled). ``runs``: the runs again (Runs, or files read with the rules
    recorded at :func:`start`), when the files recorded at :func:`start` have moved. Nothing
    is written unless the whole step succeeds.
    ``progress`` shows a bar on standard error while the recorded runs are read."""
    path = Path(directory)
    header = read_header(path)
    judging = header.get("judging")
    if not isinstance(judging, dict):
        raise UsageError(f"{path}: not started for judging outside sampleval (start with "
                         "'sampleval sample METHOD RUN... --budget N -o DIR', without "
                         "--qrels): there is nothing to import")
    if judging.get("complete"):
        raise UsageError(f"{path}: complete, every proposed document has a label; estimate "
                         f"with 'sampleval estimate {path} RUN...'")
    meta = header.get("meta", {})
    loaded = [r for r in runs if isinstance(r, Run)] if runs and all(
        isinstance(r, Run) for r in runs) else _recorded_runs(path, judging, progress, runs)
    pool = Pool.from_runs(loaded, depth=meta.get("pool_depth"))
    state = _read_state(path)
    selector: Selector | ConfidentJudging = (
        restore_judging(pool, state) if state.get("format") == STATE_FORMAT
        else METHODS[meta["method"]].restore(pool, state))
    listed = read_to_judge(path)
    labelled = _labels(listed, judgments)
    skipped = _warn_skipped(listed, judgments)
    for topic, rows in labelled.groupby("topic", sort=False):
        selector.observe(str(topic), dict(zip(rows["docno"], rows["label"], strict=True)))
    waiting = listed.merge(labelled[["topic", "docno"]], how="left", indicator=True)
    waiting = waiting[waiting["_merge"] == "left_only"][TO_JUDGE_COLUMNS]
    if stop and len(waiting):
        raise UsageError(f"{path}: {len(waiting)} listed documents still lack a label in "
                         "the judgments; stopping needs them all (the design is a whole)")
    done_topics = set(pool.topics) - set(waiting["topic"].astype(str))
    if isinstance(selector, ConfidentJudging) and len(waiting):
        done_topics = set()  # the next phases are planned from every label of these
    fresh = pd.DataFrame(columns=TO_JUDGE_COLUMNS) if stop else _propose(
        selector, done_topics, judging.get("batch"))
    pending = pd.concat([waiting, fresh], ignore_index=True) if len(fresh) else waiting
    step = _write(path, selector, pending, judging, complete=pending.empty)
    ignored = len(judgments.judged()) - len(labelled)
    return replace(step, imported=len(labelled), ignored=ignored, skipped=skipped)


def read_to_judge(directory: str | PathLike[str]) -> pd.DataFrame:
    """The documents awaiting a label (``topic docno stratum inclusion``)."""
    path = Path(directory) / TO_JUDGE
    try:
        table = pd.read_csv(path, sep="\t", dtype={"topic": str, "docno": str, "stratum": str},
                            keep_default_na=False, na_values={"inclusion": [""]})
    except FileNotFoundError:
        raise InputError(path, None, "no such file (the list of documents to judge)") from None
    except (ValueError, pd.errors.ParserError) as exc:
        raise InputError(path, None, f"cannot read the list of documents to judge: {exc}"
                         ) from None
    missing = [c for c in TO_JUDGE_COLUMNS if c not in table.columns]
    if missing:
        raise InputError(path, 1, f"header lacks the column(s) {', '.join(missing)}")
    return table[TO_JUDGE_COLUMNS]


def _propose(selector: Selector | ConfidentJudging, topics: set[str], batch: int | None
             ) -> pd.DataFrame:
    """The next documents of each of ``topics`` (in pool order), with their design; of
    judging until confident, every document it hands out before it needs labels."""
    parts = []
    if isinstance(selector, ConfidentJudging):
        while topics and (proposed := selector.next_batch()) is not None:
            topic, docnos = proposed
            strata, inclusion = selector.proposal_design(topic, docnos)
            parts.append(pd.DataFrame({"topic": topic, "docno": docnos, "stratum": strata,
                                       "inclusion": np.asarray(inclusion, dtype=np.float64)}))
        return (pd.concat(parts, ignore_index=True) if parts
                else pd.DataFrame(columns=TO_JUDGE_COLUMNS))
    for topic in selector.pool.topics:
        if topic not in topics:
            continue
        size = batch if batch is not None else selector.batch_size(topic)
        docnos = selector.propose(topic, size)
        if docnos:
            strata, inclusion = selector.proposal_design(topic, docnos)
            parts.append(pd.DataFrame({"topic": topic, "docno": docnos, "stratum": strata,
                                       "inclusion": np.asarray(inclusion, dtype=np.float64)}))
    return (pd.concat(parts, ignore_index=True) if parts
            else pd.DataFrame(columns=TO_JUDGE_COLUMNS))


def _labels(listed: pd.DataFrame, judgments: Qrels) -> pd.DataFrame:
    """The listed documents the judgments label (``topic docno label``); a negative grade
    means "not judged" (trec_eval's convention) and leaves the document listed."""
    given = judgments.judged()
    table = pd.DataFrame({"topic": given["query_id"].astype(str).to_numpy(dtype=object),
                          "docno": given["doc_id"].astype(str).to_numpy(dtype=object),
                          "label": given["relevance"].to_numpy(dtype=np.float64)})
    keys = listed[["topic", "docno"]].astype(str)
    return keys.merge(table, on=["topic", "docno"], how="inner")


def _warn_skipped(listed: pd.DataFrame, judgments: Qrels) -> int:
    """Warn, in one line naming the file and its lines, of the labels of listed documents
    that lie outside the judgments' scale (a negative grade: "not judged yet" in qrels), so
    that a loop that wrote -1 for "cannot judge" learns why the document stays listed; the
    number of them."""
    frame = judgments.frame
    keys = pd.MultiIndex.from_frame(listed[["topic", "docno"]].astype(str))
    mine = pd.MultiIndex.from_arrays([frame["query_id"].astype(str),
                                      frame["doc_id"].astype(str)]).isin(keys)
    rows = np.flatnonzero(mine & (frame["relevance"].to_numpy(dtype=np.float64) < 0))
    if not len(rows):
        return 0
    where = judgments.source or "the judgments"
    numbers = rows + 1
    what = "rows"
    if judgments.source and Path(judgments.source).is_file():
        from sampleval.io._table import data_line_numbers

        numbers, what = np.asarray(data_line_numbers(judgments.source))[rows], "lines"
    shown = ", ".join(map(str, numbers[:10].tolist())) + (
        f" and {len(rows) - 10} more" if len(rows) > 10 else "")
    labels = ", ".join(f"{v:g}" for v in sorted(set(frame["relevance"].to_numpy()[rows])))
    warnings.warn(f"{where}: {what} {shown}: label {labels} is outside the scale (a negative "
                  "grade means 'not judged yet'), so these documents stay listed; give a "
                  "grade of 0 or more", stacklevel=3)
    return len(rows)


def check_run_files(files: Sequence[str | PathLike[str]]) -> None:
    """Refuse (one UsageError) runs that cannot be read again at each :func:`judge` step:
    standard input and pipes."""
    for f in files:
        p = Path(f)
        if str(f) == "-" or (p.exists() and not p.is_file()):
            raise UsageError(f"{f}: standard input or a pipe, which 'sampleval judge' cannot "
                             "read again: judging outside sampleval needs the runs as files "
                             "(or simulate the judging with --qrels)")


def _recorded_runs(path: Path, judging: dict[str, Any], progress: bool,
                   files: Sequence[Any] | None = None) -> list[Run]:
    """The runs read again: ``files`` if given, else the files recorded at :func:`start`,
    with the recorded ``name_by`` and ``duplicates`` rules."""
    from sampleval.io import read_runs

    try:
        return read_runs(list(files) if files else judging["runs"],
                         name_by=judging.get("name_by", "tag"),
                         duplicates=judging.get("duplicates", "error"), progress=progress)
    except InputError as exc:
        if files:
            raise
        raise UsageError(f"{exc} (a run file recorded in {path / 'sample.json'}; if the runs "
                         f"moved, give them again: sampleval judge {path} JUDGMENTS RUN...)"
                         ) from None


def _read_state(path: Path) -> dict[str, Any]:
    state_path = path / STATE
    try:
        with gzip.open(state_path, "rt", encoding="utf-8") as fh:
            state: dict[str, Any] = json.load(fh)
    except FileNotFoundError:
        raise InputError(state_path, None, "no such file (the method's saved state)") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(state_path, None, f"cannot read the method's state: {exc}") from None
    return state


def _write(path: Path, selector: Selector | ConfidentJudging, pending: pd.DataFrame,
           judging: dict[str, Any], complete: bool) -> Progress:
    """Write the step: the state and the list to temporary names, renamed, then the sample
    with its header last."""
    sample: Sample = selector.sample()
    sample = replace(sample, meta={**sample.meta, **judging.get("meta", {})})
    judged = int(sample.frame["relevance"].notna().sum())
    state_tmp = path / f".{STATE}.tmp"
    with gzip.open(state_tmp, "wt", encoding="utf-8") as fh:
        json.dump(selector.state(), fh)
    list_tmp = path / f".{TO_JUDGE}.tmp"
    pending[TO_JUDGE_COLUMNS].to_csv(list_tmp, sep="\t", index=False, na_rep="",
                                     float_format="%.17g")
    state_tmp.replace(path / STATE)
    list_tmp.replace(path / TO_JUDGE)
    sample.write(path, extra={"judging": {**judging, "pending": len(pending),
                                          "complete": complete}})
    return Progress(path, len(pending), judged, complete=complete)
