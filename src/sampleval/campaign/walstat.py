"""What a SQLite store's write-ahead log holds: its frames (the page each one writes, and
whether it ends a transaction), and which table or index each page belongs to.

The WAL format (https://www.sqlite.org/fileformat.html#the_write_ahead_log): a 32-byte
header (magic, version, page size, checkpoint sequence, two salts, a checksum), then
frames, each a 24-byte header (page number; the database's size in pages after a commit,
0 for a frame that ends no transaction; the header's salts; a checksum) and one page. A
frame whose salts differ from the header's is left from before the WAL last restarted and
is not part of it. Pages map to tables and indexes through SQLite's ``dbstat`` virtual
table (as the connection reading it sees the database: the WAL's pages included).

Used to count the pages, and so the bytes, each judgment writes (``benchmarks/campaign_wal.py``,
the store's tests): deterministic figures, whatever the machine's load.
"""

from __future__ import annotations

import sqlite3
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HEADER = 32
FRAME_HEADER = 24


@dataclass(frozen=True)
class Wal:
    """The frames of a WAL: ``pages[i]`` the page frame ``i`` writes, ``commits`` the
    indexes of the frames that end a transaction."""

    page_size: int
    pages: list[int]
    commits: list[int]
    size: int
    """The file's size in bytes (frames left from before a restart included)."""

    @property
    def frame_bytes(self) -> int:
        return FRAME_HEADER + self.page_size

    def since(self, frames: int) -> Wal:
        """The frames after the first ``frames`` (those written since a moment when the WAL
        held ``frames`` frames)."""
        return Wal(self.page_size, self.pages[frames:],
                   [c - frames for c in self.commits if c >= frames], self.size)


def read_wal(path: Path | str) -> Wal:
    """The valid frames of the WAL at ``path`` (none when it is missing or empty)."""
    path = Path(path)
    data = path.read_bytes() if path.exists() else b""
    if len(data) < HEADER:
        return Wal(0, [], [], len(data))
    magic, _, page_size, _, salt1, salt2 = struct.unpack(">6I", data[:24])
    if magic not in (0x377F0682, 0x377F0683):
        raise ValueError(f"{path}: not a SQLite WAL")
    pages: list[int] = []
    commits: list[int] = []
    offset = HEADER
    while offset + FRAME_HEADER + page_size <= len(data):
        page, size, s1, s2 = struct.unpack(">4I", data[offset:offset + 16])
        if (s1, s2) != (salt1, salt2):
            break
        if size:
            commits.append(len(pages))
        pages.append(page)
        offset += FRAME_HEADER + page_size
    # frames after the last commit belong to no transaction (yet): not counted
    last = commits[-1] + 1 if commits else 0
    return Wal(page_size, pages[:last], commits, len(data))


def page_owners(database: Path | str) -> dict[int, str]:
    """Page number -> the table or index it belongs to (``dbstat``, read through the WAL)."""
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        return dict((page, name) for name, page in connection.execute(
            "SELECT name, pageno FROM dbstat"))
    finally:
        connection.close()


def pages_by_owner(wal: Wal, owners: dict[int, str]) -> Counter[str]:
    """How many of the WAL's frames write each table or index (``(other)``: a page that
    belongs to none now, such as a freed one)."""
    return Counter(owners.get(page, "(other)") for page in wal.pages)
