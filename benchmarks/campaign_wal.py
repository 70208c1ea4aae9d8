"""What a judgment writes on a SQLite store: WAL frames (pages) and bytes per judgment, by
table and index. Deterministic (counts, not timings): the same figures on a busy machine.

The campaign of ``campaign_load.py`` (its synthetic collection: 32 topics, 12 runs, pooled
to depth 100; ``--judgments`` in all), one oracle assessor per topic, judging in turn
through the service layer in this process (:func:`.simulation.judge_in_turn`: ``CampaignService.judge_and_offer``, the
API's call), one judgment at a time: each judgment is a transaction of its own, as at a low rate
(at 200 a second several share one; :mod:`sampleval.campaign.group_commit`), so these are
the most pages a judgment costs. The store runs with the server's settings but with no
checkpoint until the end, so the WAL holds every frame written; it is then read
(:mod:`sampleval.campaign.walstat`) and each frame's page mapped to its table or index.

    .venv/bin/python benchmarks/campaign_wal.py [--method strata,mtf] [--judgments 3200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from campaign_load import TOPICS, synthetic
from sampleval.campaign.organise import Design, create_campaign, parse_grades
from sampleval.campaign.simulation import judge_in_turn, oracle_assessors
from sampleval.campaign.store import Store
from sampleval.campaign.walstat import page_owners, pages_by_owner, read_wal
from sampleval.selection import Budget


def measure(directory: Path, method: str, judgments: int, seed: int
            ) -> tuple[int, int, Counter[str], int, int]:
    """Judgments made, transactions, pages by table/index, WAL bytes written and the WAL
    file's size, for a campaign of ``method`` judged in full on a fresh store."""
    runs, oracle = synthetic(seed)
    url = f"sqlite:///{directory}/{method}.db"
    store = Store(url)
    create_campaign(store, Design(method, method, Budget(max(1, judgments // TOPICS)),
                                  depth=100, seed=seed,
                                  grades=tuple(parse_grades("0,1,2"))), runs)
    tokens = [a.token for a in oracle_assessors(store, method, TOPICS)]
    store.close()  # (checkpoints and empties the WAL)
    store = Store(url, checkpoint_every=1e9)  # the server's settings, no checkpoint round
    wal = Path(f"{directory}/{method}.db-wal")
    try:
        before = len(read_wal(wal).pages)
        made = judge_in_turn(store, tokens, oracle, seed)
        written = read_wal(wal).since(before)
        owners = page_owners(f"{directory}/{method}.db")
        size = wal.stat().st_size
    finally:
        store.close()
    return (made, len(written.commits), pages_by_owner(written, owners),
            len(written.pages) * written.frame_bytes, size)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", default="strata,active,mtf,mab",
                        help="selection methods, comma-separated")
    parser.add_argument("--judgments", type=int, default=3200)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    console = Console(width=200)
    with tempfile.TemporaryDirectory() as tmp:
        for method in args.method.split(","):
            made, commits, pages, written, size = measure(Path(tmp), method, args.judgments,
                                                          args.seed)
            table = Table(title=f"WAL written per judgment: method {method}, {made} "
                                f"judgments in {commits} transactions, "
                                f"{written / made / 1024:.1f} KiB per judgment, WAL file "
                                f"{size / 2**20:.1f} MiB at the end")
            for column in ("table or index", "pages", "pages per judgment"):
                table.add_column(column, justify="left" if column[0] == "t" else "right")
            for name, count in pages.most_common():
                table.add_row(name, str(count), f"{count / made:.3f}")
            table.add_row("all", str(sum(pages.values())),
                          f"{sum(pages.values()) / made:.3f}")
            console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
