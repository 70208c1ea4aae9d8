"""SYNTH, the synthetic data set of Schnabel, Swaminathan, Frazier & Joachims, "Unbiased
Comparative Evaluation of Ranking Functions", ICTIR 2016, sec. 3.1.

``rankings`` rankings (queries) of ``items`` items each (the paper: 6000 x 2000). Every item's
true grade u(x, y) in {0, ..., 4} is drawn from a categorical distribution whose parameters
are drawn from Dirichlet(alpha), alpha = (0.54, 0.25, 0.175, 0.03, 0.005). Where the
parameters are drawn is ``draw``:

- ``item`` (the default): one draw per item. A categorical whose parameters are Dirichlet
  distributed is, marginally, Categorical(alpha / sum(alpha)), so the grades are drawn from
  that directly (the same distribution, without 60 million gamma variates). This is the
  reading that reproduces the paper's true DCGs (Table 3) and TOP's at 6000 x 2000, while
  one draw per ranking does not (docs/research/reproductions.md, with the commands:
  ``python -m studies.reproductions synth-truth [--draw ranking]``).
- ``ranking``: one parameter vector per ranking (heterogeneous queries).
- ``once``: one parameter vector for the whole data set.

The systems (sec. 3.1): ``OPT`` sorts each ranking by true grade (ties by item number);
``REVERSE-m`` reverses OPT's top m items; ``SHIFT-m`` rotates OPT's ranking m positions to
the right, the last m items coming back at the top. The paper's systems are REVERSE-75,
REVERSE-150, SHIFT-5 and SHIFT-7 (the defaults). Its SHIFT-5 row is reproduced exactly by a
rotation of 3 (a rotation of 5 puts 5 non-relevant items on top; docs/research/reproductions.md), so
``shifts=(3, 7)`` gives the paper's numbers.

Files (:func:`write_synth`, or ``python -m sampleval.datasets.synth OUTDIR``): ``qrels.txt``
(``qid 0 docno grade`` for every item, grade 0 included, so the qrels are complete) and one
TREC run file per system, ``runs/<SYSTEM>.txt`` (``qid Q0 docno rank score tag``, score
``items - rank + 1``, so the order is unambiguous). Query ids are ``1..rankings``, docnos
``y1..y<items>`` within each query. ``sampleval simulate runs --qrels qrels.txt --depth
<items>`` reads them; DCG in sampleval discounts by 1/log2(rank + 1) (trec_eval), the paper by
1/ln(rank + 1), so the paper's DCGs are ours times 1/ln 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["SYNTH_ALPHA", "Synth", "make_synth", "write_synth"]

SYNTH_ALPHA = (0.54, 0.25, 0.175, 0.03, 0.005)
DRAWS = ("item", "ranking", "once")


@dataclass(frozen=True)
class Synth:
    """Grades and system rankings of a SYNTH data set.

    ``grades[t, j]``: the grade of item j (docno ``y{j+1}``) for ranking t (query ``t+1``);
    ``systems[name][t, r]``: the item at rank r + 1 of the system's ranking t."""

    grades: np.ndarray
    systems: dict[str, np.ndarray]

    def dcg(self, name: str, discount: str = "log2") -> np.ndarray:
        """Each ranking's DCG (gain = grade, no cutoff) under the system ``name``, discounted
        by 1/log2(r + 1) (trec_eval, ``log2``) or 1/ln(r + 1) (the paper, ``ln``)."""
        ranks = np.arange(2, self.grades.shape[1] + 2, dtype=np.float64)
        weights = 1.0 / (np.log2(ranks) if discount == "log2" else np.log(ranks))
        gains = np.take_along_axis(self.grades, self.systems[name], axis=1)
        return np.asarray(gains @ weights)


def _grades(rng: np.random.Generator, rankings: int, items: int, alpha: np.ndarray,
            draw: str) -> np.ndarray:
    """``[rankings, items]`` grades 0..len(alpha)-1 (see the module docstring for ``draw``)."""
    if draw == "item":
        p = np.broadcast_to(alpha / alpha.sum(), (rankings, len(alpha)))
    elif draw == "ranking":
        p = rng.dirichlet(alpha, size=rankings)
    else:
        p = np.broadcast_to(rng.dirichlet(alpha), (rankings, len(alpha)))
    cdf = np.cumsum(p, axis=1)
    cdf[:, -1] = 1.0
    u = rng.random((rankings, items))
    if draw != "ranking":  # one distribution for every ranking
        return np.searchsorted(cdf[0], u, side="right").astype(np.int8)
    grades = np.empty((rankings, items), dtype=np.int8)
    for t in range(rankings):  # searchsorted takes one cdf at a time
        grades[t] = np.searchsorted(cdf[t], u[t], side="right")
    return grades


def make_synth(rng: np.random.Generator, rankings: int = 6000, items: int = 2000, *,
               alpha: Sequence[float] = SYNTH_ALPHA, reverses: Sequence[int] = (75, 150),
               shifts: Sequence[int] = (5, 7), draw: str = "item") -> Synth:
    """SYNTH as in sec. 3.1 (the defaults are the paper's), drawn from ``rng``."""
    a = np.asarray(alpha, dtype=np.float64)
    if rankings < 1 or items < 1:
        raise ValueError("rankings and items must be at least 1")
    if a.ndim != 1 or len(a) < 2 or (a <= 0).any():
        raise ValueError("alpha must hold at least two positive numbers")
    if draw not in DRAWS:
        raise ValueError(f"draw must be one of {', '.join(DRAWS)}")
    if any(not 1 <= m <= items for m in reverses) or any(not 0 <= m < items for m in shifts):
        raise ValueError(f"REVERSE-m needs 1 <= m <= {items}, SHIFT-m 0 <= m < {items}")
    grades = _grades(rng, rankings, items, a, draw)
    opt = np.argsort(-grades, axis=1, kind="stable").astype(np.int32)
    systems = {"OPT": opt}
    for m in reverses:
        ranked = opt.copy()
        ranked[:, :m] = opt[:, m - 1::-1]
        systems[f"REVERSE-{m}"] = ranked
    for m in shifts:
        systems[f"SHIFT-{m}"] = np.roll(opt, m, axis=1)
    return Synth(grades, systems)


def _write_lines(path: Path, columns: Sequence[np.ndarray | str | int]) -> None:
    """Space-separated lines of equally long columns (a scalar repeats)."""
    import pandas as pd

    pd.DataFrame(dict(enumerate(columns))).to_csv(path, sep=" ", header=False, index=False)


def write_synth(synth: Synth, directory: str | Path) -> Path:
    """Write ``qrels.txt`` and ``runs/<SYSTEM>.txt`` under ``directory`` (created); returns it."""
    root = Path(directory)
    (root / "runs").mkdir(parents=True, exist_ok=True)
    rankings, items = synth.grades.shape
    qid = np.repeat(np.arange(1, rankings + 1), items)
    docnos = np.array([f"y{j}" for j in range(1, items + 1)], dtype=object)
    _write_lines(root / "qrels.txt",
                 [qid, 0, docnos[np.tile(np.arange(items), rankings)], synth.grades.ravel()])
    rank = np.tile(np.arange(1, items + 1), rankings)
    for name, ranking in synth.systems.items():
        _write_lines(root / "runs" / f"{name}.txt",
                     [qid, "Q0", docnos[ranking.ravel()], rank, items - rank + 1, name])
    return root


def _int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sampleval.datasets.synth",
        description="Write Schnabel et al.'s SYNTH data set (ICTIR 2016, sec. 3.1) as TREC "
                    "qrels (OUTDIR/qrels.txt) and runs (OUTDIR/runs/<SYSTEM>.txt).")
    parser.add_argument("outdir", help="directory to write (created)")
    parser.add_argument("--rankings", type=int, default=6000,
                        help="rankings (queries); the paper: 6000")
    parser.add_argument("--items", type=int, default=2000,
                        help="items per ranking; the paper: 2000")
    parser.add_argument("--reverses", type=_int_list, default=[75, 150], metavar="M1,M2",
                        help="REVERSE-m systems (default 75,150)")
    parser.add_argument("--shifts", type=_int_list, default=[5, 7], metavar="M1,M2",
                        help="SHIFT-m systems (default 5,7; 3,7 reproduces the paper's "
                             "SHIFT-5 row)")
    parser.add_argument("--draw", choices=DRAWS, default="item",
                        help="where the categorical's Dirichlet parameters are drawn: per "
                             "item (default, the paper's numbers), per ranking, or once")
    parser.add_argument("--seed", type=int, default=0, help="seed of the numpy Generator")
    args = parser.parse_args(argv)
    try:
        synth = make_synth(np.random.default_rng(args.seed), args.rankings, args.items,
                           reverses=args.reverses, shifts=args.shifts, draw=args.draw)
    except ValueError as error:
        parser.error(str(error))
    root = write_synth(synth, args.outdir)
    print(f"wrote {root / 'qrels.txt'} and {len(synth.systems)} runs under {root / 'runs'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
