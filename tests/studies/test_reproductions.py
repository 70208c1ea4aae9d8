"""The tables of docs/research/reproductions.md from simulate's files: Schnabel et al.'s Tables 3, 4, 7
and 9 on hand-made trials (conversions to the paper's discount and to 6000 rankings, DEEP's
exact standard deviation, SINGLE's doubled variance)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sampleval.datasets.synth import make_synth, write_synth
from studies import reproductions as rep

SYSTEMS = rep.PAPER_SYSTEMS


def trials_frame(methods: dict[str, dict[str, list[float]]], truth: dict[str, float],
                 topic_truth: dict[str, list[float]], hoeffding: float = 1.0) -> pd.DataFrame:
    """trials.parquet rows: for each method, run and trial, the 'all' row (estimate ± 1 for
    DCG~is, ± hoeffding for the Hoeffding estimator); per-topic truths in trial 0."""
    rows = []
    for method, estimates in methods.items():
        for run, values in estimates.items():
            for trial, value in enumerate(values):
                for estimator, half in (("DCG~is", 1.0), ("DCG~is(interval=hoeffding)",
                                                          hoeffding)):
                    rows.append({"method": method, "trial": trial, "run": run, "topic": "all",
                                 "estimator": estimator, "estimate": value,
                                 "lo": value - half, "hi": value + half, "truth": truth[run]})
            for t, value in enumerate(topic_truth[run]):
                rows.append({"method": method, "trial": 0, "run": run, "topic": str(t + 1),
                             "estimator": "DCG~is", "estimate": value, "lo": np.nan,
                             "hi": np.nan, "truth": value})
    frame = pd.DataFrame(rows)
    for column in ("method", "run", "topic", "estimator"):
        frame[column] = frame[column].astype("category")
    return frame


def test_schnabel_tables(tmp_path: Path) -> None:
    synth = write_synth(make_synth(np.random.default_rng(0), rankings=6, items=160,
                                   shifts=(3, 7)), tmp_path / "synth")
    truth = {s: 10.0 + i for i, s in enumerate(SYSTEMS)}
    topic_truth = {s: [truth[s] - 1, truth[s] + 1] for s in SYSTEMS}  # sd sqrt(2)
    # each UBIS(u~P) sampler estimates every system: its own at truth -+ 1, the others at
    # truth -+ 2 in trial 0, 1 (so a sampler's own-minus-other difference is -+ 1 around the
    # true difference)
    single = {f"importance:q=single;run={s};prior=synth": {
        r: [truth[r] - 1, truth[r] + 1] if r == s else [truth[r] - 2, truth[r] + 2]
        for r in SYSTEMS} for s in SYSTEMS}
    single["importance:q=single;run=OPT;prior=1"] = {"OPT": [9.0, 11.0, 13.0]}
    single["importance:q=single;run=OPT;measure=P;cutoff=20;prior=1"] = {
        s: [truth[s]] * 2 for s in SYSTEMS}
    out34 = tmp_path / "out34"
    out34.mkdir()
    trials_frame(single, truth, topic_truth, hoeffding=3.0).to_parquet(
        out34 / "trials.parquet")
    pairs = {f"importance:q=pairwise;runs={a},{b};prior=synth":
             {a: [truth[a], truth[a] + 2], b: [truth[b], truth[b]]}
             for i, a in enumerate(SYSTEMS) for b in SYSTEMS[i + 1:]}
    out7 = tmp_path / "out7"
    out7.mkdir()
    trials_frame(pairs, truth, topic_truth).to_parquet(out7 / "trials.parquet")

    text = rep.schnabel(out34, out7, synth, rankings=600, figure=tmp_path / "sd.png")
    assert (tmp_path / "sd.png").stat().st_size > 0
    ln, scale = 1 / math.log(2), math.sqrt(600 / 6000)
    lines = {line.split(" | ")[0].strip("| "): line for line in text.splitlines()}
    # Table 3, OPT: U_S 10/ln 2; DEEP sd sqrt(2) sqrt(1/15 - 1/6000) / ln 2; UBIS sd of
    # (9, 11) = sqrt(2), times sqrt(600/6000) / ln 2
    deep = math.sqrt(2) * math.sqrt(1 / 15 - 1 / 6000) * ln
    assert f"{10 * ln:.2f} ± {deep:.2f}" in text
    assert f"{10 * ln:.2f} ± {math.sqrt(2) * scale * ln:.2f}" in text
    # UBIS(P) of OPT: 9, 11, 13 -> mean 11, sd 2; UBIS(1): no spread
    assert f"{11 * ln:.2f} ± {2 * scale * ln:.2f}" in text
    assert f"{10 * ln:.2f} ± 0.00" in text
    # Table 9: CLT half-width 1, coverage 1.00 of 2 trials, Hoeffding 2 x 3
    assert f"| {1 * ln * scale:.2f} | 1.00 (2) | {6 * ln * scale:.2f} |" in text
    # Table 7: TRUE = mean of truth[a] - truth[b] over the 10 pairs (i < j); SINGLE (own
    # half each): (a - b) over trials is constant -> sd 0; SINGLE (all draws for both): the
    # samplers' differences are TRUE + (1, -1) and TRUE + (-1, 1): their mean is TRUE, sd 0;
    # PW: differences 0, 2 -> mean 1 + TRUE, sd sqrt(2)
    true_diff = np.mean([truth[a] - truth[b] for i, a in enumerate(SYSTEMS)
                         for b in SYSTEMS[i + 1:]])
    assert lines["TRUE"].endswith(f"{true_diff * ln:.2f} ± 0.00 |")
    assert lines["SINGLE (own half each)"].endswith(f"{true_diff * ln:.2f} ± 0.00 |")
    assert lines["SINGLE (all draws for both)"].endswith(f"{true_diff * ln:.2f} ± 0.00 |")
    assert lines["PW"].endswith(f"{(true_diff + 1) * ln:.2f} ± "
                                f"{math.sqrt(2) * scale * ln:.2f} |")


def test_method_kinds() -> None:
    assert rep._kind("importance:q=single;run=A;prior=synth") == "UBIS(u~P)"
    assert rep._kind("importance:prior=1;q=single;run=A") == "UBIS(P)"
    assert rep._kind("importance:q=single;run=A;measure=P;cutoff=9;prior=1") == "UBIS(1)"
    assert rep._kind("importance:q=pairwise;runs=A,B") == "PW"
    assert rep._kind("importance:q=sqrt") is None
    assert rep._method_param("importance:q=pairwise;runs=A,B", "runs") == "A,B"
    with pytest.raises(SystemExit):
        rep.main(["nonsense"])
