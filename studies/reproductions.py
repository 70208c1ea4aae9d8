"""The papers' tables from ``sampleval simulate`` output directories (``docs/research/reproductions.md``).

``python -m studies.reproductions KIND OUTDIR ...`` prints Markdown:

- ``schnabel OUT34 OUT7 --synth DIR --rankings T``: Schnabel et al. (ICTIR 2016) Tables 3, 4, 7
  and 9 on SYNTH. ``OUT34`` holds the single-system samplers, one method per system
  (``importance:q=single;run=S;prior=synth``: UBIS(u~P); ``...;prior=1``: UBIS(P);
  ``...;measure=P;cutoff=<items>;prior=1``: UBIS(1), uniform Q), each estimating its own
  system (``DCG`` with CLT intervals, ``DCG~is(interval=hoeffding)``); ``OUT7`` the pairwise
  samplers (``q=pairwise;runs=A,B``). Each system's table entry is the mean over trials of its
  own sampler's estimate, ± their standard deviation. TOP is each system's DCG@5 on the files
  in ``DIR``; DEEP (15 random rankings judged in full, b = 30,000) is exact: the mean of a
  simple random sample of 15 of the paper's 6000 rankings, with standard deviation
  s sqrt(1/15 - 1/6000), s the standard deviation of the rankings' DCGs. SINGLE (b/2 per
  system) is read two ways: each system estimated from its own sampler (the difference of
  two independent samplers' estimates at budget b, its variance doubled: with n i.i.d.
  draws per topic the variance is proportional to 1/n), or, as the paper's "from all of the
  samples" suggests, both systems estimated from both samplers' draws (the two differences
  averaged, 2b draws, variance doubled).
  DCGs are converted to the paper's discount (1/ln(r + 1) = 1/(ln 2 log2(r + 1)): times
  1/ln 2), and standard deviations and half-widths to 6000 rankings (times sqrt(T / 6000):
  topics are sampled independently with a fixed budget each, so they scale as 1/sqrt(T)).
- ``synth-truth [--rankings T] [--seed S]``: the true values of SYNTH in memory, at the
  paper's size by default: each system's U_S and TOP with the paper's discount, and DEEP's
  exact standard deviation (no sampling, so no simulation is needed).
- ``summary OUTDIR [--rate R]``: the summary.csv rows (rms, bias, variance, tau, tau_AP,
  significant-pair accuracy with min/max, R correlation, coverage) as a table.
- ``cormack OUTDIR``: Cormack et al. (SIGIR 2019): bias, RMSE, tau and tau_AP of MAP against
  the depth-100 pool truth and against the full qrels, one row per method and measure (``AP``
  and the paper's ``xinfAP`` for Dynamic Sampling), and every method's coverage (Table 1:
  relevant documents in the universe its sample was drawn from over relevant in the pool,
  per topic, from trial_topics.parquet).
- ``figures OUTDIR --to DIR [--only NAMES]``: the simulation's figures (PNG), under ``DIR``,
  reduced to a 64-colour palette (a third of the size, for the repository).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

PAPER_RANKINGS = 6000
PAPER_SYSTEMS = ("OPT", "REVERSE-75", "REVERSE-150", "SHIFT-3", "SHIFT-7")
TO_LN = 1.0 / math.log(2.0)  # the paper's DCG (1/ln(r + 1)) per unit of ours (1/log2(r + 1))
DEEP_TOPICS = 15  # ceil(30,000 / 2000) rankings judged in full
# Schnabel et al.'s standard deviations over 100 trials (Tables 3 and 4), for the figure
PAPER_SD = {"DEEP": (1.69, 1.75, 1.59, 1.69, 1.75), "UBIS(u~P)": (1.22, 1.07, 0.97, 1.10, 1.12),
            "UBIS(P)": (1.98, 1.45, 1.33, 1.67, 1.45), "UBIS(1)": (3.05, 2.64, 2.20, 2.63, 2.45)}


def _means(directory: Path) -> pd.DataFrame:
    """The mean-over-topics rows of trials.parquet."""
    return pd.read_parquet(directory / "trials.parquet", filters=[("topic", "==", "all")])


def _method_param(method: str, key: str) -> str | None:
    params = dict(p.split("=", 1) for p in method.split(":", 1)[-1].split(";") if "=" in p)
    return params.get(key)


def _kind(method: str) -> str | None:
    """UBIS(u~P), UBIS(P), UBIS(1) or PW, from an importance method's parameters."""
    q, prior = _method_param(method, "q"), _method_param(method, "prior")
    if q == "pairwise":
        return "PW"
    if q != "single":
        return None
    if _method_param(method, "measure") == "P":
        return "UBIS(1)"
    return {"synth": "UBIS(u~P)", "1": "UBIS(P)"}.get(prior or "")


def _fmt(mean: float, sd: float | None = None) -> str:
    return f"{mean:.2f}" if sd is None else f"{mean:.2f} ± {sd:.2f}"


def _markdown(frame: pd.DataFrame) -> str:
    cells = frame.astype(str)
    lines = ["| " + " | ".join(map(str, cells.columns)) + " |",
             "|" + "---|" * len(cells.columns)]
    lines += ["| " + " | ".join(row) + " |" for row in cells.itertuples(index=False)]
    return "\n".join(lines)


def _with_kind(means: pd.DataFrame) -> pd.DataFrame:
    """The rows with columns ``kind`` (:func:`_kind`), ``target`` (the sampler's system) and
    ``run`` as text."""
    return means.assign(kind=means["method"].astype(str).map(_kind),
                        target=means["method"].astype(str).map(
                            lambda s: _method_param(s, "run")),
                        run=means["run"].astype(str))


def _own_rows(means: pd.DataFrame) -> pd.DataFrame:
    """Rows where a single-system sampler estimates its own system (UBIS(1): every system)."""
    m = _with_kind(means)
    own = (m["kind"] == "UBIS(1)") | (m["target"] == m["run"])
    return m[own & m["kind"].notna() & (m["kind"] != "PW")]


def schnabel(out34: Path, out7: Path | None, synth: Path, rankings: int,
             figure: Path | None = None) -> str:
    """Tables 3, 4, 7 and 9 (see the module docstring); ``figure``: a PNG of the standard
    deviations beside the paper's."""
    from sampleval.io import read_qrels, read_runs
    from sampleval.measures.evaluation import evaluate

    scale = math.sqrt(rankings / PAPER_RANKINGS)
    everything = _means(out34)
    means = _own_rows(everything)
    point = means[means["estimator"].astype(str) == "DCG~is"]
    hoeffding = means[means["estimator"].astype(str) != "DCG~is"]
    systems = list(dict.fromkeys(point[point["kind"] == "UBIS(u~P)"]["run"]))
    truth = point.groupby("run")["truth"].first() * TO_LN
    topics = pd.read_parquet(out34 / "trials.parquet", columns=["run", "topic", "truth", "trial"],
                             filters=[("topic", "!=", "all"), ("trial", "==", 0)])
    sd_topic = topics.groupby("run", observed=True)["truth"].apply(
        lambda t: t.groupby(topics.loc[t.index, "topic"], observed=True).first().std(ddof=1))
    deep_sd = sd_topic * TO_LN * math.sqrt(1 / DEEP_TOPICS - 1 / PAPER_RANKINGS)
    runs = read_runs(sorted((synth / "runs").iterdir()))
    table = evaluate(read_qrels(synth / "qrels.txt"), runs, ["DCG"], depth=5)  # DCG@5
    top = table[table["query_id"] == "all"].set_index("run")["value"] * TO_LN

    def estimate(kind: str, system: str) -> tuple[float, float]:
        rows = point[(point["kind"] == kind) & (point["run"] == system)]["estimate"] * TO_LN
        return float(rows.mean()), float(rows.std(ddof=1)) * scale

    t3 = pd.DataFrame({"system": systems, "U_S": [_fmt(truth[s]) for s in systems],
                       "TOP": [_fmt(top[s]) for s in systems],
                       "DEEP": [_fmt(truth[s], deep_sd[s]) for s in systems],
                       "UBIS(u~P)": [_fmt(*estimate("UBIS(u~P)", s)) for s in systems]})
    t4 = pd.DataFrame({"system": systems, "U_S": [_fmt(truth[s]) for s in systems],
                       **{k: [_fmt(*estimate(k, s)) for s in systems]
                          for k in ("UBIS(u~P)", "UBIS(P)", "UBIS(1)")}})
    ubis = point[point["kind"] == "UBIS(u~P)"]
    half = (ubis["hi"] - ubis["lo"]) / 2 * TO_LN * scale
    covered = (ubis["lo"] <= ubis["truth"]) & (ubis["truth"] <= ubis["hi"])
    hrows = hoeffding[hoeffding["kind"] == "UBIS(u~P)"]
    h_half = (hrows["hi"] - hrows["lo"]) / 2 * TO_LN * scale
    trials = ubis.groupby("run")["trial"].nunique()
    t9 = pd.DataFrame({
        "system": systems,
        "UBIS(u~P)": [_fmt(*estimate("UBIS(u~P)", s)) for s in systems],
        "CLT ±": [_fmt(float(half[ubis["run"] == s].mean())) for s in systems],
        "P_cov": [f"{covered[ubis['run'] == s].mean():.2f} ({trials[s]})" for s in systems],
        "HI ± (eq. 17 as printed, 2x ours)": [
            _fmt(2 * float(h_half[hrows["run"] == s].mean())) for s in systems],
    })
    if figure is not None:
        ours = {"DEEP": [float(deep_sd[s]) for s in PAPER_SYSTEMS]}
        ours.update({k: [estimate(k, s)[1] for s in PAPER_SYSTEMS]
                     for k in ("UBIS(u~P)", "UBIS(P)", "UBIS(1)")})
        _sd_figure(ours, figure)
    parts = [f"Table 3 (DCG, the paper's discount; SDs at {PAPER_RANKINGS} rankings)",
             _markdown(t3), "", "Table 4", _markdown(t4), "", "Table 9", _markdown(t9)]
    if out7 is not None:
        parts += ["", "Table 7 (pairs of " + ", ".join(PAPER_SYSTEMS) + ")",
                  _markdown(_table7(point, _with_kind(everything), _means(out7), scale))]
    return "\n".join(parts)


def _sd_figure(ours: dict[str, list[float]], path: Path) -> None:
    """Grouped bars: each method's standard deviation per system, the paper's and ours."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ours), figsize=(11, 2.8), sharey=True)
    x = np.arange(len(PAPER_SYSTEMS))
    for ax, (kind, values) in zip(axes, ours.items(), strict=True):
        ax.bar(x - 0.2, PAPER_SD[kind], 0.4, label="paper (100 trials)", color="0.7")
        ax.bar(x + 0.2, values, 0.4, label="ours (DEEP: exact)", color="tab:blue")
        ax.set_title(kind)
        ax.set_xticks(x, [s.replace("REVERSE", "REV") for s in PAPER_SYSTEMS], rotation=45,
                      fontsize=7)
    axes[0].set_ylabel("sd of DCG estimate")
    axes[0].legend(fontsize=7)
    fig.suptitle("SYNTH, 5 judgments per ranking: standard deviation over trials (6000 rankings)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def synth_truth(rankings: int, seed: int, draw: str = "item") -> str:
    """U_S, TOP and DEEP's standard deviation of every SYNTH system (SHIFT-3, -5, -7)."""
    from sampleval.datasets.synth import make_synth

    synth = make_synth(np.random.default_rng(seed), rankings, shifts=(3, 5, 7), draw=draw)
    weights = 1.0 / np.log(np.arange(2, 7))
    rows = []
    for name, ranking in synth.systems.items():
        dcg = synth.dcg(name, discount="ln")
        top = np.take_along_axis(synth.grades, ranking[:, :5], axis=1) @ weights
        sd = float(dcg.std(ddof=1)) * math.sqrt(1 / DEEP_TOPICS - 1 / rankings)
        rows.append({"system": name, "U_S": _fmt(float(dcg.mean())),
                     "TOP": _fmt(float(top.mean())), "DEEP": _fmt(float(dcg.mean()), sd)})
    return _markdown(pd.DataFrame(rows))


def _table7(single: pd.DataFrame, every_run: pd.DataFrame, pairwise: pd.DataFrame,
            scale: float) -> pd.DataFrame:
    """TRUE, SINGLE and PW: the mean over the pairs of the mean difference, ± the mean over the
    pairs of its standard deviation over trials. SINGLE is read two ways from the UBIS(u~P)
    samplers at budget b: each system estimated from its own sampler's b/2 draws (variance
    doubled), and every draw used for both systems (the two samplers' differences averaged;
    they spend 2b draws together, so the variance is doubled to give that of b)."""
    own = single[single["kind"] == "UBIS(u~P)"].set_index(["run", "trial"])["estimate"]
    ubis = every_run[every_run["kind"] == "UBIS(u~P)"]
    shared = ubis.set_index(["target", "run", "trial"])["estimate"]
    truth = single.groupby("run")["truth"].first()
    pw = pairwise.assign(run=pairwise["run"].astype(str),
                         method=pairwise["method"].astype(str))
    rows: dict[str, list[tuple[float, float]]] = {
        "TRUE": [], "SINGLE (own half each)": [], "SINGLE (all draws for both)": [], "PW": []}
    for a, b in combinations(PAPER_SYSTEMS, 2):
        rows["TRUE"].append((truth[a] - truth[b], 0.0))
        diff = (own[a] - own[b]).dropna()
        rows["SINGLE (own half each)"].append((float(diff.mean()),
                                               float(diff.std(ddof=1)) * math.sqrt(2)))
        both = ((shared[a][a] - shared[a][b]) + (shared[b][a] - shared[b][b])).dropna() / 2
        rows["SINGLE (all draws for both)"].append((float(both.mean()),
                                                    float(both.std(ddof=1)) * math.sqrt(2)))
        cell = pw[pw["method"].map(lambda m, a=a, b=b: _method_param(m, "runs") == f"{a},{b}")]
        est = cell.pivot_table(index="trial", columns="run", values="estimate",
                               observed=True)
        d = est[a] - est[b]
        rows["PW"].append((float(d.mean()), float(d.std(ddof=1))))
    return pd.DataFrame({"": list(rows), "SYNTH": [
        _fmt(float(np.mean([m for m, _ in v])) * TO_LN,
             float(np.mean([s for _, s in v])) * TO_LN * scale)
        for v in rows.values()]})


def summary(directory: Path, rate: float | None, columns: Sequence[str]) -> str:
    table = pd.read_csv(directory / "summary.csv")
    if rate is not None:
        table = table[np.isclose(table["rate"], rate)]
    keep = [c for c in columns if c in table.columns and table[c].notna().any()]
    out = table[keep].copy()
    for c in keep:
        if out[c].dtype.kind == "f" and c not in ("rate", "budget"):
            out[c] = out[c].map(lambda x: "" if pd.isna(x) else f"{x:.4f}")
    return _markdown(out)


def cormack(directory: Path) -> str:
    """Bias, RMSE, tau, tau_AP of MAP against both truths; every method's coverage."""
    from sampleval.simulation import metaeval

    trials = pd.read_parquet(directory / "trials.parquet")
    reach = pd.read_parquet(directory / "trial_topics.parquet")
    rows = []
    for (method, _), part in trials.groupby(["method", "measure"], observed=True, sort=False):
        means = part[part["topic"] == "all"]
        row: dict[str, object] = {"method": method, "estimator": str(means["estimator"].iloc[0]),
                                  "judged": f"{means['judged'].mean():.1f}"}
        for name, column in (("pool", "truth"), ("qrels", "truth_qrels")):
            err = means["estimate"] - means[column]
            rmse = err.groupby(means["trial"]).apply(lambda e: math.sqrt((e**2).mean()))
            taus = [metaeval.kendall_tau(g["estimate"].to_numpy(), g[column].to_numpy())
                    for _, g in means.groupby("trial")]
            tau_ap = [metaeval.tau_ap(g["estimate"].to_numpy(), g[column].to_numpy())
                      for _, g in means.groupby("trial")]
            row[f"bias ({name})"] = f"{err.mean():+.4f}"
            row[f"RMSE ({name})"] = f"{rmse.mean():.4f}"
            row[f"tau ({name})"] = f"{np.mean(taus):.3f}"
            row[f"tau_AP ({name})"] = f"{np.mean(tau_ap):.3f}"
        row["coverage avg/min/max"] = _coverage(reach, str(method))
        rows.append(row)
    return _markdown(pd.DataFrame(rows).fillna(""))


def _coverage(reach: pd.DataFrame, method: str) -> str:
    """Cormack et al.'s coverage (sec. 3), the share of the relevant documents inside the
    universe the method's sample was drawn from (``relevant_reached / relevant``: Dynamic
    Sampling's batches, the judged documents of pooling), per topic and trial: the mean,
    minimum and maximum over them ("" where the universe is undefined)."""
    mine = reach[(reach["method"] == method) & (reach["relevant"] > 0)]
    share = (mine["relevant_reached"] / mine["relevant"]).dropna()
    if share.empty:
        return ""
    return f"{share.mean():.2f} / {share.min():.2f} / {share.max():.2f}"


SUMMARY_COLUMNS = ("method", "rate", "budget", "measure", "estimator", "samples", "rms", "bias",
                   "variance", "tau", "tau_ap", "sig_accuracy", "sig_accuracy_min",
                   "sig_accuracy_max", "r_corr", "coverage", "judged", "rms_left_out",
                   "bias_left_out")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies.reproductions",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="kind", required=True)
    p = sub.add_parser("schnabel", help="Schnabel et al. Tables 3, 4, 7, 9 on SYNTH")
    p.add_argument("out34", type=Path)
    p.add_argument("out7", type=Path, nargs="?")
    p.add_argument("--synth", type=Path, required=True, help="the SYNTH files simulated")
    p.add_argument("--rankings", type=int, required=True, help="rankings in those files")
    p.add_argument("--figure", type=Path, help="also draw the standard deviations (PNG)")
    p = sub.add_parser("synth-truth", help="SYNTH's U_S, TOP and DEEP, computed exactly")
    p.add_argument("--rankings", type=int, default=PAPER_RANKINGS)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--draw", default="item", help="where the Dirichlet is drawn "
                   "(datasets.synth): item, ranking or once")
    p = sub.add_parser("summary", help="summary.csv as a Markdown table")
    p.add_argument("outdir", type=Path)
    p.add_argument("--rate", type=float)
    p.add_argument("--columns", default=",".join(SUMMARY_COLUMNS))
    p = sub.add_parser("cormack", help="Cormack et al.: MAP against both truths, coverage")
    p.add_argument("outdir", type=Path)
    p = sub.add_parser("figures", help="copy a simulation's PNG figures, palette-reduced")
    p.add_argument("outdir", type=Path)
    p.add_argument("--to", type=Path, required=True)
    p.add_argument("--prefix", default="")
    p.add_argument("--only", default="", help="figure names to copy, comma-separated")
    args = parser.parse_args(argv)
    if args.kind == "schnabel":
        print(schnabel(args.out34, args.out7, args.synth, args.rankings, args.figure))
    elif args.kind == "synth-truth":
        print(synth_truth(args.rankings, args.seed, args.draw))
    elif args.kind == "summary":
        print(summary(args.outdir, args.rate, args.columns.split(",")))
    elif args.kind == "cormack":
        print(cormack(args.outdir))
    else:
        from PIL import Image

        args.to.mkdir(parents=True, exist_ok=True)
        only = set(filter(None, args.only.split(",")))
        for png in sorted((args.outdir / "figures").glob("*.png")):
            if not only or png.stem in only:
                with Image.open(png) as image:
                    image.convert("RGB").quantize(64).save(
                        args.to / f"{args.prefix}{png.name}", optimize=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
