"""``AP~ht(few=assisted)``, the difference (model-assisted) estimator with a cross-fitted
completion model, against the default and ``few=posterior`` (issue 29 item 1;
docs/research/calibration.md, section 18).

    python -m studies.interval_assisted --collection cranfield --rate 0.1 [--trials 20]
        [--seed 1000] [--design stratified] [--output rows.parquet] [--rows rows.parquet]

Each trial draws one sample (:func:`studies.interval_coverage.draw`, seed SEED + trial) and
keeps, per topic and run the run retrieved for, :func:`studies.interval_parts.parts_rows`'
columns that the default's and ``few=posterior``'s intervals need (k, ``widens``, census,
f, the design-based value, V, b, U, gap, ``use``, ``few_posterior``, truth) and the assisted
estimate's: ``assisted`` (AP-hat at lam = 1 less its Taylor bias, the engine's), ``Va`` (its
linearised design variance, ``variance=linear``), ``Vaj`` and ``ba`` (its stratified
taylor-jackknife variance and remaining bias, ``variance=jackknife``, ``~ht``'s default),
``Ua`` (``few=pooled``'s unseen documents' term at the assisted value), ``Vant`` and
``Vanth`` (:func:`~sampleval.estimation.engine.unseen.anticipated_ap_variance` of the
residuals and of the labels) and ``ka``
(the predictions' expected relevant documents in the topic's frame, sum p_d).

Printed per estimate and interval (:func:`table`): the mean's bias with its Monte Carlo SE
(clustered by trial), rms, the spread over runs of each run's mean error, coverage of the
mean with its SE and width (mean half-width / (1.96 rms)); per-topic coverage and width and
per-topic coverage by k; and the error correlation of the topics within a run
(:func:`studies.interval_parts.error_correlation`'s rho).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np
import pandas as pd

from sampleval.core.pool import Pool
from sampleval.core.qrels import Qrels
from sampleval.estimation.engine.unseen import (
    SampleStrata,
    anticipated_ap_variance,
    completion_gap,
    cross_fitted_rates,
    unseen_variance,
)
from sampleval.estimation.result import (
    UNFLOORED,
    corrected,
)
from sampleval.estimation.spec import parse_estimate
from studies.interval_coverage import truth
from studies.interval_parts import (
    Rule,
    Z,
    drawn_samples,
    parser,
    read_rows,
    rules,
    summary,
    topic_columns,
)

ASSISTED = "AP~ht(few=assisted)"
ASSISTED_LINEAR = "AP~ht(few=assisted,variance=linear,interval=normal)"


def assisted_rows(pool: Pool, qrels: Qrels, design: str, rate: float, trials: int,
                  seed: int) -> pd.DataFrame:
    """Every trial's rows (module docstring)."""
    from sampleval.estimation.families.ht import PARTS

    raw = UNFLOORED[PARTS]
    spec, posterior = parse_estimate("AP~ht"), parse_estimate("AP~ht(few=posterior)")
    jack, linear = parse_estimate(ASSISTED), parse_estimate(ASSISTED_LINEAR)
    target = truth(pool, qrels, "AP")
    names = pool.run_names
    frames = []
    for trial, sample, views in drawn_samples(pool, qrels, design, rate, trials, seed):
        shared = SampleStrata(views, 1.0)
        parts = raw(names, views, sample, spec, 1.0)
        by_jack = raw(names, views, sample, jack, 1.0)
        by_linear = raw(names, views, sample, linear, 1.0)
        topics = np.array([v.pool.topic for v in views], dtype=object)
        t_idx, r_idx = np.nonzero(np.array([v.pool.present for v in views]))
        rates = cross_fitted_rates(shared)
        per_topic_values = {
            **topic_columns(views, shared),
            "ka": np.bincount(shared.frame.topic, weights=rates, minlength=len(views))}
        grid = {"value": parts.value, "V": parts.variance, "b": parts.bias,
                "U": unseen_variance(parts.value, views, 1.0, "pooled", shared),
                "gap": completion_gap(parts.value, views, 1.0, shared),
                "few_posterior": corrected(posterior, views, 1.0, parts, shared).value,
                "assisted": by_linear.value, "assisted_jack": by_jack.value,
                "Va": by_linear.variance, "Vaj": by_jack.variance, "ba": by_jack.bias,
                "Ua": unseen_variance(by_linear.value, views, 1.0, "pooled", shared),
                "Vant": anticipated_ap_variance(shared, rates),
                "Vanth": anticipated_ap_variance(shared, rates, residual=False),
                "truth": target.loc[list(topics), list(names)].to_numpy()}
        frames.append(pd.DataFrame({
            "trial": trial, "topic": topics[t_idx], "run": np.asarray(names)[r_idx],
            **{k: v[t_idx] for k, v in per_topic_values.items()},
            **{k: v[t_idx, r_idx] for k, v in grid.items()}}))
    return pd.concat(frames, ignore_index=True)


def candidates(rows: pd.DataFrame) -> dict[str, tuple[pd.DataFrame, Rule]]:
    """The estimates and intervals compared: the default (``completed``); ``few=posterior``
    as built (its value, ``pooled``'s variance); and the assisted estimate with

    * ``linear``: its linearised design variance alone (the option as built), normal;
    * ``jackknife``: the stratified taylor-jackknife's variance, widened by its remaining
      bias where k >= 2 (``~ht``'s default options on the assisted estimate);
    * ``linear+floor``: max(Va + Ua, (1 - f) m2_r) where k <= 1 (``pooled``'s floor and
      unseen term on the assisted value), Va elsewhere;
    * ``anticipated``: its design variance anticipated under the cross-fitted model
      (:func:`~sampleval.estimation.engine.unseen.anticipated_ap_variance`, ``Vant``), and
      ``max(linear, anticipated)``;

    and the design-based estimate (the default's value, no bias widening) with its own
    anticipated variance (``Vanth``, ``residual=False``: the strata's spread of the
    model's means included), with the default's upper allowance (``+ completed``), and with
    the residuals' (``Vant``) for contrast."""
    base = rules(rows)
    assisted = rows.assign(value=rows["assisted"], widens=False)
    jack = rows.assign(value=rows["assisted_jack"], b=rows["ba"])
    clipped = rows["assisted"].fillna(0.0).clip(0.0, 1.0)
    seen = rows["k"] >= 1
    m2 = (clipped**2).where(seen).groupby([rows["trial"], rows["run"]]).transform(
        "mean").fillna(0.25)
    few = ((rows["k"] <= 1) & ~rows["census"]).to_numpy()
    va, vant = rows["Va"].to_numpy(), rows["Vant"].to_numpy()
    floor = np.where(few, np.maximum(va + rows["Ua"], (1 - rows["f"]) * m2), va)
    use = rows["use"].to_numpy()
    post = rows.assign(value=rows["few_posterior"], widens=rows["widens"] & ~use)
    return {"default (completed)": (rows, base["completed"]),
            "few=posterior": (post, base["pooled"]),
            "assisted, linear": (assisted, Rule(va, None, None, Z)),
            "assisted, jackknife": (jack, Rule(rows["Vaj"].to_numpy(), None, None, Z)),
            "assisted, linear+floor": (assisted, Rule(floor, None, None, Z)),
            "assisted, anticipated": (assisted, Rule(vant, None, None, Z)),
            "assisted, max(linear, anticipated)": (assisted, Rule(np.maximum(va, vant), None,
                                                                  None, Z)),
            "design-based, anticipated": (rows.assign(widens=False), Rule(
                rows["Vanth"].to_numpy(), None, None, Z)),
            "design-based, anticipated + completed": (rows.assign(widens=False), Rule(
                rows["Vanth"].to_numpy(), base["completed"].up, None, Z)),
            "design-based, residual anticipated": (rows.assign(widens=False), Rule(
                vant, None, None, Z))}


def correlation(d: pd.DataFrame) -> float:
    """The within-run correlation of the topics' errors: (sum over (trial, run) of the squared
    summed error less the summed squared errors) over (T - 1) times the summed squared errors
    (0: independent errors, so the mean's variance is the sum of the topics')."""
    error = (d["value"] - d["truth"]).fillna(0.0)
    g = pd.DataFrame({"trial": d["trial"], "run": d["run"], "e": error,
                      "e2": error**2}).groupby(["trial", "run"])
    n = g.size()
    total, squared = g["e2"].sum(), g["e"].sum() ** 2
    return float((squared - total).sum() / max(float(((n - 1) * total).sum()), 1e-300))


def table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per :func:`candidates` entry: the mean's bias (SE clustered by trial), rms, run bias
    sd, coverage (SE) and width; per-topic coverage, width and coverage by k (3: three or
    more); the topics' error correlation within a run."""
    return pd.DataFrame([{**summary(name, d, rule), "rho": correlation(d)}
                         for name, (d, rule) in candidates(rows).items()])


def main(argv: Sequence[str] | None = None) -> int:
    rows = read_rows(parser(__doc__ or "").parse_args(argv), assisted_rows)
    print(table(rows).to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
