"""Readers for the Cranfield 1400 collection (SMART format texts and ``cranqrel``)."""

from __future__ import annotations

import re
from os import PathLike
from pathlib import Path

import pandas as pd

from sampleval.core.qrels import Qrels
from sampleval.errors import InputError

DOCUMENTS_FILE = "cran.all.1400"
QUERIES_FILE = "cran.qry"
QRELS_FILE = "cranqrel"

_MARKER = re.compile(r"^\.([A-Z])(?:\s+(.*))?$")
_FIELDS = {"T": "title", "A": "authors", "B": "source", "W": "text"}
_SOURCE_DOCUMENT = -1


def _read_lines(directory: str | PathLike[str], name: str) -> tuple[Path, list[str]]:
    """Return the path of ``directory/name`` and its lines, or raise InputError."""
    path = Path(directory) / name
    try:
        return path, path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(path, None, "file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(path, None, f"cannot read file: {error}") from None


def parse_smart(path: Path, lines: list[str], fields: set[str]) -> list[dict[str, str]]:
    """Parse ``.I id`` records whose fields are ``.X`` marker lines followed by text lines.

    The ``.W`` text runs to the next ``.I``: stray marker lines inside it (the real
    collection has a few, e.g. document 240) are dropped; the lines after them stay text.
    """
    records: list[dict[str, list[str]]] = []
    current: list[str] | None = None
    for number, line in enumerate(lines, start=1):
        marker = _MARKER.match(line.rstrip())
        if marker and marker.group(1) == "I":
            record_id = (marker.group(2) or "").strip()
            if not re.fullmatch(r"[0-9]+", record_id):
                raise InputError(path, number, f"expected '.I <number>', got {line.strip()!r}")
            records.append({"id": [record_id]})
            current = None
        elif marker and records and "W" in records[-1]:
            continue
        elif marker:
            letter = marker.group(1)
            if not records or letter not in fields or marker.group(2):
                raise InputError(path, number, f"unexpected field marker {line.strip()!r}")
            current = records[-1].setdefault(letter, [])
        elif current is not None:
            current.append(line.strip())
        elif line.strip():
            raise InputError(path, number, "text outside of a field")
    if not records:
        raise InputError(path, None, "no '.I' records found")
    return [
        {key: " ".join(" ".join(parts).split()) for key, parts in record.items()}
        for record in records
    ]


def _check_unique(path: Path, ids: pd.Series, what: str) -> None:
    repeated = ids[ids.duplicated()]
    if not repeated.empty:
        raise InputError(path, None, f"{what} {repeated.iloc[0]!r} occurs more than once")


def read_documents(directory: str | PathLike[str]) -> pd.DataFrame:
    """Read ``cran.all.1400``: columns ``doc_id, title, authors, source, text``.

    ``text`` is the ``.W`` abstract, which in Cranfield starts with the title again.
    """
    path, lines = _read_lines(directory, DOCUMENTS_FILE)
    records = parse_smart(path, lines, set(_FIELDS))
    frame = pd.DataFrame(
        {
            "doc_id": [record["id"] for record in records],
            **{
                column: [record.get(letter, "") for record in records]
                for letter, column in _FIELDS.items()
            },
        }
    )
    frame["doc_id"] = frame["doc_id"].map(lambda value: str(int(value)))
    _check_unique(path, frame["doc_id"], "document id")
    return frame


def read_queries(directory: str | PathLike[str]) -> pd.DataFrame:
    """Read ``cran.qry``: columns ``query_id, original_id, text``.

    ``query_id`` is the 1-based position in the file, the numbering ``cranqrel`` uses;
    ``original_id`` is the ``.I`` token (``"001", "002", "004", ...``, with gaps).
    """
    return queries_frame(*_read_lines(directory, QUERIES_FILE))


def queries_frame(path: Path, lines: list[str]) -> pd.DataFrame:
    """The queries of ``cran.qry``'s ``lines`` as :func:`read_queries` returns them."""
    records = parse_smart(path, lines, {"W"})
    frame = pd.DataFrame(
        {
            "query_id": [str(position) for position in range(1, len(records) + 1)],
            "original_id": [record["id"] for record in records],
            "text": [record.get("W", "") for record in records],
        }
    )
    _check_unique(path, frame["original_id"], "query id")
    return frame


def _parse_qrel(path: Path, number: int, line: str) -> tuple[str, str, int]:
    """Parse one ``query doc code`` line into ``(query_id, doc_id, code)``."""
    fields = line.split()
    if len(fields) != 3:
        raise InputError(path, number, f"expected 'query doc code', got {len(fields)} fields")
    try:
        query, doc, code = (int(field) for field in fields)
    except ValueError:
        raise InputError(path, number, f"expected three integers, got {line.strip()!r}") from None
    if query < 1 or doc < 1:
        raise InputError(path, number, "query and document numbers must be positive")
    if code != _SOURCE_DOCUMENT and not 1 <= code <= 5:
        raise InputError(path, number, f"relevance code must be 1 to 5 or -1, got {code}")
    return str(query), str(doc), code


def read_qrels(directory: str | PathLike[str]) -> Qrels:
    """Read ``cranqrel`` as :class:`Qrels` (as ``sampleval.io.read_qrels`` gives them):
    ``query_id, doc_id, relevance`` graded, higher is better.

    Cleverdon's code c (1 = complete answer ... 4 = minimum interest, 5 = no interest)
    becomes grade ``5 - c``: 4 = complete answer ... 1 = minimum interest, 0 = no interest.

    Code -1 is dropped. It occurs exactly once per query, always on the query's last
    line, and marks the query's source document: the paper whose author wrote the
    question (query 1, "similarity laws ... aeroelastic models of heated high speed
    aircraft", has -1 for document 486, "similarity laws for aerothermoelastic
    testing"). It is not an assessment, so it is neither a grade nor a judged
    non-relevant document: grade 0 would tell judged-only measures that the most
    on-topic document is not relevant. Dropped, it is simply unjudged.

    If a (query, document) pair occurs more than once, the highest grade is kept.
    Blank lines are skipped; any other malformed line raises InputError.
    """
    path, lines = _read_lines(directory, QRELS_FILE)
    rows = [_parse_qrel(path, number, line) for number, line in enumerate(lines, 1) if line.strip()]
    judged = [(query, doc, 5 - code) for query, doc, code in rows if code != _SOURCE_DOCUMENT]
    if not judged:
        raise InputError(path, None, "no relevance judgments found")
    frame = pd.DataFrame(judged, columns=["query_id", "doc_id", "relevance"])
    best = frame.groupby(["query_id", "doc_id"], sort=False)["relevance"].idxmax()
    return Qrels.from_frame(frame.loc[best.sort_values()].reset_index(drop=True),
                            source=str(path))
