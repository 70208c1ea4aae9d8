"""Which golden cells moved between two sets of golden files (tests/golden/*.parquet), with
the mean half-width of the runs' intervals before and after: the before/after figures a
commit that changes numbers on purpose states.

    git show main:tests/golden/synthetic.parquet > /tmp/old/synthetic.parquet  # (and covid)
    python scripts/golden_moved.py /tmp/old tests/golden

``--respell``: the old files' measures are first read by today's names (an option renamed
since, ``AP~ht(var=linear)``, is ``AP~ht(variance=linear)``: the old spelling is read for
one release), and every cell must be in both tables; for a commit that renames options.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

KEY = ["collection", "design", "measure", "run"]


def moved(old: pd.DataFrame, new: pd.DataFrame, rtol: float = 1e-12) -> pd.DataFrame:
    """Per (collection, design, measure) present in both, where a value, lo or hi moved by
    more than ``rtol`` (relative): the largest relative change, that of the values alone,
    and the runs' mean half-width (hi - lo)/2 before and after."""
    both = old.merge(new, on=KEY, suffixes=("_old", "_new"))
    for column in ("value", "lo", "hi"):
        a, b = both[f"{column}_old"], both[f"{column}_new"]
        both[f"d_{column}"] = (a - b).abs() / np.maximum(np.abs(a), 1e-13)
    both["moved"] = both[["d_value", "d_lo", "d_hi"]].max(axis=1)
    both["half_old"] = (both["hi_old"] - both["lo_old"]) / 2
    both["half_new"] = (both["hi_new"] - both["lo_new"]) / 2
    cells = both.groupby(KEY[:-1]).agg(moved=("moved", "max"), value_moved=("d_value", "max"),
                                       half_old=("half_old", "mean"),
                                       half_new=("half_new", "mean"))
    return cells[cells["moved"] > rtol]


def respelled(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """``old`` with each measure by today's name (``parse_estimate(name).name``); a
    ValueError naming the cells that are in one table only."""
    import warnings

    from sampleval.estimation.spec import parse_estimate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        names = {m: parse_estimate(m).name for m in old["measure"].unique()}
    old = old.assign(measure=old["measure"].map(names))
    keys = [set(map(tuple, t[KEY].to_numpy().tolist())) for t in (old, new)]
    if keys[0] != keys[1]:
        raise ValueError(f"cells in one table only: old {sorted(keys[0] - keys[1])[:5]}, "
                         f"new {sorted(keys[1] - keys[0])[:5]}")
    print(f"{len(names)} measures, {sum(a != b for a, b in names.items())} respelled, "
          f"{len(old)} rows, the same cells in both")
    return old


def main() -> int:
    respell = "--respell" in sys.argv
    old_dir, new_dir = [a for a in sys.argv[1:] if a != "--respell"][:2]
    tables = []
    for name in ("synthetic", "covid"):
        old = pd.read_parquet(f"{old_dir}/{name}.parquet")
        new = pd.read_parquet(f"{new_dir}/{name}.parquet")
        tables.append(moved(respelled(old, new) if respell else old, new))
    print(pd.concat(tables).to_string(float_format=lambda x: f"{x:.4g}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
