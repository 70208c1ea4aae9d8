"""Document texts for the assessor's page, from the corpus file a campaign names.

Three formats, told by the file's first non-blank characters (plain or gzipped):

- TREC SGML: ``<DOC>`` records with ``<DOCNO>``; the title from ``<TITLE>``, ``<HEADLINE>``
  or ``<HEAD>``; the text from the ``<TEXT>`` elements, else everything else in the record;
  tags are dropped and character entities decoded;
- JSON lines: one object per line with ``id`` (or ``docno``, ``doc_id``, ``_id``), ``title``
  and ``text`` (or ``contents``, ``body``, ``abstract``);
- SMART (``.I`` id, ``.T`` title, ``.W`` text, as Cranfield's ``cran.all.1400``; numeric ids
  written without leading zeros, as the Cranfield runs write them).

Only the documents asked for are kept (a campaign needs the pooled ones). Texts are
untrusted: they are stored as plain text and always escaped when shown. A text longer than
:data:`MAX_TEXT` characters is cut there, with a note.
"""

from __future__ import annotations

import gzip
import html
import json
import re
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from os import PathLike
from pathlib import Path
from typing import IO

from sampleval.datasets.cranfield import parse_smart
from sampleval.errors import InputError

MAX_TEXT = 1_000_000
_ID_KEYS = ("id", "docno", "doc_id", "_id")
_TEXT_KEYS = ("text", "contents", "body", "abstract")
_DOCNO = re.compile(r"<DOCNO>\s*(.*?)\s*</DOCNO>", re.S | re.I)
_TITLE = re.compile(r"<(TITLE|HEADLINE|HEAD)>(.*?)</\1>", re.S | re.I)
_TEXT = re.compile(r"<TEXT>(.*?)</TEXT>", re.S | re.I)
_TAG = re.compile(r"<[^>]*>")


@dataclass(frozen=True)
class Text:
    """One document as the assessor sees it."""

    docno: str
    title: str
    text: str


def read_corpus(path: str | PathLike[str], wanted: Collection[str] | None = None
                ) -> Iterator[Text]:
    """The documents of a corpus file (see the module docstring), only those in ``wanted``
    when given. The file is read as a stream (TREC and JSON lines), so a large corpus
    needs no more memory than its wanted documents."""
    source = Path(path)
    try:
        with _open(source) as lines:
            first = next((line for line in lines if line.strip()), "").lstrip()
            stream = chain([first], lines)
            if first.startswith("<"):
                documents = _trec(source, stream)
            elif first.startswith("{"):
                documents = _jsonl(source, stream)
            elif first.startswith(".I"):
                documents = _smart(source, list(stream))
            else:
                raise InputError(source, None, "not a corpus: expected TREC <DOC> records, "
                                               "JSON lines or SMART '.I' records")
            for document in documents:
                if wanted is None or document.docno in wanted:
                    yield _capped(document)
    except OSError as exc:  # unreadable file, broken gzip data
        raise InputError(source, None, f"cannot read the corpus: {exc}") from None
    except EOFError:
        raise InputError(source, None, "cannot read the corpus: the gzip data ends early"
                         ) from None


def _open(path: Path) -> IO[str]:
    with path.open("rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    if gzipped:
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return path.open(encoding="utf-8", errors="replace")


def _capped(document: Text) -> Text:
    if len(document.text) <= MAX_TEXT:
        return document
    return Text(document.docno, document.title,
                document.text[:MAX_TEXT] + f"\n[... cut at {MAX_TEXT:,} characters]")


def _plain(markup: str) -> str:
    """Text of an SGML fragment: tags dropped, entities decoded, blank runs squeezed."""
    return re.sub(r"[ \t]+", " ", html.unescape(_TAG.sub(" ", markup))).strip()


def _trec(path: Path, lines: Iterable[str]) -> Iterator[Text]:
    record: list[str] | None = None
    opened = 0
    for number, line in enumerate(lines, start=1):
        if record is None:
            at = line.upper().find("<DOC>")
            if at < 0:
                continue
            record, opened, line = [], number, line[at + 5:]
        record.append(line)
        if "</DOC>" in line.upper():
            yield _trec_record(path, opened, "".join(record))
            record = None
    if record is not None:
        raise InputError(path, opened, "<DOC> is never closed by </DOC>")


def _trec_record(path: Path, line: int, markup: str) -> Text:
    body = markup[:markup.upper().rfind("</DOC>")]
    docno = _DOCNO.search(body)
    if docno is None:
        raise InputError(path, line, "<DOC> without <DOCNO>")
    title = _TITLE.search(body)
    texts = _TEXT.findall(body)
    rest = body[:docno.start()] + body[docno.end():]
    if title is not None and not texts:
        rest = rest.replace(title.group(0), " ")
    return Text(_plain(docno.group(1)), _plain(title.group(2)) if title else "",
                "\n\n".join(_plain(t) for t in texts) if texts else _plain(rest))


def _jsonl(path: Path, lines: Iterable[str]) -> Iterator[Text]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(path, number, f"not JSON: {exc.msg}") from None
        if not isinstance(record, dict):
            raise InputError(path, number, "expected a JSON object")
        docno = next((record[k] for k in _ID_KEYS if k in record), None)
        if docno is None:
            raise InputError(path, number, f"no document id ({', '.join(_ID_KEYS)})")
        text = next((record[k] for k in _TEXT_KEYS if k in record), "")
        yield Text(str(docno), str(record.get("title") or ""), str(text or ""))


def _smart(path: Path, lines: list[str]) -> Iterator[Text]:
    for record in parse_smart(path, [line.rstrip("\n") for line in lines], {"T", "A", "B", "W"}):
        yield Text(str(int(record["id"])), record.get("T", ""), record.get("W", ""))
